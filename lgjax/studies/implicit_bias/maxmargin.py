"""maxmargin: does training converge in direction to the attention-SVM selector?

docs/studies/implicit-bias.md (the max-margin view) and the controls issue. For a fixed sample of
training sequences (K = 2, lengths [8, 16]) the hard-margin selector W_mm is solved in the dual
(FISTA, selector.py) in the feature space the head sees at that checkpoint: APE z = E[s] + p_t
(W = wq wk^T), RoPE the lifted (A_i, B_i) with the trained embedding E[s] as x. Reported per
analysed checkpoint: cos(trained, W_mm), the solver's min margin, duality gap and KKT residual.
Then runs with weight decay on wq and wk (lambda decreasing towards 0): final cos(trained, W_mm).
Command: lgjax maxmargin        (~15 min here: each dual solve is a few seconds per seed)
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from lgjax import keys, rope_scaling, tasks
from lgjax.config import ConfigError, ModelConfig, RunConfig, TaskConfig
from lgjax.encodings import ENCODINGS, rope_freqs64
from lgjax.harness import study
from lgjax.harness.ranges import option
from lgjax.harness.study import RunOptions, Study
from lgjax.runs import open_run
from lgjax.studies.implicit_bias import analysis, common
from lgjax.studies.implicit_bias import figures as plots
from lgjax.studies.implicit_bias import selector as maxmargin

SCALE = ("n_seqs",)


@dataclass(frozen=True)
class Config:
    encodings: tuple[str, ...] = ("rope", "ape")  # one run each
    K: int = 2  # target offset
    n_seqs: int = option(256, ge=1)  # fixed sample of training sequences defining the constraints
    analyze_steps: tuple[int, ...] = (0, 64, 250, 1000, 4000)  # checkpoints compared with W_mm
    decays: tuple[float, ...] = option(
        (1e-2, 1e-3, 1e-4), gt=0)  # weight decay on wq, wk for the limit runs
    iters: int = option(
        3000, ge=1)  # most FISTA steps per dual solve, before the exact active-set rounds
    run: RunOptions = RunOptions(seeds=5)  # shared options


def run_config(cfg: Config, encoding: str, decay: float = 0.0) -> RunConfig:
    return study.run_config(cfg, TaskConfig.of("fixed_offset", offset=cfg.K), ModelConfig(encoding),
                             weight_decay=decay, decay_params=("wq", "wk"))


def runs(cfg: Config) -> dict[str, RunConfig]:
    out = {}
    for enc in cfg.encodings:
        out[f"maxmargin/{enc}"] = run_config(cfg, enc)
        out |= {f"maxmargin/{enc}-wd{lam:g}": run_config(cfg, enc, lam) for lam in cfg.decays}
    return out


# rotary encodings whose rotation is a fixed angle per position and pair, the lifted feature
# space the rotary selector is solved in: name -> its frequencies theta_i (float64). YaRN's
# attention factor scales every logit by one constant, which leaves the selector's direction
# (and the cosine) unchanged. xPos (a scale per position) and dynamic NTK (frequencies by
# length) leave that space, and a bias encoding's learned bias has no place in either.
ROTARY_FREQS = {"rope": rope_freqs64, "rope_linear": rope_scaling.linear_freqs64,
                "rope_ntk": rope_scaling.ntk_freqs64, "rope_yarn": rope_scaling.yarn_freqs64,
                "rope_llama3": rope_scaling.llama3_freqs64}


def rotary_freqs(m: ModelConfig) -> np.ndarray:
    """theta_i of a rotary model in float32 (the values its training rotation used)."""
    return ROTARY_FREQS[m.encoding](m).astype(np.float32)


def check(cfg: Config) -> None:
    for name in cfg.encodings:
        kind = ENCODINGS[name].kind if name in ENCODINGS else None
        if kind == "bias" or (kind == "rotary" and name not in ROTARY_FREQS):
            raise ConfigError(
                f"--encodings: {name} has no max-margin selector here (the selector is solved "
                "for an additive embedding or a fixed rotation per position: "
                f"{', '.join(ROTARY_FREQS)}, ape, sinusoidal, nope); drop it")
    bad = [s for s in cfg.analyze_steps if not 0 <= s <= cfg.run.steps]
    if bad:
        raise ConfigError(f"--analyze-steps: {bad} outside 0..{cfg.run.steps} (--steps); "
                          "pick checkpoint steps inside the run")


def active_constraints(batch: tasks.Batch, K: int) -> np.ndarray:
    """Indices (static) of the real constraints: keys t <= n other than the target."""
    lengths = np.asarray(batch.length)[:, None]
    t = np.arange(batch.tokens.shape[1])[None, :]
    return np.flatnonzero((t <= lengths - 1) & (t != lengths - 1 - K))


def compare(params, rc: RunConfig, batch: tasks.Batch, iters: int) -> dict:
    """One seed: solve the selector in this checkpoint's feature space and compare."""
    enc, m = ENCODINGS[rc.model.encoding], rc.model
    L = batch.tokens.shape[1]

    def features(tokens, length):
        x = params["embed"][tokens]
        return x + enc.embed(params, jnp.arange(L), length, m)

    c = maxmargin.constraints(features, batch.tokens, batch.length, rc.task.opts.offset)
    keep = active_constraints(batch, rc.task.opts.offset)  # drop padding rows: G shrinks to ~half
    c = maxmargin.Constraints(*(x[keep] for x in c))
    if enc.kind == "rotary":  # the selector lives in the lifted rotary feature space
        freqs = jnp.asarray(rotary_freqs(m), params["embed"].dtype)
        sol = maxmargin.solve(maxmargin.gram_rotary(c, freqs, L), c.valid_A, iters)
        selector = maxmargin.selector_rotary(c, sol.alpha_A, freqs)
        trained = maxmargin.trained_rotary(params, m.d)
    else:
        sol = maxmargin.solve(maxmargin.gram_additive(c), c.valid_A, iters)
        selector = maxmargin.selector_additive(c, sol.alpha_A)
        trained = params["wq"] @ params["wk"].T
    return {"cos": analysis.cosine(trained, selector), "min_margin": sol.min_margin,
            "duality_gap": sol.duality_gap, "kkt_residual": sol.kkt_residual,
            "solver_steps": sol.steps, "solver_rounds": sol.rounds}


def make_compare_seeds(rc: RunConfig, batch, iters: int):
    """One compiled solve-and-compare over seeds, reused for every checkpoint of a run and
    for its weight-decay siblings (they differ only in training, not in what is compared).
    The rotary dual is solved in float64: in float32 it stalls at a KKT residual of 1.2-2.8e-4
    after 3000 steps, in float64 it reaches 1e-4 in ~1500. The additive one reaches it in
    float32 in < 1000 steps (every dual in float64 measured 258 s of measuring vs 221 s)."""
    fn = jax.jit(lambda ps: jax.lax.map(lambda p: compare(p, rc, batch, iters), ps))
    x64 = ENCODINGS[rc.model.encoding].kind == "rotary"

    def compare_seeds(params_S):
        with jax.enable_x64(x64):
            if x64:
                params_S = jax.tree.map(lambda x: jnp.asarray(x, jnp.float64), params_S)
            return {k: np.asarray(v) for k, v in fn(params_S).items()}

    return compare_seeds


def measure(cfg: Config, trained: dict) -> dict:
    rc0 = run_config(cfg, cfg.encodings[0])
    batch = tasks.sample_batch(rc0.task, keys.probe(), cfg.n_seqs, rc0.train.lmin,
                               rc0.train.lmax, rc0.train.lmax)
    res = {"solver": f"FISTA with restart, then active-set rounds, on the dual, to min margin >= "
                     f"{1 - maxmargin.MARGIN_TOL:g} and KKT <= {maxmargin.KKT_TOL:g} or "
                     f"{cfg.iters} steps", "encodings": list(cfg.encodings),
           "seeds": cfg.run.seeds}
    for enc in cfg.encodings:
        t = trained[f"maxmargin/{enc}"]
        compare_seeds = make_compare_seeds(t.config, batch, cfg.iters)
        run = open_run(t.run_dir)
        traj = {step: compare_seeds(run.restore(step).params) for step in cfg.analyze_steps}
        run.close()
        decayed = {f"{lam:g}": compare_seeds(trained[f"maxmargin/{enc}-wd{lam:g}"].states.params)
                   for lam in cfg.decays}
        res[enc] = {"trajectory": traj, "weight_decay": decayed}
    return res


figure = plots.maxmargin_figure  # (result, stem): drawn from the results alone


def table(res: dict) -> str:
    lines = [f"cos(trained, W_mm) mean+-std over {res['seeds']} seeds; solver: min margin (>= 1 "
             "when solved), max |duality gap|, max KKT residual"]
    for enc in res["encodings"]:
        rows = [(f"step {s}", r) for s, r in res[enc]["trajectory"].items()]
        rows += [(f"wd {lam}", r) for lam, r in res[enc]["weight_decay"].items()]
        for label, r in rows:
            lines.append(f"{enc:5s} {label:>10s}  cos {common.mean_sd(r['cos']):>13s}  "
                         f"min margin {np.min(r['min_margin']):.3f}  "
                         f"gap {np.max(np.abs(r['duality_gap'])):.2e}  "
                         f"KKT {np.max(r['kkt_residual']):.2e}  "
                         f"steps <= {np.max(r['solver_steps'])} + "
                         f"{np.max(r['solver_rounds'])} active-set rounds")
    return "\n".join(lines)


STUDY = Study(__name__, Config, runs, measure, table, check=check, figure=figure, scale=SCALE)
