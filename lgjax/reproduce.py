"""`lgjax reproduce <study>`: run every experiment a study's claims need, then check each claim.

Every experiment runs through the one harness (`lgjax.study.run_study`) at its published scale
(its Config defaults), reusing finished runs under --ckpt-root; `--quick` runs each at a small
scale (a few minutes here) under <ckpt-root>/quick and the report says it is reduced. Claims are
data (lgjax/data/claims/<study>.json); `lgjax.claims` maps each id to a measurement.
Command: lgjax reproduce implicit-bias --quick      (~3-5 min here)
         lgjax reproduce implicit-bias              (published scale, transformer reduced on CPU)
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import jax

from lgjax import claims, reproduce_report
from lgjax.config import ConfigError
from lgjax.study import RunOptions, check_writable, run_study

EXPERIMENTS = {  # study -> the experiments its claims and expectations read, in running order
    "implicit-bias": ("multiseed", "shift", "prop1", "frequency", "linear", "variants",
                      "mechanics", "maxmargin", "transformer"),
}
QUICK_RUN = RunOptions(seeds=2, steps=300, batch=64, eval_sequences=256)
QUICK = {  # experiment -> study-specific overrides of the quick pass
    "maxmargin": {"n_seqs": 32, "iters": 300, "analyze_steps": (0, 64, 300)},
    "mechanics": {"ape_seeds": 1, "dyn_eval": 64},
    "transformer": {"d": 64, "run": {"seeds": 1}},
}
CPU_TRANSFORMER = {"d": 64, "run": {"steps": 1000, "batch": 64, "eval_sequences": 256}}


@dataclass(frozen=True)
class Config:
    study: str = field(default="implicit-bias", metadata={"positional": True})  # whose claims
    quick: bool = False  # every experiment at a small scale (minutes); the report says reduced
    fresh: bool = False  # train everything again (in a new folder) instead of reusing runs
    only: tuple[str, ...] = ()  # run only these experiments (the others' claims: not run)
    out: str = "results/reproduce"  # report.md/.html/.json and one folder per experiment
    ckpt_root: str = "checkpoints"  # run directories (finished ones are reused)
    progress: bool = True  # progress bars
    devices: int = 0  # devices the seed axis is split over (0: all that divide the seed count)


def experiment_config(name: str, cfg: Config, ckpt_root: Path):
    """The experiment's published-scale Config (or the quick one), pointed at our folders."""
    module = importlib.import_module(f"lgjax.experiments.{name}")
    over = dict(QUICK.get(name, {})) if cfg.quick else {}
    if name == "transformer" and not cfg.quick and jax.default_backend() == "cpu":
        over = dict(CPU_TRANSFORMER)  # the reference 8000 steps at d = 192 are for accelerators
    run = dataclasses.replace(QUICK_RUN if cfg.quick else module.Config().run,
                              **over.pop("run", {}))
    run = dataclasses.replace(run, out=str(Path(cfg.out) / name), ckpt_root=str(ckpt_root),
                              progress=cfg.progress, devices=cfg.devices)
    return module, dataclasses.replace(module.Config(), run=run, **over)


def main(cfg: Config) -> dict:
    if cfg.study not in EXPERIMENTS:
        raise ConfigError(f"study: unknown study {cfg.study!r}; choose one of "
                          f"{sorted(EXPERIMENTS)}")
    unknown = sorted(set(cfg.only) - set(EXPERIMENTS[cfg.study]))
    if unknown:
        raise ConfigError(f"--only: {unknown} are not experiments of {cfg.study}; choose from "
                          f"{', '.join(EXPERIMENTS[cfg.study])}")
    claim_set = claims.load_claims(cfg.study)
    root = Path(cfg.ckpt_root) / ("quick" if cfg.quick else "")
    if cfg.fresh:
        root = root / f"fresh-{time.strftime('%Y%m%d-%H%M%S')}"
    check_writable(Path(cfg.out), "--out")
    names = [n for n in EXPERIMENTS[cfg.study] if not cfg.only or n in cfg.only]
    planned = [(n, *experiment_config(n, cfg, root)) for n in names]
    walls = {}
    for name, module, exp_cfg in planned:
        print(f"== {name}", file=sys.stderr)
        t0 = time.perf_counter()
        run_study(module, exp_cfg)
        walls[name] = time.perf_counter() - t0
    dirs = {n: Path(cfg.out) / n for n in EXPERIMENTS[cfg.study]}
    results = claims.load_results(dirs)  # what the files hold, also earlier --only runs
    verdicts = claims.check(claim_set, results)
    reduced = cfg.quick or any(r.get("reduced") for r in results.values())
    text = reproduce_report.write_report(verdicts, results, reproduce_report.figures_in(dirs),
                                         cfg.out, reduced, cfg.study)
    print(text)
    print("wall seconds per experiment: " + ", ".join(f"{n} {s:.0f}" for n, s in walls.items())
          + f"; total {sum(walls.values()):.0f}")
    return {"verdicts": verdicts, "wall_seconds": walls}
