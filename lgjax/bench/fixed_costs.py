"""Where the Table-1 workload's wall time goes besides the training arithmetic (the README's first
command: multiseed, rope + ape, 8 seeds, batch 256, 7 lengths x 4096 evaluation sequences, 39
checkpoints per run), measured in one process: `lgjax bench` and
benchmarks/bench_fixed_costs.py.

The arithmetic is the steady rate (median ms per step over the 250-step chunks after a run's
first one) times the steps; everything else is a fixed cost, split into: the JAX/lgjax import (a
process of its own), program load (init, and the first chunk call less its steps at the steady
rate: tracing, lowering, compiling or loading the compiled program), checkpoint writes (orbax +
digests, counting the waits for the asynchronous writes), the metrics log, the evaluation, the
results/figure, and the rest. The timers wrap lgjax's own functions for the measurement's
duration and are removed afterwards.
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import jax

from lgjax import evaluate, train
from lgjax.checkpoints import RunDir, metrics
from lgjax.harness import study
from lgjax.harness.study import RunOptions, run_study
from lgjax.runtime import enable_compile_cache

WAIT = "of which waiting for the previous write"
IMPORT = "JAX and lgjax import (a process of its own)"
REST = "the rest (harness, run directories, preflight)"


@contextlib.contextmanager
def _wrapped(owner, name: str, wrap):
    original = getattr(owner, name)
    setattr(owner, name, wrap(original))
    try:
        yield
    finally:
        setattr(owner, name, original)


def _timer(seconds: dict, label: str):
    def wrap(original):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                seconds[label] += time.perf_counter() - t0
        return timed
    return wrap


def _chunk_timer(first: list, later: list):
    """Each chunk call's (steps, seconds), a run's first call apart (it loads the program)."""
    def wrap(make):
        def make_timed(*args, **kwargs):
            runner = make(*args, **kwargs)
            calls = []

            def run(states, n_steps):
                t0 = time.perf_counter()
                out = runner(states, n_steps)
                jax.block_until_ready(out[1])
                (later if calls else first).append((int(n_steps), time.perf_counter() - t0))
                calls.append(1)
                return out
            return run
        return make_timed
    return wrap


def import_seconds() -> float:
    t0 = time.perf_counter()
    code = "import jax, lgjax.harness.cli, lgjax.studies.implicit_bias.multiseed; jax.devices()"
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - t0


def measure(steps: int = 4000, cold: bool = False) -> dict:
    """The workload at `steps` in temporary folders; `cold`: with an empty compilation cache
    (which stays set for the rest of the process)."""
    from lgjax.studies.implicit_bias import multiseed

    seconds: dict[str, float] = defaultdict(float)
    first: list[tuple[int, float]] = []
    later: list[tuple[int, float]] = []
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as patches:
        if cold:
            enable_compile_cache(str(Path(tmp) / "cache"))
        patches.enter_context(_wrapped(train, "make_chunk_runner", _chunk_timer(first, later)))
        # a save first waits for the previous one: the wait is inside the save's time
        for owner, name, label in (
                (RunDir, "_finish_pending", WAIT),
                (RunDir, "save", "checkpoint writes (orbax + digests)"),
                (train, "init_states", "program load"),
                (metrics.Log, "add", "metrics log"),
                (evaluate, "evaluate", "evaluation"),
                (study, "write_outputs", "results, table and figure")):
            patches.enter_context(_wrapped(owner, name, _timer(seconds, label)))
        cfg = multiseed.Config(run=RunOptions(seeds=8, steps=steps, out=str(Path(tmp) / "out"),
                                              ckpt_root=str(Path(tmp) / "ck"), progress=False))
        t0 = time.perf_counter()
        run_study(multiseed.STUDY, cfg)
        wall = time.perf_counter() - t0
    per_step = statistics.median(s / n for n, s in later if n >= 100)
    runs = len(first)
    arithmetic = per_step * runs * steps
    first_load = sum(s - n * per_step for n, s in first)
    seconds["program load"] += first_load
    parts = dict(seconds)
    parts["chunk calls beyond the steady rate"] = (sum(s for _, s in later + first)
                                                   - arithmetic - first_load)
    parts[IMPORT] = import_seconds()
    accounted = arithmetic + sum(v for k, v in parts.items() if k not in (IMPORT, WAIT))
    parts[REST] = wall - accounted
    return {"steps": steps, "runs": runs, "seeds": 8, "cold_cache": cold, "wall_s": wall,
            "ms_per_step": per_step * 1e3, "arithmetic_s": arithmetic,
            "fixed_s": wall - arithmetic + parts[IMPORT], "parts_s": parts}


def format_lines(m: dict) -> list[str]:
    lines = [f"Table-1 workload, {m['steps']} steps, "
             f"{'empty' if m['cold_cache'] else 'warm'} compilation cache: wall "
             f"{m['wall_s']:.1f} s in the study (the import apart); steady "
             f"{m['ms_per_step']:.2f} ms per 8-seed step: arithmetic {m['arithmetic_s']:.1f} s; "
             f"everything else {m['fixed_s']:.1f} s"]
    for k, v in sorted(m["parts_s"].items(), key=lambda kv: -kv[1]):
        lines.append(f"  {('  ' if k == WAIT else '') + k:52s} {v:7.2f} s")
    return lines
