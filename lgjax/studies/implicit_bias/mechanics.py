"""mechanics: margin bound, dynamics of the carrier, APE pinning vs weight decay, sweeps.

docs/studies/implicit-bias.md, experiment `mechanics`.
 (a) RoPE, K = 2, 5 seeds: bound 1/(1+(L-1)e^{-mu}) from the measured margin vs the observed
     mean attention at -K, by length;
 (b) carrier fraction and top-1 SV energy over training, read from (a)'s checkpoints;
 (c) APE with weight decay lambda in {0, 1e-4, 1e-2} on the table, 3 seeds: out-of-range
     accuracy, pin location, in-range vs out-of-range row norms, and the inference-time fixes
     (interpolation, clamp-to-last, index rescaling);
 (d) one-seed sweeps of d, m, training range and tau (RoPE, K = 2): carrier fraction, decay fit.
Command: lgjax mechanics        (~6-8 min here)
Expect: bound valid but loose; carrier and rank concentration appear together early, then
plateau; APE out-of-range accuracy near chance for every lambda and every fix.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax
import numpy as np

from lgjax import evaluate
from lgjax.config import ModelConfig, RunConfig, TaskConfig
from lgjax.harness import study
from lgjax.harness.ranges import option
from lgjax.harness.study import RunOptions, Study
from lgjax.studies.implicit_bias import analysis, common, dynamics
from lgjax.studies.implicit_bias import figures as plots

SWEEPS = {  # (d) one field changed per row, the rest at the reference
    "d": [{"d": 32}, {"d": 64}, {"d": 128}],
    "m": [{"vocab": 10}, {"vocab": 20}, {"vocab": 40}],
    "range": [{"lmin": 8, "lmax": 16}, {"lmin": 4, "lmax": 12}, {"lmin": 8, "lmax": 32}],
    "tau": [{"temperature": 0.5}, {"temperature": 1.0}, {"temperature": 2.0}],
}
FIXES = ("interp", "clamp", "rescale")
SCALE = ("ape_seeds",)


@dataclass(frozen=True)
class Config:
    K: int = 2  # target offset of (a), (b), (d)
    ape_seeds: int = option(3, ge=1)  # seeds of (c)
    decays: tuple[float, ...] = option((0.0, 1e-4, 1e-2), ge=0)  # (c) weight decay on the APE table
    eval_lengths: tuple[int, ...] = (12, 16, 20, 24, 32, 40, 48)  # evaluation lengths
    dyn_eval: int = option(512, ge=1)  # (b) evaluation sequences per checkpoint
    parts: str = "abcd"  # which parts to run
    run: RunOptions = RunOptions(seeds=5)  # shared options (seeds: of (a)/(b))


def rope(cfg: Config, seeds: int, **over) -> RunConfig:
    task = {k: over.pop(k) for k in ("vocab",) if k in over}
    train = {k: over.pop(k) for k in ("lmin", "lmax") if k in over}
    return study.run_config(cfg, TaskConfig.of("fixed_offset", offset=cfg.K, **task),
                             ModelConfig("rope", **over), seeds=tuple(range(seeds)), **train)


def ape(cfg: Config, decay: float) -> RunConfig:
    return study.run_config(cfg, TaskConfig.of("fixed_offset", offset=cfg.K),
                             common.implicit_bias_model("ape"), weight_decay=decay,
                             seeds=tuple(range(cfg.ape_seeds)))


def sweep_name(sweep: str, opts: dict) -> str:
    return f"{sweep}-" + "-".join(f"{k}{v:g}" for k, v in opts.items())


def runs(cfg: Config) -> dict[str, RunConfig]:
    out = {}
    if "a" in cfg.parts or "b" in cfg.parts:
        out[f"rope-K{cfg.K}"] = rope(cfg, cfg.run.seeds)
    if "c" in cfg.parts:
        out |= {f"ape-wd{lam:g}": ape(cfg, lam) for lam in cfg.decays}
    if "d" in cfg.parts:
        out |= {sweep_name(sweep, o): rope(cfg, 1, **dict(o))
                for sweep, options in SWEEPS.items() for o in options}
    return {f"mechanics/{name}": rc for name, rc in out.items()}


def part_a(cfg: Config, t) -> dict:
    rc, states = t.config, t.states
    ev = common.evaluate_run(t, cfg.eval_lengths, cfg.run)
    rows = []
    for j, L in enumerate(cfg.eval_lengths):
        prof = jax.vmap(lambda p, L=L: analysis.logit_profile(p, rc.model, L))(states.params)
        mu = np.asarray(jax.vmap(lambda p: analysis.margin(p, cfg.K))(prof))[:, 0]
        bound = np.asarray(analysis.margin_bound(mu, L))
        observed = np.asarray(ev.mean_attention)[:, j, 0, L - 1 - cfg.K]
        rows.append({"length": L, "margin": mu, "bound": bound, "observed": observed,
                     "below_bound_seeds": [s for s in range(cfg.run.seeds)
                                           if observed[s] < bound[s]]})
    return {"rows": rows, "accuracy": ev.accuracy}


def part_b(cfg: Config, t) -> dict:
    L = t.config.train.lmax  # dynamics read at the longest training length
    _, rows, _ = dynamics.analyze(t.run_dir, lengths=(L,), n_eval=cfg.dyn_eval)
    out = {}
    for metric in ("carrier_key/h0", "carrier_query/h0", "sv_energy/h0", f"accuracy@{L}"):
        steps, grid = dynamics.series(rows, metric)
        out[metric] = {"steps": steps, "mean": grid.mean(0), "min": grid.min(0),
                       "max": grid.max(0)}
    return out


def part_c(cfg: Config, trained: dict) -> dict:
    res = {}
    for lam in cfg.decays:
        t = trained[f"mechanics/ape-wd{lam:g}"]
        rc, states, lmax = t.config, t.states, t.config.train.lmax
        beyond = [L for L in cfg.eval_lengths if L > lmax]
        ev = common.evaluate_run(t, beyond, cfg.run)
        inside, outside = jax.vmap(lambda p, n=lmax: analysis.ape_row_norms(p, n))(states.params)
        pins = np.argmax(np.asarray(ev.mean_attention)[:, :, 0], -1)  # absolute position
        fixes = {}
        for fix in FIXES:
            enc = dataclasses.replace(rc.model.enc, oob=fix, train_max=rc.train.lmax)
            fixed = dataclasses.replace(rc, model=dataclasses.replace(rc.model, enc=enc))
            fixes[fix] = evaluate.evaluate(states.params, fixed, beyond,
                                           cfg.run.eval_sequences).accuracy
        res[f"{lam:g}"] = {"lengths": beyond, "accuracy": ev.accuracy, "pin": pins,
                           "norm_in_range": inside, "norm_beyond": outside, "fixes": fixes}
    return res


def part_d(cfg: Config, trained: dict) -> dict:
    res = {}
    for sweep, options in SWEEPS.items():
        for opts in options:
            name = sweep_name(sweep, opts)
            t = trained[f"mechanics/{name}"]
            ev = common.evaluate_run(t, cfg.eval_lengths, cfg.run)
            peak, offset = common.peak_head(ev)
            hm = analysis.head_metrics(jax.tree.map(lambda x: x[0], t.states.params),
                                       t.config.model, cfg.K, max(cfg.eval_lengths))
            res[name] = {"sweep": sweep, **opts, "carrier_key": float(hm["carrier_key"][0]),
                         "sv_energy": float(hm["sv_energy"][0]),
                         "fit": analysis.decay_fit(cfg.eval_lengths, peak[0]),
                         "accuracy": ev.accuracy[0], "selected_offset": offset[0]}
    return res


def measure(cfg: Config, trained: dict) -> dict:
    res = {"K": cfg.K, "parts": cfg.parts, "lengths": list(cfg.eval_lengths)}
    if "a" in cfg.parts:
        res["a"] = part_a(cfg, trained[f"mechanics/rope-K{cfg.K}"])
    if "b" in cfg.parts:
        res["b"] = part_b(cfg, trained[f"mechanics/rope-K{cfg.K}"])
    if "c" in cfg.parts:
        res["c"] = part_c(cfg, trained)
    if "d" in cfg.parts:
        res["d"] = part_d(cfg, trained)
        res["tau_readings"] = tau_readings(res["d"])
    return res


def tau_readings(rows: dict) -> dict:
    """The study never defines tau: under "divide" the logits are l / tau (our temperature =
    tau), under "multiply" they are l * tau (our temperature = 1 / tau). {tau: {reading: row}}
    for every tau whose run exists under that reading."""
    by_temp = {r["temperature"]: name for name, r in rows.items() if r["sweep"] == "tau"}
    out = {}
    for temp in sorted(by_temp):
        for reading, tau in (("divide", temp), ("multiply", 1.0 / temp)):
            out.setdefault(f"{tau:g}", {})[reading] = by_temp[temp]
    return out


def figure(res: dict, stem) -> None:
    if "b" in res:
        plots.mechanics_dynamics_figure(res["b"], stem.with_name("mechanics_dynamics"))


def table(res: dict) -> str:
    K = res["K"]
    lines = []
    if "a" in res:
        lines += [f"(a) RoPE K={K}: margin bound vs observed attention at -K (mean over seeds)",
                  f"{'L':>4s}{'mu':>9s}{'bound':>9s}{'observed':>10s}  seeds below bound"]
        for r in res["a"]["rows"]:
            lines.append(f"{r['length']:>4d}{np.mean(r['margin']):>9.3f}"
                         f"{np.mean(r['bound']):>9.3f}{np.mean(r['observed']):>10.3f}  "
                         f"{r['below_bound_seeds']}")
    if "b" in res:
        lines.append("(b) over training (mean over seeds)")
        b = res["b"]
        steps = list(b["carrier_key/h0"]["steps"])
        show = [s for s in steps if s in (0, 4, 16, 32, 64, 125, 250, 500, 1000, 2000, 4000)]
        lines.append(f"{'step':>6s}" + "".join(f"{m:>18s}" for m in b))
        for s in show:
            i = steps.index(s)
            lines.append(f"{s:>6d}" + "".join(f"{b[m]['mean'][i]:>18.3f}" for m in b))
    if "c" in res:
        lines.append("(c) APE: accuracy past the range (mean over lengths > 16, seeds), pin, norms")
        lines.append(f"{'lambda':>8s}{'acc':>8s}{'pin (abs pos)':>16s}{'|p| in':>9s}"
                     f"{'|p| out':>9s}" + "".join(f"{'acc ' + f:>13s}" for f in FIXES))
        for lam, r in res["c"].items():
            pins = np.asarray(r["pin"])
            lines.append(f"{lam:>8s}{np.mean(r['accuracy']):>8.3f}"
                         f"{pins.mean():>9.1f}+-{pins.std():<5.1f}"
                         f"{np.mean(r['norm_in_range']):>9.2f}{np.mean(r['norm_beyond']):>9.2f}"
                         + "".join(f"{np.mean(r['fixes'][f]):>13.3f}" for f in FIXES))
    if "d" in res:
        L = max(res["lengths"])
        lines.append(f"(d) one-seed sweeps (RoPE): carrier fraction, SV energy, decay fit, "
                     f"acc@{L}")
        for name, r in res["d"].items():
            f = r["fit"]
            lines.append(f"{name:>22s} carrier {r['carrier_key']:.3f}  sv {r['sv_energy']:.3f}  "
                         f"alpha {f['alpha']:.3f} c {f['c']:.4f} R^2 {f['r2']:.3f}  "
                         f"acc@{L} {r['accuracy'][-1]:.3f}  "
                         f"offsets {sorted(set(np.asarray(r['selected_offset']).tolist()))}")
        lines.append("(d) tau under both readings (divide: logits / tau; multiply: logits * tau)")
        for tau, readings in res["tau_readings"].items():
            for reading, name in readings.items():
                r = res["d"][name]
                lines.append(f"  tau {tau:>4s} {reading:>8s} (run {name}): carrier "
                             f"{r['carrier_key']:.3f}  alpha {r['fit']['alpha']:.3f} c "
                             f"{r['fit']['c']:.4f}  acc@{L} {r['accuracy'][-1]:.3f}")
    return "\n".join(lines)


STUDY = Study(__name__, Config, runs, measure, table, figure=figure, scale=SCALE)
