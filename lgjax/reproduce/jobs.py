"""A reproduction's steps several at a time, each in a worker process (`reproduce --jobs N`),
on a CPU or sharing one GPU.

At the quick scale on a CPU a step is bound by tracing, compiling and dispatching small programs,
work that keeps about one core busy (measured: `reproduce implicit-bias --quick` used 197 s of
CPU in 176 s of wall time on a 2-core machine), so the other cores idle unless another step
runs beside it. Workers are started once (spawned: the parent may already hold a JAX backend,
which does not survive a fork) and take steps in plan order, under two rules:
- steps that name the same run directory never run at once (the second would find it locked),
  and run in plan order (a long step split into pieces, `reproduce.command.pieces`, comes after
  them and reads what they saved);
  steps that train the same config preferably not (run one after the other, the second reads the
  first's finished run as its twin, lgjax.checkpoints.twins, instead of training it again), but
  rather than leave a worker idle they do, and each trains its own copy: the same numbers;
- a step that trains nothing of its own and reads what others wrote (a report command) waits for
  every step before it, and the steps after it wait for it.
A worker's stdout and stderr go to files that are shown, whole, as its step ends, so what is
printed reads as a serial run's would. A worker's expected failure (bad input, a damaged
checkpoint) comes back as its one line; anything else ends the reproduction after the running
steps end.
"""

from __future__ import annotations

import concurrent.futures as futures
import contextlib
import dataclasses
import importlib
import multiprocessing
import os
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from lgjax.errors import EXPECTED, Preempted, Relayed, one_line, runtime_failure


@dataclass(frozen=True)
class Claim:
    """What a step holds while it runs: run directories (exclusive) and configs (preferred)."""

    dirs: frozenset[str]
    configs: frozenset[str]
    barrier: bool  # trains nothing of its own: runs after its study's earlier steps, alone in it
    study: str = ""  # a barrier orders only its own study's steps (`reproduce all --jobs N`)


@dataclass(frozen=True)
class Lane:
    """One study's steps in a pool: where its workers' logs go, which of its experiments start
    first (its longest)."""

    study: str
    steps: list
    logs: Path
    first: tuple[str, ...] = ()


def claim_of(step, study: str = "") -> Claim:
    if not hasattr(step.module, "STUDY"):
        return Claim(frozenset(), frozenset(), barrier=True, study=study)
    from lgjax.harness.study import options

    runs = step.module.STUDY.runs(step.config)
    root = Path(options(step.config).ckpt_root)
    return Claim(frozenset(os.path.abspath(root / name) for name in runs),
                 frozenset(rc.to_json() for rc in runs.values()), barrier=False, study=study)


def next_step(pending: list[int], running: list[int], claims: list[Claim],
              rank: list[int]) -> int | None:
    """The pending step to start beside the running ones (steps are numbered in plan order),
    the lowest rank first: one that shares no config with them if there is such a step, else
    one that shares only configs. Within a study a barrier waits for every step before it, and
    the steps after it wait for it; other studies' steps pass it."""
    active = set(pending) | set(running)
    held = [claims[i] for i in running]

    def ready(i: int) -> bool:
        # a run directory is held by one step at a time, taken in plan order (a step after
        # its pieces)
        if any(claims[j].dirs & claims[i].dirs for j in active if j < i or j in running):
            return False
        same = [j for j in active if j < i and claims[j].study == claims[i].study]
        if claims[i].barrier:
            return not same
        return not any(claims[j].barrier for j in same)

    free = []
    for i in sorted((i for i in pending if ready(i)), key=lambda i: rank[i]):
        if not any(claims[i].configs & c.configs for c in held):
            return i
        free.append(i)
    return free[0] if free else None


def lane_ranks(lanes: list[Lane]) -> list[int]:
    """Start order over the lanes' steps, numbered lane after lane: each lane's longest in the
    order its `first` names them (every lane's first-named, then every lane's second, ...), then
    plan order, lane by lane."""
    keys = []
    for n, lane in enumerate(lanes):
        at = {name: j for j, name in enumerate(lane.first)}
        keys += [(0, at[s.experiment], n, i) if s.experiment in at else (1, 0, n, i)
                 for i, s in enumerate(lane.steps)]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return [order.index(i) for i in range(len(keys))]


def run_step(step) -> None:
    """One step, in this process. Under --resume a study command whose results this code wrote
    from finished runs is not run again (lgjax.harness.study.finished_result)."""
    if hasattr(step.module, "STUDY"):  # a study command (lgjax.harness.study.Study)
        from lgjax.harness.study import finished_result, options, out_dir, run_study

        study = step.module.STUDY
        if options(step.config).resume and finished_result(study, step.config):
            done = out_dir(study, step.config) / "results.json"
            print(f"lgjax: {label_of(step)}: its runs are finished and this code wrote {done} "
                  "for this config: reused, not measured again", file=sys.stderr)
            return
        run_study(study, step.config)
    else:
        step.module.main(step.config)


def label_of(step) -> str:
    return (step.experiment + (f" {step.key}" if step.key else "")
            + (f" [{step.piece}]" if step.piece else ""))


def log_paths(logs: Path, step) -> tuple[Path, Path]:
    stem = label_of(step).replace(" ", "_").replace("/", "_")
    return logs / f"{stem}.out", logs / f"{stem}.err"


def run(lanes: list[Lane], jobs: int) -> dict[str, dict[str, float]]:
    """Every lane's steps, `jobs` at a time in worker processes, each lane's longest started
    first: {study: {label: seconds}}, each in plan order."""
    from lgjax import plugins  # the parent's plugins are the workers' too

    steps = [s for lane in lanes for s in lane.steps]
    lane_of = [lane for lane in lanes for _ in lane.steps]
    claims = [claim_of(s, lane.study) for s, lane in zip(steps, lane_of)]
    rank = lane_ranks(lanes)
    for lane in lanes:
        lane.logs.mkdir(parents=True, exist_ok=True)
    cache = _cache_dir()
    context = multiprocessing.get_context("spawn")
    pending, running, walls = list(range(len(steps))), {}, {}
    failure = None
    with futures.ProcessPoolExecutor(jobs, mp_context=context, initializer=_setup,
                                     initargs=(list(plugins.LOADED), cache)) as pool, \
            _stopping_workers(pool):
        while pending or running:
            while failure is None and len(running) < jobs:
                i = next_step(pending, list(running.values()), claims, rank)
                if i is None:
                    break
                pending.remove(i)
                print(f"== {lane_of[i].study}: {label_of(steps[i])} (started)", file=sys.stderr)
                # modules do not pickle: the worker imports the step's by name
                portable = dataclasses.replace(steps[i], module=steps[i].module.__name__)
                logs = log_paths(lane_of[i].logs, steps[i])
                running[pool.submit(_run_step, portable, *map(str, logs))] = i
            if not running:
                break
            done, _ = futures.wait(running, return_when=futures.FIRST_COMPLETED)
            for fut in done:
                i = running.pop(fut)
                outcome = fut.result()  # a dead worker raises BrokenProcessPool here
                _show(steps[i], lane_of[i].logs, lane_of[i].study, outcome)
                if outcome[0] == "ok":
                    walls[i] = outcome[1]
                elif failure is None:
                    failure = outcome
    if failure is not None:
        if failure[0] == "expected":
            raise Relayed(failure[1], int(failure[2]))
        raise RuntimeError(f"a step of the reproduction failed (its traceback is above): "
                           f"{failure[1]}")
    return {lane.study: {label_of(steps[i]): walls[i] for i in range(len(steps))
                         if lane_of[i] is lane and i in walls} for lane in lanes}


@contextlib.contextmanager
def _stopping_workers(pool):
    """A stop signal that reached this process alone (`kill PID`; a scheduler signals every
    process) is passed on to the workers, so each stops its step at a chunk boundary with a
    checkpoint before the pool is shut down, rather than training it to the end."""
    try:
        yield
    except Preempted:
        import signal

        for proc in list(getattr(pool, "_processes", None) or {}):
            with contextlib.suppress(OSError):
                os.kill(proc, signal.SIGTERM)
        raise


def _show(step, logs: Path, study: str, outcome: tuple) -> None:
    out, err = log_paths(logs, step)
    status = f"{outcome[1]:.0f} s" if outcome[0] == "ok" else "failed"
    print(f"== {study}: {label_of(step)} ({status})", file=sys.stderr)
    sys.stderr.write(err.read_text(errors="replace"))
    sys.stderr.flush()
    sys.stdout.write(out.read_text(errors="replace"))
    sys.stdout.flush()


def _cache_dir() -> str | None:
    import jax

    return jax.config.jax_compilation_cache_dir


def _setup(plugin_modules: list[str], cache: str | None) -> None:
    """A worker starts as the CLI does: plugins first, the CPU split, the same cache; on a GPU
    it shares the device with the other workers."""
    from lgjax import plugins, preemption, runtime

    preemption.install(defer=True)  # a stop signal ends the step at a chunk boundary, saved
    runtime.share_accelerator()
    plugins.load(plugin_modules)
    runtime.split_cpu_into_devices()
    if cache:
        runtime.enable_compile_cache(cache)


def _run_step(step, out_path: str, err_path: str) -> tuple:
    """In a worker: ("ok", seconds), ("expected", line, exit code) or ("crash", line)."""
    step = dataclasses.replace(step, module=importlib.import_module(step.module))
    t0 = time.perf_counter()
    with open(out_path, "w") as out, open(err_path, "w") as err, _redirected(out, err):
        try:
            run_step(step)
        except Preempted as e:  # stopped and saved: the parent exits 75 with this line
            return ("expected", str(e), e.exit_code)
        except Exception as e:  # noqa: BLE001 -- sent back to the parent as one line
            failure = (one_line(e), 2) if isinstance(e, EXPECTED) else runtime_failure(e)
            if failure is not None:
                return ("expected", *failure)
            traceback.print_exc()
            return ("crash", f"{label_of(step)}: {type(e).__name__}: {e}".splitlines()[0])
    return ("ok", time.perf_counter() - t0)


@contextlib.contextmanager
def _redirected(out, err):
    """The process's own stdout and stderr (file descriptors 1 and 2, so XLA's C++ logging
    too) into the step's files for the step's duration."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
