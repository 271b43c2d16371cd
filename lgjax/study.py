"""The one study harness: validate everything, train what is missing, measure, write, print, draw.

A study is a module in `lgjax.experiments` holding
  Config                      a frozen dataclass (a `# comment` per field becomes its --help);
                              its `run: RunOptions` field holds the shared options, and its
                              defaults are the published scale (below them a result is "reduced")
  runs(cfg) -> {name: RunConfig | Grid}   what to train ({} for a training-free study); a name
                              is the run directory under <ckpt_root>/, so studies can share
                              runs; a `lgjax.grid.Grid` trains all its cells in one program
  measure(cfg, trained) -> dict    numbers from the trained states (JSON-able: arrays allowed)
  table(result) -> str        what is printed
  figure(result, stem)        optional: writes stem.png and stem.pdf
  eval_lengths(cfg)           optional: every length the study evaluates (default cfg.eval_lengths)
  on_trained(cfg, name, t)    optional: called as each run finishes (e.g. to measure and save it
                              at once, so that a job killed later keeps it)
  SCALE                       optional: study fields that count as scale (e.g. "ape_seeds"; a
                              tuple field, e.g. a grid axis, counts when it lacks a value)
`run_study(module, cfg)` does the rest, identically for every study. In a job of several
processes (`lgjax launch`, or LGJAX_DISTRIBUTED=1 on a cluster) every process runs it: training
splits the seeds over every process's devices, the final states are gathered so `measure` sees
every seed everywhere, and process 0 alone shows progress, writes files and prints.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
from tqdm import tqdm

from lgjax import checkpoints, driver, grid, train
from lgjax.config import ConfigError, RunConfig
from lgjax.devices import is_leader, seed_mesh, to_host
from lgjax.validation import validate


@dataclass(frozen=True)
class RunOptions:
    seeds: int = 5  # seeds 0..seeds-1 of every run
    steps: int = 4000  # Adam steps of every run
    batch: int = 256  # training sequences per step (per seed)
    eval_sequences: int = 4096  # fresh evaluation sequences per length (per seed)
    out: str = ""  # results folder (default: results/<study>)
    ckpt_root: str = "checkpoints"  # run directories live under this folder
    resume: bool = False  # continue unfinished runs from their latest checkpoint
    progress: bool = True  # progress bars (on stderr)
    devices: int = 0  # devices the seed axis is split over (0: all that divide the seed count)


@dataclass(frozen=True)
class Trained:
    config: RunConfig | grid.Grid  # what was trained
    states: train.TrainState  # final stacked (seed-axis) state
    run_dir: Path  # where its checkpoints are
    seconds: float  # wall time of training (or of reloading a finished run)


def options(cfg) -> RunOptions:
    """A training-free study's Config may hold only `out`; it then trains nothing."""
    return cfg.run if hasattr(cfg, "run") else RunOptions(out=getattr(cfg, "out", ""))


def name_of(module: ModuleType) -> str:
    return module.__name__.rsplit(".", 1)[-1]


def out_dir(module: ModuleType, cfg) -> Path:
    return Path(options(cfg).out or f"results/{name_of(module)}")


def is_reduced(cfg, scale: tuple[str, ...] = ()) -> bool:
    """Below the study's published scale (its Config defaults) in the run options or in a
    `scale` field: a smaller number, or a tuple lacking some of its published values."""
    paper = type(cfg)()
    fields = [(cfg.run, paper.run, f) for f in ("seeds", "steps", "batch", "eval_sequences")
              if hasattr(cfg, "run")]
    fields += [(cfg, paper, f) for f in scale]
    below = lambda x, pub: not set(pub) <= set(x) if isinstance(x, tuple) else x < pub
    return any(below(getattr(a, f), getattr(b, f)) for a, b, f in fields)


def eval_lengths(module: ModuleType, cfg) -> tuple[int, ...]:
    get = getattr(module, "eval_lengths", None)
    return tuple(get(cfg) if get else getattr(cfg, "eval_lengths", ()))


def check_options(opts: RunOptions) -> None:
    for name in ("seeds", "steps", "batch", "eval_sequences"):
        if getattr(opts, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')}: must be >= 1, got "
                              f"{getattr(opts, name)}")
    if opts.devices < 0:
        raise ConfigError(f"--devices: must be >= 0 (0 = all that divide the seed count), got "
                          f"{opts.devices}")


def check_writable(path: Path, flag: str) -> None:
    """The folder exists or can be made, and a file can be written in it (checked up front)."""
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"{flag}: {probe} is a file, not a folder; choose another path")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag}: {probe} is not writable; choose a folder you can write")


def is_finished(run_dir: Path, rc: RunConfig | grid.Grid) -> bool:
    return rc.train.steps in checkpoints.step_folders(run_dir)


def preflight(module: ModuleType, cfg) -> dict[str, RunConfig | grid.Grid]:
    """Every check of every run, before anything trains, compiles or is written."""
    opts = options(cfg)
    check_options(opts)
    if hasattr(module, "check"):
        module.check(cfg)
    runs = module.runs(cfg)
    lengths = eval_lengths(module, cfg)
    if runs and hasattr(cfg, "eval_lengths") and not lengths:
        raise ConfigError("--eval-lengths: give at least one evaluation length")
    for name, rc in runs.items():
        (grid.check if isinstance(rc, grid.Grid) else validate)(rc, lengths)
        seed_mesh(len(rc.train.seeds), opts.devices or None)
        # free, or holding this very config: finished (reloaded) or resumed; writes nothing
        run_dir = Path(opts.ckpt_root) / name
        checkpoints.check_run_dir(run_dir, rc, resume=opts.resume or is_finished(run_dir, rc))
    check_writable(out_dir(module, cfg), "--out")
    if runs:
        check_writable(Path(opts.ckpt_root), "--ckpt-root")
    return runs


def train_one(rc: RunConfig | grid.Grid, run_dir: Path, opts: RunOptions, label: str) -> Trained:
    """Train (or continue, or reload a finished run) with checkpoints; a progress bar."""
    bar = tqdm(total=rc.train.steps, desc=label, disable=not (opts.progress and is_leader()))

    def tick(step, states, loss_S):
        bar.update(step - bar.n)
        if loss_S is not None:
            bar.set_postfix(loss=f"{float(np.mean(loss_S)):.3f}")

    t0 = time.perf_counter()
    resume = opts.resume or is_finished(run_dir, rc)  # a finished run is reloaded, not redone
    if isinstance(rc, grid.Grid):  # one program on one device (grid.check refuses a job)
        states = grid.train_program(rc, run_dir, resume=resume, on_chunk=tick)
    else:
        states = driver.train_run(rc, run_dir, resume=resume, on_chunk=tick,
                                  devices=opts.devices or None)
    bar.close()
    states = to_host(states)  # several processes: each held only its block of seeds
    return Trained(rc, states, run_dir, time.perf_counter() - t0)


def jsonable(x):
    if hasattr(x, "tolist"):
        return np.asarray(x).tolist()
    if isinstance(x, Path):
        return str(x)
    raise TypeError(f"not JSON-able: {type(x)}")


def run_study(module: ModuleType, cfg) -> dict:
    """Validate, train, measure, write results.json, print the table, draw the figure."""
    runs = preflight(module, cfg)
    t0 = time.perf_counter()
    opts = options(cfg)
    trained = {}
    for i, (name, rc) in enumerate(runs.items()):
        trained[name] = train_one(rc, Path(opts.ckpt_root) / name, opts,
                                  f"{name} [{i + 1}/{len(runs)}]")
        if hasattr(module, "on_trained"):
            module.on_trained(cfg, name, trained[name])
    t_train = time.perf_counter() - t0
    result = {"experiment": name_of(module), "config": dataclasses.asdict(cfg),
              "reduced": is_reduced(cfg, getattr(module, "SCALE", ())),
              **module.measure(cfg, trained),
              "run_dirs": {name: str(t.run_dir) for name, t in trained.items()},
              "train_seconds": {name: t.seconds for name, t in trained.items()}}
    result["measure_seconds"] = time.perf_counter() - t0 - t_train
    result["wall_seconds"] = time.perf_counter() - t0
    result = json.loads(json.dumps(result, default=jsonable))  # what the file holds, exactly
    if not is_leader():  # the other processes of a job computed the same result
        return result
    out = out_dir(module, cfg)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=1))  # plain JSON already
    written = ["results.json"]
    if hasattr(module, "write_extra"):
        written += module.write_extra(result, out)
    if hasattr(module, "figure"):
        module.figure(result, out / name_of(module))
        written += [f"{name_of(module)}.png/.pdf"]
    print(module.table(result))
    print(f"wrote {out}/: {', '.join(written)} ({result['wall_seconds']:.1f} s"
          f"{', reduced scale' if result['reduced'] else ''})")
    return result
