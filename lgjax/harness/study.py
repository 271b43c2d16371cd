"""The one study harness: validate everything, train what is missing, measure, write, print, draw.

A study is a `Study` record of its hooks (below), held by its module as STUDY (its package
declares the module as a command, see lgjax.harness.declare); `run_study(study, cfg)` does the
rest, identically for every study. In
a job of several processes (`lgjax launch`, or LGJAX_DISTRIBUTED=1 on a cluster) every process
runs it: training splits the seeds over every process's devices, the final states are gathered
so `measure` sees every seed everywhere, and process 0 alone shows progress, writes files and
prints.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from lgjax import checkpoints, grid, plugins, train
from lgjax.checkpoints import driver, ledger, twins
from lgjax.checkpoints.integrity import write_atomic
from lgjax.config import ConfigError, ModelConfig, RunConfig, TaskConfig, TrainConfig
from lgjax.devices import check_memory, is_leader, seed_mesh, to_host
from lgjax.harness import provenance, ranges, side_by_side
from lgjax.harness.declare import COMMAND_OF
from lgjax.harness.outputs import check_utf8, check_writable, jsonable
from lgjax.harness.ranges import option
from lgjax.validation import validate


@dataclass(frozen=True)
class RunOptions:
    """The options every training command shares (`--seeds`, `--steps`, ...), the `run` field
    of each command's `Config`; its defaults there are the published scale."""

    seeds: int = option(5, ge=1)  # seeds 0..seeds-1 of every run
    steps: int = option(4000, ge=1)  # Adam steps of every run
    batch: int = option(256, ge=1)  # training sequences per step (per seed)
    eval_sequences: int = option(4096, ge=1)  # fresh evaluation sequences per length (per seed)
    out: str = ""  # results folder (default: results/<study>)
    ckpt_root: str = "checkpoints"  # run directories live under this folder
    resume: bool = False  # continue unfinished runs from their latest checkpoint
    progress: bool = True  # progress bars (on stderr)
    devices: int = option(0, ge=0)  # devices of the seed axis (0: all that divide the seed count)
    # each run on the devices it would use alone: the same numbers (lgjax.harness.side_by_side)
    side_by_side: int = option(0, ge=0)  # runs trained at once (0: as many as the devices hold)
    # randomized positional encodings: evaluation keeps positions 0..L-1
    random_positions: int = option(0, ge=0)  # M: train at sorted random positions in [0, M); 0 off
    fast_compile: bool = False  # compile at XLA -O0: ~4x faster to compile, ~3x slower to run


@dataclass(frozen=True)
class Trained:
    config: RunConfig | grid.Grid  # what was trained
    states: train.TrainState  # final stacked (seed-axis) state
    run_dir: Path  # where its checkpoints are
    seconds: float  # wall time of training (or of reloading a finished run) in this process
    # seconds of training from step 0 to the end, across every process that trained it (None:
    # not recorded; lgjax.checkpoints.ledger)
    trained_seconds: float | None = None


@dataclass(frozen=True)
class Study:
    """A study command, as its module declares it (`STUDY = Study(__name__, Config, runs,
    measure, table, ...)`; its package declares the module as a command, lgjax.harness.declare);
    `run_study` does the rest. The first five are required; every hook after them has its
    default here."""

    module: str  # the module that holds it (`__name__`): names its command's results folder
    # a frozen dataclass, a `# comment` per field (its --help); its `run: RunOptions` field
    # holds the shared options and its defaults are the published scale (below: "reduced")
    Config: type
    # what to train ({} for a training-free study); a name is the run directory under
    # <ckpt_root>/, so studies can share runs; a Grid trains all its cells in one program
    runs: Callable[[Any], dict[str, RunConfig | grid.Grid]]
    # the numbers, from the trained states (JSON-able; arrays allowed)
    measure: Callable[[Any, dict[str, Trained]], dict]
    table: Callable[[dict], str]  # what is printed, from the result alone
    # study-specific checks, before anything trains (raise ConfigError)
    check: Callable[[Any], None] = lambda cfg: None
    # every length the study evaluates
    eval_lengths: Callable[[Any], tuple[int, ...]] = lambda cfg: getattr(cfg, "eval_lengths", ())
    # called as each run finishes (e.g. to measure and save it at once, so that a job killed
    # later keeps it): (cfg, name, trained)
    on_trained: Callable[[Any, str, Trained], None] = lambda cfg, name, trained: None
    # runs whose saved measurement the command reads without training or loading them (so
    # `runs` leaves them out): {name: (config, run directory)}. results.json names them in
    # run_dirs with their recorded cost, as it does the runs it trains
    measured_runs: Callable[[Any], dict[str, tuple[Any, Path]]] = lambda cfg: {}
    # the command's runs split into smaller commands of this module ({key: config}, each
    # training and measuring a share; their runs together are `runs(cfg)`, with equal
    # configs), which `reproduce --jobs N` runs side by side before the whole command reads
    # what they saved. {}: it does not split
    parts: Callable[[Any], dict[str, Any]] = lambda cfg: {}
    # files written beside results.json: (result, out) -> their names
    write_extra: Callable[[dict, Path], list[str]] = lambda result, out: []
    # writes stem.png and stem.pdf from the result alone: (result, stem); None: no figure
    figure: Callable[[dict, Path], Any] | None = None
    # study fields that count as scale (e.g. "ape_seeds"; a tuple field, e.g. a grid axis,
    # counts when it lacks a value)
    scale: tuple[str, ...] = ()


def run_config(cfg, task: TaskConfig, model: ModelConfig, **train) -> RunConfig:
    """A run at the study's shared options (its steps, batch and seeds), `train` on top."""
    shared = {"steps": cfg.run.steps, "batch": cfg.run.batch, "seeds": seeds(cfg),
              "random_positions": cfg.run.random_positions,
              "fast_compile": cfg.run.fast_compile}
    return RunConfig(task, model, TrainConfig(**shared | train))


def product_parts(cfg, outer: str, inner: str) -> dict[str, Any]:
    """`parts` of a command whose runs are the product of two tuple fields: one command per
    pair ("a-b"), its config narrowed to that pair; {} when there is only one."""
    split = {f"{a}-{b}": dataclasses.replace(cfg, **{outer: (a,), inner: (b,)})
             for a in getattr(cfg, outer) for b in getattr(cfg, inner)}
    return split if len(split) > 1 else {}


def seeds(cfg) -> tuple[int, ...]:
    return tuple(range(cfg.run.seeds))



def options(cfg) -> RunOptions:
    """A training-free study's Config may hold only `out`; it then trains nothing."""
    return cfg.run if hasattr(cfg, "run") else RunOptions(out=getattr(cfg, "out", ""))


def name_of(study: Study) -> str:
    """The command that runs the study, as results/<name> spells it (realizability_train)."""
    named = COMMAND_OF.get(study.module, study.module.rsplit(".", 1)[-1])
    return named.replace("-", "_")


def out_dir(study: Study, cfg) -> Path:
    return Path(options(cfg).out or f"results/{name_of(study)}")


def is_reduced(cfg, scale: tuple[str, ...] = ()) -> bool:
    """Below the study's published scale (its Config defaults) in the run options or in a
    `scale` field: a smaller number, or a tuple lacking some of its published values."""
    paper = type(cfg)()
    fields = [(cfg.run, paper.run, f) for f in ("seeds", "steps", "batch", "eval_sequences")
              if hasattr(cfg, "run")]
    fields += [(cfg, paper, f) for f in scale]
    below = lambda x, pub: not set(pub) <= set(x) if isinstance(x, tuple) else x < pub
    return any(below(getattr(a, f), getattr(b, f)) for a, b, f in fields)


def eval_lengths(study: Study, cfg) -> tuple[int, ...]:
    return tuple(study.eval_lengths(cfg))


def check_options(opts: RunOptions) -> None:
    ranges.check(opts)  # again for a caller that built its Config without the cli


def check_inside(name: str, root: str) -> None:
    """A run's folder lies under --ckpt-root: its name is relative and never climbs out."""
    if Path(name).is_absolute() or ".." in Path(name).parts:
        raise ConfigError(f"--run-name: run {name!r} would be written outside --ckpt-root "
                          f"{root}; give a relative name without '..'")


def is_finished(run_dir: Path, rc: RunConfig | grid.Grid) -> bool:
    return rc.train.steps in checkpoints.step_folders(run_dir)


def preflight(study: Study, cfg) -> dict[str, RunConfig | grid.Grid]:
    """Every check of every run, before anything trains, compiles or is written."""
    opts = options(cfg)
    check_options(opts)
    check_utf8(Path(opts.ckpt_root), "--ckpt-root")
    study.check(cfg)
    runs = study.runs(cfg)
    lengths = eval_lengths(study, cfg)
    if runs and hasattr(cfg, "eval_lengths") and not lengths:
        raise ConfigError("--eval-lengths: give at least one evaluation length")
    for name, rc in runs.items():
        check_inside(name, opts.ckpt_root)
        if isinstance(rc, grid.Grid):
            grid.check(rc, lengths, opts.devices or None)
        else:
            validate(rc, lengths)
            seed_mesh(len(rc.train.seeds), opts.devices or None)
        check_memory(rc.model, rc.train.batch, rc.train.lmax, "--batch")
        check_memory(rc.model, opts.eval_sequences, max(lengths, default=rc.train.lmax),
                     "--eval-sequences")
        # free, or holding this very config: finished (reloaded) or resumed; writes nothing
        run_dir = Path(opts.ckpt_root) / name
        checkpoints.check_run_dir(run_dir, rc, resume=opts.resume or is_finished(run_dir, rc))
    check_writable(out_dir(study, cfg), "--out")
    if runs:
        check_writable(Path(opts.ckpt_root), "--ckpt-root")
    return runs


def own_or_twin(run: str, rc: RunConfig | grid.Grid, opts: RunOptions) -> Path:
    """The run's own directory, or a finished run of the same config (trained under another
    name, by this study or another) when its own is not started: one training, read twice.
    The run's name becomes a link to the twin, so whatever opens runs by name finds it. A
    grid program is always its own (its study keeps its measurement in its folder)."""
    own = Path(opts.ckpt_root) / run
    if own.is_symlink() and not own.exists() and is_leader():
        own.unlink()  # a link to a twin that is gone: this run trains itself
    if isinstance(rc, grid.Grid) or twins.is_started(own):
        return own
    twin = twins.finished_twin(Path(opts.ckpt_root), rc, own)
    if twin is None:
        return own
    if is_leader():
        own.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(twin, own.parent.absolute()), own)
        print(f"lgjax: {run}: the same config as the finished run {twin}; {own} links to it",
              file=sys.stderr)
    return twin


def train_one(rc: RunConfig | grid.Grid, run_dir: Path, opts: RunOptions, label: str) -> Trained:
    """Train (or continue, or reload a finished run) with checkpoints; a progress bar."""
    bar = tqdm(total=rc.train.steps, desc=label, disable=not (opts.progress and is_leader()))

    def tick(step, states, loss_S):
        bar.update(step - bar.n)
        if loss_S is not None:
            bar.set_postfix(loss=f"{float(np.mean(loss_S)):.3f}")

    t0 = time.perf_counter()
    resume = opts.resume or is_finished(run_dir, rc)  # a finished run is reloaded, not redone
    if isinstance(rc, grid.Grid):  # its cells split over the job's devices like seeds
        states = grid.train_program(rc, run_dir, resume=resume, on_chunk=tick,
                                    devices=opts.devices or None)
    else:
        states = driver.train_run(rc, run_dir, resume=resume, on_chunk=tick,
                                  devices=opts.devices or None)
    bar.close()
    states = to_host(states)  # several processes: each held only its block of seeds
    return Trained(rc, states, run_dir, time.perf_counter() - t0,
                   ledger.at(run_dir, rc.train.steps))


# options that change how a command runs, not what it measures
HOW_IT_RAN = ("resume", "progress", "side_by_side")


def _measured_as(config):
    """A config as results.json holds it, without how it ran."""
    if not (isinstance(config, dict) and isinstance(config.get("run"), dict)):
        return config
    return {**config, "run": {k: v for k, v in config["run"].items() if k not in HOW_IT_RAN}}


def finished_result(study: Study, cfg) -> dict | None:
    """The results.json that this very code wrote for this config from runs that are finished
    and unchanged now, else None (measure again): what `reproduce --resume` reuses."""
    path = out_dir(study, cfg) / "results.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("code_digest") != provenance.code_digest() \
            or doc.get("plugins"):  # a plugin's code is not in the digest
        return None
    mine = json.loads(json.dumps(dataclasses.asdict(cfg), default=jsonable))
    dirs = doc.get("run_dirs")
    if _measured_as(doc.get("config")) != _measured_as(mine) or not isinstance(dirs, dict):
        return None
    if not all(run in dirs and twins.holds_finished(Path(dirs[run]), rc)
               for run, rc in study.runs(cfg).items()):
        return None
    return doc


def run_study(study: Study, cfg, figure: bool = True) -> dict:
    """Validate, train, measure, write results.json, print the table, draw the figure (unless
    `figure` is False: a caller that draws its own, as a profile's card does).

    Every check runs first (each run's config, the devices, the output folders), before
    anything trains; runs already finished with the same config are reloaded. Returns the
    result as written to results.json. `run_study(module.STUDY, module.Config(...))` runs a
    study's command from Python as the command line does.
    """
    runs = preflight(study, cfg)
    earlier = study.measured_runs(cfg)  # before training adds to them
    t0 = time.perf_counter()
    opts = options(cfg)
    hook_seconds = []  # measuring as runs finish: measure_seconds
    order = {run: i for i, run in enumerate(runs)}

    def train_and_hook(run: str) -> Trained:
        rc = runs[run]
        done = train_one(rc, own_or_twin(run, rc, opts), opts,
                         f"{run} [{order[run] + 1}/{len(runs)}]")
        t1 = time.perf_counter()
        study.on_trained(cfg, run, done)
        hook_seconds.append(time.perf_counter() - t1)
        return done

    n_lanes = side_by_side.lanes(runs, opts.side_by_side, opts.devices)
    if n_lanes == 1:
        trained = {run: train_and_hook(run) for run in runs}
    else:
        trained = side_by_side.train_all(runs, n_lanes, train_and_hook)
    # side by side, hooks overlap training: their share of the wall is their time per lane
    t_train = time.perf_counter() - t0 - sum(hook_seconds) / n_lanes
    name = name_of(study)
    result = {"experiment": name, "config": dataclasses.asdict(cfg),
              "reduced": is_reduced(cfg, study.scale),
              **study.measure(cfg, trained),
              "run_dirs": {**{run: str(path) for run, (_, path) in earlier.items()},
                           **{run: str(t.run_dir) for run, t in trained.items()}},
              "train_seconds": {**{run: 0.0 for run in earlier},
                                **{run: t.seconds for run, t in trained.items()}},
              "trained_seconds": {
                  **{run: ledger.at(path, rc.train.steps) for run, (rc, path) in earlier.items()},
                  **{run: t.trained_seconds for run, t in trained.items()}}}
    result["measure_seconds"] = time.perf_counter() - t0 - t_train
    result["wall_seconds"] = time.perf_counter() - t0
    result["code_digest"] = provenance.code_digest()
    result = json.loads(json.dumps(result, default=jsonable))  # what the file holds, exactly
    given = [m for m in plugins.LOADED if not m.startswith("lgjax.")]  # the package's own
    if given:  # modules (a study's tasks, recorded by its runs) import themselves
        result["plugins"] = given
    if not is_leader():  # the other processes of a job computed the same result
        return result
    write_outputs(result, out_dir(study, cfg), study.table, study.figure if figure else None, name,
                  lambda out: study.write_extra(result, out))
    return result


def write_outputs(result: dict, out: Path, table, figure=None, stem: str = "",
                  extra=lambda out: [], result_file: str = "results.json") -> None:
    """The ending every command shares: the result file, the extra files, the figure, the
    printed table and a line naming what was written."""
    out.mkdir(parents=True, exist_ok=True)
    written = [result_file, *extra(out)]
    if figure is not None:
        written += figure(result, out / stem) or [f"{stem}.png/.pdf"]
    # last, whole or not at all: a results file present means its figure and extras are too
    # (`reproduce --resume` reuses it)
    write_atomic(out / result_file, json.dumps(result, indent=1))  # plain JSON already
    print(table(result))
    seconds = f"{result['wall_seconds']:.1f} s" if "wall_seconds" in result else ""
    reduced = ", reduced scale" if result.get("reduced") else ""
    print(f"wrote {out}/: {', '.join(written)}" + (f" ({seconds}{reduced})" if seconds else ""))
