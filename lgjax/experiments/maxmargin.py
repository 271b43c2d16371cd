"""maxmargin: does training converge in direction to the attention-SVM selector?

Spec: implicit-bias.md (the max-margin view) and the controls issue. For a fixed sample of
training sequences (K = 2, lengths [8, 16]) the hard-margin selector W_mm is solved in the dual
(FISTA, lgjax.maxmargin) in the feature space the head sees at that checkpoint: APE z = E[s] + p_t
(W = wq wk^T), RoPE the lifted (A_i, B_i) with the trained embedding E[s] as x. Reported per
analysed checkpoint: cos(trained, W_mm), the solver's min margin, duality gap and KKT residual.
Then runs with weight decay on wq and wk (lambda decreasing towards 0): final cos(trained, W_mm).
Command: lgjax maxmargin        (~15 min here: each dual solve is a few seconds per seed)
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from lgjax import checkpoints, keys, maxmargin, tasks
from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig
from lgjax.encodings import ENCODINGS, rope_freqs
from lgjax.experiments import common


@dataclass(frozen=True)
class MaxMarginConfig:
    encodings: tuple[str, ...] = ("rope", "ape")  # one run each
    K: int = 2  # target offset
    seeds: int = 5  # seeds 0..seeds-1
    steps: int = 4000  # Adam steps
    batch: int = 256  # sequences per step
    n_seqs: int = 256  # fixed sample of training sequences defining the constraints
    analyze_steps: tuple[int, ...] = (0, 64, 250, 1000, 4000)  # checkpoints compared with W_mm
    decays: tuple[float, ...] = (1e-2, 1e-3, 1e-4)  # weight decay on wq, wk for the limit runs
    iters: int = 3000  # FISTA iterations per dual solve
    out: str = "results/maxmargin"  # results.json
    ckpt_root: str = "checkpoints"  # runs in <ckpt_root>/maxmargin/...
    resume: bool = False  # continue (or reload finished) runs
    progress: bool = True  # progress bars

    def run_config(self, encoding: str, decay: float = 0.0) -> RunConfig:
        return RunConfig(TaskConfig("fixed_offset", offset=self.K), ModelConfig(encoding),
                         TrainConfig(steps=self.steps, batch=self.batch, weight_decay=decay,
                                     decay_params=("wq", "wk"), seeds=tuple(range(self.seeds))))


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
        return x + enc.table(params, jnp.arange(L), length, m) if enc.table is not None else x

    c = maxmargin.constraints(features, batch.tokens, batch.length, rc.task.offset)
    keep = active_constraints(batch, rc.task.offset)  # drop padding rows: G shrinks to ~half
    c = maxmargin.Constraints(*(x[keep] for x in c))
    if enc.freqs is not None:
        freqs = jnp.asarray(rope_freqs(m))
        sol = maxmargin.solve(maxmargin.gram_rotary(c, freqs, L), c.valid_A, iters)
        selector = maxmargin.selector_rotary(c, sol.alpha_A, freqs)
        trained = maxmargin.trained_rotary(params, m.d)
    else:
        sol = maxmargin.solve(maxmargin.gram_additive(c), c.valid_A, iters)
        selector = maxmargin.selector_additive(c, sol.alpha_A)
        trained = params["wq"] @ params["wk"].T
    return {"cos": maxmargin.cosine(trained, selector), "min_margin": sol.min_margin,
            "duality_gap": sol.duality_gap, "kkt_residual": sol.kkt_residual}


def compare_seeds(params_S, rc: RunConfig, batch, iters: int) -> dict:
    fn = jax.jit(lambda ps: jax.lax.map(lambda p: compare(p, rc, batch, iters), ps))
    return {k: np.asarray(v) for k, v in fn(params_S).items()}


def run(cfg: MaxMarginConfig) -> dict:
    configs = [cfg.run_config(e, lam) for e in cfg.encodings for lam in (0.0, *cfg.decays)]
    common.check_all(configs, ())
    t0 = time.perf_counter()
    root = Path(cfg.ckpt_root) / "maxmargin"
    rc0 = cfg.run_config(cfg.encodings[0])
    batch = tasks.sample_batch(rc0.task, keys.probe(), cfg.n_seqs, rc0.train.lmin,
                               rc0.train.lmax, rc0.train.lmax)
    res = {"experiment": "maxmargin", "config": asdict(cfg),
           "reduced": common.is_reduced(cfg, n_seqs=256), "solver": "FISTA on the dual"}
    for enc in cfg.encodings:
        rc = cfg.run_config(enc)
        run_dir = root / enc
        common.train(rc, run_dir, resume=cfg.resume, progress=cfg.progress, label=enc)
        _, run = checkpoints.open_run(run_dir)
        traj = {}
        for step in cfg.analyze_steps:
            traj[step] = compare_seeds(run.restore(step).params, rc, batch, cfg.iters)
        run.close()
        decayed = {}
        for lam in cfg.decays:
            rcd = cfg.run_config(enc, lam)
            states, _ = common.train(rcd, root / f"{enc}-wd{lam:g}", resume=cfg.resume,
                                     progress=cfg.progress, label=f"{enc} wd={lam:g}")
            decayed[f"{lam:g}"] = compare_seeds(states.params, rcd, batch, cfg.iters)
        res[enc] = {"trajectory": traj, "weight_decay": decayed}
    res["wall_seconds"] = time.perf_counter() - t0
    common.write_json(res, Path(cfg.out))
    print(table(res, cfg))
    return res


def table(res: dict, cfg: MaxMarginConfig) -> str:
    lines = [f"cos(trained, W_mm) mean+-std over {cfg.seeds} seeds; solver: min margin (>= 1 "
             "when solved), max |duality gap|, max KKT residual"]
    for enc in cfg.encodings:
        rows = [(f"step {s}", r) for s, r in res[enc]["trajectory"].items()]
        rows += [(f"wd {lam}", r) for lam, r in res[enc]["weight_decay"].items()]
        for label, r in rows:
            lines.append(f"{enc:5s} {label:>10s}  cos {common.mean_sd(r['cos']):>13s}  "
                         f"min margin {np.min(r['min_margin']):.3f}  "
                         f"gap {np.max(np.abs(r['duality_gap'])):.2e}  "
                         f"KKT {np.max(r['kkt_residual']):.2e}")
    return "\n".join(lines)
