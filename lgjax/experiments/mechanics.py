"""mechanics: margin bound, dynamics of the carrier, APE pinning vs weight decay, sweeps.

Spec: implicit-bias.md, experiment `mechanics` (measurements 6-8, 10).
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
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import jax
import numpy as np

from lgjax import analysis, dynamics, evaluate, plots
from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig
from lgjax.experiments import common

SWEEPS = {  # (d) one field changed per row, the rest at the reference
    "d": [{"d": 32}, {"d": 64}, {"d": 128}],
    "m": [{"vocab": 10}, {"vocab": 20}, {"vocab": 40}],
    "range": [{"lmin": 8, "lmax": 16}, {"lmin": 4, "lmax": 12}, {"lmin": 8, "lmax": 32}],
    "tau": [{"temperature": 0.5}, {"temperature": 1.0}, {"temperature": 2.0}],
}
FIXES = ("interp", "clamp", "rescale")


@dataclass(frozen=True)
class MechanicsConfig:
    K: int = 2  # target offset of (a), (b), (d)
    seeds: int = 5  # seeds of (a)/(b)
    ape_seeds: int = 3  # seeds of (c)
    decays: tuple[float, ...] = (0.0, 1e-4, 1e-2)  # (c) weight decay on the APE table
    steps: int = 4000  # Adam steps of every run
    batch: int = 256  # sequences per step
    eval_lengths: tuple[int, ...] = (12, 16, 20, 24, 32, 40, 48)  # evaluation lengths
    n_eval: int = 4096  # evaluation sequences per length
    dyn_eval: int = 512  # (b) evaluation sequences per checkpoint
    parts: str = "abcd"  # which parts to run
    out: str = "results/mechanics"  # results.json and figures
    ckpt_root: str = "checkpoints"  # runs in <ckpt_root>/mechanics/...
    resume: bool = False  # continue (or reload finished) runs
    progress: bool = True  # progress bars

    def rope(self, seeds: int, **over) -> RunConfig:
        task = {k: over.pop(k) for k in ("vocab",) if k in over}
        train = {k: over.pop(k) for k in ("lmin", "lmax") if k in over}
        return RunConfig(TaskConfig("fixed_offset", offset=self.K, **task),
                         ModelConfig("rope", **over),
                         TrainConfig(steps=self.steps, batch=self.batch, seeds=tuple(range(seeds)),
                                     **train))

    def ape(self, decay: float) -> RunConfig:
        return RunConfig(TaskConfig("fixed_offset", offset=self.K), ModelConfig("ape"),
                         TrainConfig(steps=self.steps, batch=self.batch, weight_decay=decay,
                                     seeds=tuple(range(self.ape_seeds))))

    def configs(self) -> list[RunConfig]:
        rows = [self.rope(1, **o) for opts in SWEEPS.values() for o in opts]
        return [self.rope(self.seeds)] + [self.ape(lam) for lam in self.decays] + rows


def part_a(cfg: MechanicsConfig, run_dir: Path) -> dict:
    rc = cfg.rope(cfg.seeds)
    states, ev, times = common.train_eval(rc, run_dir, cfg.eval_lengths, cfg.n_eval,
                                          resume=cfg.resume, progress=cfg.progress, label="(a)")
    rows = []
    for j, L in enumerate(cfg.eval_lengths):
        prof = jax.vmap(lambda p, L=L: analysis.logit_profile(p, rc.model, L))(states.params)
        mu = np.asarray(jax.vmap(lambda p: analysis.margin(p, cfg.K))(prof))[:, 0]
        bound = np.asarray(analysis.margin_bound(mu, L))
        observed = np.asarray(ev.mean_attention)[:, j, 0, L - 1 - cfg.K]
        rows.append({"length": L, "margin": mu, "bound": bound, "observed": observed,
                     "below_bound_seeds": [s for s in range(cfg.seeds) if observed[s] < bound[s]]})
    return {"rows": rows, "accuracy": ev.accuracy, **times}


def part_b(cfg: MechanicsConfig, run_dir: Path) -> dict:
    _, rows = dynamics.analyze(run_dir, lengths=(16,), n_eval=cfg.dyn_eval)
    out = {}
    for metric in ("carrier_key/h0", "carrier_query/h0", "sv_energy/h0", "accuracy@16"):
        steps, grid = dynamics.series(rows, metric)
        out[metric] = {"steps": steps, "mean": grid.mean(0), "min": grid.min(0),
                       "max": grid.max(0)}
    return out


def part_c(cfg: MechanicsConfig, root: Path) -> dict:
    beyond = [L for L in cfg.eval_lengths if L > 16]
    res = {}
    for lam in cfg.decays:
        rc = cfg.ape(lam)
        states, ev, times = common.train_eval(rc, root / f"ape-wd{lam:g}", beyond, cfg.n_eval,
                                              resume=cfg.resume, progress=cfg.progress,
                                              label=f"(c) wd={lam:g}")
        inside, outside = jax.vmap(lambda p: analysis.ape_row_norms(p, 16))(states.params)
        pins = np.argmax(np.asarray(ev.mean_attention)[:, :, 0], -1)  # absolute position
        fixes = {}
        for fix in FIXES:
            fixed = dataclasses.replace(rc, model=dataclasses.replace(
                rc.model, ape_oob=fix, ape_train_max=rc.train.lmax))
            fixes[fix] = evaluate.evaluate(states.params, fixed, beyond, cfg.n_eval).accuracy
        res[f"{lam:g}"] = {"lengths": beyond, "accuracy": ev.accuracy, "pin": pins,
                           "norm_in_range": inside, "norm_beyond": outside, "fixes": fixes,
                           **times}
    return res


def part_d(cfg: MechanicsConfig, root: Path) -> dict:
    res = {}
    for sweep, options in SWEEPS.items():
        for opts in options:
            rc = cfg.rope(1, **dict(opts))
            name = f"{sweep}-" + "-".join(f"{k}{v:g}" for k, v in opts.items())
            states, ev, times = common.train_eval(rc, root / name, cfg.eval_lengths, cfg.n_eval,
                                                  resume=cfg.resume, progress=cfg.progress,
                                                  label=f"(d) {name}")
            peak, offset = common.peak_head(ev)
            hm = analysis.head_metrics(jax.tree.map(lambda x: x[0], states.params), rc.model,
                                       cfg.K, max(cfg.eval_lengths))
            res[name] = {"sweep": sweep, **opts, "carrier_key": float(hm["carrier_key"][0]),
                         "sv_energy": float(hm["sv_energy"][0]),
                         "fit": analysis.decay_fit(cfg.eval_lengths, peak[0]),
                         "accuracy": ev.accuracy[0], "selected_offset": offset[0], **times}
    return res


def run(cfg: MechanicsConfig) -> dict:
    common.check_all(cfg.configs(), cfg.eval_lengths)
    t0 = time.perf_counter()
    root = Path(cfg.ckpt_root) / "mechanics"
    res = {"experiment": "mechanics", "config": asdict(cfg),
           "reduced": common.is_reduced(cfg, ape_seeds=3)}
    if "a" in cfg.parts:
        res["a"] = part_a(cfg, root / f"rope-K{cfg.K}")
    if "b" in cfg.parts:
        if "a" not in cfg.parts:
            common.train(cfg.rope(cfg.seeds), root / f"rope-K{cfg.K}", resume=True,
                         progress=cfg.progress)
        res["b"] = part_b(cfg, root / f"rope-K{cfg.K}")
    if "c" in cfg.parts:
        res["c"] = part_c(cfg, root)
    if "d" in cfg.parts:
        res["d"] = part_d(cfg, root)
    res["wall_seconds"] = time.perf_counter() - t0
    out = Path(cfg.out)
    common.write_json(res, out)
    if "b" in res:
        plots.mechanics_dynamics_figure(res["b"], out / "mechanics_dynamics")
    print(table(res, cfg))
    return res


def table(res: dict, cfg: MechanicsConfig) -> str:
    lines = []
    if "a" in res:
        lines += [f"(a) RoPE K={cfg.K}: margin bound vs observed attention at -K (mean over seeds)",
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
        lines.append("(d) one-seed sweeps (RoPE): carrier fraction, SV energy, decay fit, acc@48")
        for name, r in res["d"].items():
            f = r["fit"]
            lines.append(f"{name:>22s} carrier {r['carrier_key']:.3f}  sv {r['sv_energy']:.3f}  "
                         f"alpha {f['alpha']:.4f} c {f['c']:.3f} R^2 {f['r2']:.3f}  "
                         f"acc@48 {r['accuracy'][-1]:.3f}  "
                         f"offsets {sorted(set(np.asarray(r['selected_offset']).tolist()))}")
    return "\n".join(lines)
