"""`lgjax reproduce <study>`: run every experiment a study's claims need, then check each claim.

Every experiment runs through the one harness (lgjax.harness.study.run_study) at its published
scale
(its Config defaults), reusing finished runs under --ckpt-root; `--quick` runs each at a small
scale (a few minutes here) under <ckpt-root>/quick and the report says it is reduced. Claims are
data (<study package>/<study>.json); the study's readers map each id to a measurement.
A study may declare a plan (its package's `reproduce.steps`): several runs of one command (e.g.
contract-lab at three settings, read as results[experiment][key]) and report commands (`main`).
`lgjax reproduce all` runs every study into <out>/<study> and writes one report over them.
`--jobs N` runs N steps at once, each in a worker process (lgjax.reproduce.jobs; under `all`
every study's steps in one pool); at --quick on a CPU that is one per core by default, and on one
GPU the workers share the device.
Command: lgjax reproduce implicit-bias --quick      (~2 min here)
         lgjax reproduce implicit-bias              (published scale, transformer reduced on CPU)
         lgjax reproduce realizability [--tiers all] (1L1H + sweeps on a CPU; resumable)
         lgjax reproduce contract | all [--quick]
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import jax

from lgjax import runtime
from lgjax.config import ConfigError
from lgjax.harness.declare import Step, how_steps_run
from lgjax.harness.outputs import check_writable, read_result
from lgjax.harness.ranges import option
from lgjax.harness.study import RunOptions, preflight
from lgjax.reproduce import claims, cost, jobs
from lgjax.reproduce import report as reproduce_report
from lgjax.reproduce.jobs import run_step
from lgjax.studies import STUDIES

# quick runs are short: at XLA's defaults their programs take longer to compile than to run
QUICK_RUN = RunOptions(seeds=2, steps=300, batch=64, eval_sequences=256, fast_compile=True)
ALL = "all"  # `lgjax reproduce all`: every study with claims, one report


@dataclass(frozen=True)
class Config:
    study: str = field(default="implicit-bias",
                       metadata={"positional": True})  # whose claims ("all": every study's)
    quick: bool = False  # every experiment at a small scale (minutes); the report says reduced
    fresh: bool = False  # train everything again (in a new folder) instead of reusing runs
    only: tuple[str, ...] = ()  # run only these experiments (the others' claims: not run)
    tiers: tuple[str, ...] = ()  # model tiers to train besides the default ("all": every one)
    out: str = "results/reproduce"  # report.md/.html/.json and one folder per experiment
    ckpt_root: str = "checkpoints"  # run directories (finished ones are reused)
    progress: bool = True  # progress bars
    devices: int = option(0, ge=0)  # seed-axis devices (0: all that divide the seeds; --quick: 1)
    jobs: int = option(0, ge=0)  # steps at once (0: one per core at --quick on a CPU, else 1)
    side_by_side: int = option(0, ge=0)  # a step's runs at once (0: as many as the devices hold)
    # finished runs are reused, and so is a step's results.json that this code wrote for its
    # config from runs that are finished
    resume: bool = False  # continue the runs a stopped reproduction left unfinished


def run_jobs(cfg: Config) -> int:
    """--jobs, where 0 means one per core at --quick on a CPU (a quick step keeps about one
    core busy: lgjax.reproduce.jobs) and one otherwise (a published-scale run already splits
    over every core). On one GPU several jobs share the device (each worker takes memory as it
    needs it): a step's compilation, on the host's cores, then overlaps the others' steps. A
    TPU, or a job of several processes, belongs to one process."""
    distributed = os.environ.get("LGJAX_DISTRIBUTED") == "1"
    backend = jax.default_backend()
    if cfg.jobs > 1 and (distributed or backend not in ("cpu", "gpu", "cuda", "rocm")):
        where = "a job of several processes" if distributed else backend
        raise ConfigError(f"--jobs: steps in worker processes are for one process on a CPU or "
                          f"a GPU, not {where}; give --jobs 1")
    if cfg.jobs:
        return cfg.jobs
    on_cpu = not distributed and backend == "cpu"
    return len(os.sched_getaffinity(0)) if cfg.quick and on_cpu else 1


def experiment_config(name: str, cfg: Config, ckpt_root: Path):
    """The experiment's published-scale Config (or the quick one), pointed at our folders."""
    study = STUDIES[cfg.study]
    module = importlib.import_module(study.commands[name].module)
    over = dict(study.quick.get(name, {})) if cfg.quick else {}
    if name in study.on_cpu and not cfg.quick and jax.default_backend() == "cpu":
        over = dict(study.on_cpu[name])
    run = dataclasses.replace(QUICK_RUN if cfg.quick else module.Config().run,
                              **over.pop("run", {}))
    run = dataclasses.replace(run, out=str(Path(cfg.out) / name), ckpt_root=str(ckpt_root),
                              **how_steps_run(cfg))
    return module, dataclasses.replace(module.Config(), run=run, **over)


def plan(cfg: Config, root: Path, names: list[str]) -> list[Step]:
    """What to run: the study's own plan (its package's `reproduce.steps`), or each experiment
    once at its Config."""
    study = STUDIES[cfg.study]
    if study.plan:
        steps = importlib.import_module(study.plan).steps(cfg, root, QUICK_RUN)
        steps = [s for s in steps if (s.part_of or s.experiment) in names]
    else:
        steps = [Step(n, "", *experiment_config(n, cfg, root), Path(cfg.out) / n) for n in names]
    if run_jobs(cfg) > 1:
        steps = [piece for s in steps for piece in pieces(s)]
    return [resumed(s) for s in steps] if cfg.resume else steps


def pieces(step: Step) -> list[Step]:
    """The step's shares (its module's `parts`), then the step itself, which reads what they
    saved. With several jobs a long command's runs (a grid's programs, a matrix's cells) so run
    side by side (one small program leaves most of a GPU idle) instead of one after another in
    one step that would end the reproduction alone."""
    shares = []
    parts = step.module.STUDY.parts(step.config) if hasattr(step.module, "STUDY") else {}
    for key, config in parts.items():
        out = step.out / "parts" / key
        config = dataclasses.replace(config, run=dataclasses.replace(config.run, out=str(out)))
        shares.append(dataclasses.replace(step, config=config, out=out, piece=key))
    return shares + [step]


def resumed(step: Step) -> Step:
    """The step with its runs continued from their newest intact checkpoints (--resume); a step
    that trains nothing (no run options) is left as it is."""
    if not hasattr(step.config, "run"):
        return step
    run = dataclasses.replace(step.config.run, resume=True)
    return dataclasses.replace(step, config=dataclasses.replace(step.config, run=run))


def load_results(steps: list[Step]) -> dict[str, dict]:
    """What the files hold (also earlier --only runs): a step without its file is left out, a
    damaged file is a ConfigError naming it."""
    out = {}
    for step in steps:
        if step.piece:  # the step it is a share of holds the results
            continue
        found = [p for f in ("results.json", "report.json") if (p := step.out / f).exists()]
        if not found:
            continue
        doc = read_result(found[0], "--out", jobs.label_of(step))
        if step.key:
            out.setdefault(step.experiment, {})[step.key] = doc
        else:
            out[step.experiment] = doc
    return out


@dataclass(frozen=True)
class Prepared:
    """A study's reproduction, checked whole before any of its steps (or, under `all`, any
    study's) starts."""

    cfg: Config
    claim_set: dict
    experiments: tuple[str, ...]
    every: list[Step]  # every experiment's steps: their files are read for the claims
    planned: list[Step]  # what runs (--only)
    jobs: int


def prepare(cfg: Config) -> Prepared:
    """Every check of a study's reproduction: the study, --only, the claims file, --out, and
    each planned run's own preflight (options, run directories, output folders), so that bad
    input is one line before any step trains, compiles or writes."""
    reproducible = {n: s.experiments for n, s in STUDIES.items() if s.claims}
    if cfg.study not in reproducible:
        raise ConfigError(f"study: unknown study {cfg.study!r}; choose one of "
                          f"{sorted(reproducible) + [ALL]}")
    experiments = reproducible[cfg.study]
    unknown = sorted(set(cfg.only) - set(experiments))
    if unknown:
        raise ConfigError(f"--only: {unknown} are not experiments of {cfg.study}; choose from "
                          f"{', '.join(experiments)}")
    try:  # a malformed claims file is one line naming the claim and the field, exit 2
        claim_set = claims.load_claims(cfg.study)
    except ValueError as err:
        raise ConfigError(f"claims file of {cfg.study}: {err}") from None
    root = Path(cfg.ckpt_root) / ("quick" if cfg.quick else "")
    if cfg.fresh:
        root = root / f"fresh-{time.strftime('%Y%m%d-%H%M%S')}"
    check_writable(Path(cfg.out), "--out")
    names = [n for n in experiments if not cfg.only or n in cfg.only]
    every = plan(dataclasses.replace(cfg, only=()), root, list(experiments))
    n_jobs = run_jobs(cfg)
    planned = plan(dataclasses.replace(cfg, progress=cfg.progress and n_jobs == 1), root, names)
    for step in planned:
        if hasattr(step.module, "STUDY"):  # a study; the others read what these write
            preflight(step.module.STUDY, step.config)
    running = {jobs.label_of(s) for s in planned}
    load_results([s for s in every if jobs.label_of(s) not in running])  # read, not rewritten
    return Prepared(cfg, claim_set, experiments, every, planned, min(n_jobs, len(planned)) or 1)


def lane(prepared: Prepared) -> jobs.Lane:
    cfg = prepared.cfg
    return jobs.Lane(cfg.study, prepared.planned, Path(cfg.out) / "logs",
                     STUDIES[cfg.study].longest_first)


def run_serially(prepared: Prepared) -> dict[str, float]:
    walls = {}
    for step in prepared.planned:
        label = jobs.label_of(step)
        print(f"== {prepared.cfg.study}: {label}", file=sys.stderr)
        t0 = time.perf_counter()
        run_step(step)
        walls[label] = time.perf_counter() - t0
    return walls


def reproduce(prepared: Prepared) -> dict:
    """One study: run its plan, check every claim, write its report into cfg.out."""
    t_start = time.perf_counter()
    if prepared.jobs > 1:
        walls = jobs.run([lane(prepared)], prepared.jobs)[prepared.cfg.study]
    else:
        walls = run_serially(prepared)
    return conclude(prepared, walls, time.perf_counter() - t_start, prepared.jobs)


def conclude(prepared: Prepared, walls: dict[str, float], elapsed: float, n_jobs: int,
             shared: bool = False) -> dict:
    """Check every claim against the study's results files and write its report (`shared`:
    the elapsed time is of every study's steps in one pool)."""
    cfg = prepared.cfg
    results = load_results(prepared.every)
    verdicts = claims.check(prepared.claim_set, results)
    reduced = cfg.quick or any(r.get("reduced") for r in results.values())
    dirs = {s.experiment: s.out for s in prepared.every if not s.key}
    spent = cost.of_steps(walls, {jobs.label_of(s): step_result(s, results)
                                  for s in prepared.planned if hasattr(s.module, "STUDY")})
    text = reproduce_report.write_report(verdicts, results, reproduce_report.figures_in(dirs),
                                         cfg.out, reduced, cfg.study, spent)
    print(text)
    print("wall seconds per experiment: " + ", ".join(f"{n} {s:.0f}" for n, s in walls.items())
          + f"; total {sum(walls.values()):.0f}"
          + (f"; {elapsed:.0f} elapsed with {n_jobs} jobs" if n_jobs > 1 else "")
          + (" (every study's steps)" if shared else ""))
    print(spent.line())
    return {"verdicts": verdicts, "wall_seconds": walls, "reduced": reduced,
            "elapsed_seconds": elapsed, "jobs": n_jobs, "cost": dataclasses.asdict(spent)}


def step_result(step: Step, results: dict[str, dict]) -> dict | None:
    if step.piece:  # its own file (a share's runs; the whole step's file names them too)
        path = step.out / "results.json"
        return read_result(path, "--out", jobs.label_of(step)) if path.exists() else None
    doc = results.get(step.experiment)
    return doc.get(step.key) if step.key and isinstance(doc, dict) else doc


def reproduce_together(prepared: list[Prepared]) -> dict[str, dict]:
    """Every study's steps in one pool of workers (`reproduce all --jobs N`): one study's long
    step runs beside the others' steps instead of after them; then each study's claims."""
    n_jobs = min(run_jobs(prepared[0].cfg), sum(len(p.planned) for p in prepared)) or 1
    t_start = time.perf_counter()
    walls = jobs.run([lane(p) for p in prepared], n_jobs)
    elapsed = time.perf_counter() - t_start
    print(f"every study's steps: {elapsed:.0f} s elapsed with {n_jobs} jobs", file=sys.stderr)
    return {p.cfg.study: conclude(p, walls[p.cfg.study], elapsed, n_jobs, shared=True)
            for p in prepared}


def main(cfg: Config) -> dict:
    if cfg.jobs > 1:
        runtime.share_accelerator()  # before this process starts a backend beside its workers
    if cfg.study != ALL:
        if cfg.tiers and cfg.study in STUDIES and not STUDIES[cfg.study].tiers:
            having = [n for n, s in STUDIES.items() if s.tiers]
            raise ConfigError(f"--tiers: {cfg.study} trains no model tiers ({', '.join(having)} "
                              "does); drop --tiers")
        return reproduce(prepare(cfg))
    if cfg.only:
        raise ConfigError("--only: name experiments of one study (lgjax reproduce STUDY --only "
                          "...), not of all")
    studies = [n for n, s in STUDIES.items() if s.claims]
    check_writable(Path(cfg.out), "--out")
    # every study's checks (e.g. --tiers, run directories) before any of them runs
    prepared = [prepare(dataclasses.replace(cfg, study=name, out=str(Path(cfg.out) / name)))
                for name in studies]
    if max(p.jobs for p in prepared) > 1:
        done = reproduce_together(prepared)
    else:
        done = {p.cfg.study: reproduce(p) for p in prepared}
    text = reproduce_report.write_combined(done, cfg.out)
    print(text)
    return done
