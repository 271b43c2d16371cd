"""Where the Table-1 workload's wall time goes besides the training arithmetic (README's first
command: multiseed, rope + ape, 8 seeds x 4000 steps, batch 256, 7 lengths x 4096 evaluation
sequences, 39 checkpoints per run), measured in one process with a warm compilation cache.

    python benchmarks/bench_fixed_costs.py [STEPS] [--cold]   # default 4000; --cold: empty cache

The arithmetic is the steady rate (median ms per step over the 250-step chunks after the first
one) times the steps; everything else is a fixed cost, split into: the JAX/lgjax import (a
process of its own), program load (init, and the first chunk call less its steps at the
steady rate: tracing, lowering, compiling or loading the compiled program), checkpoint writes
(orbax + digests, counting the waits for the asynchronous writes), the metrics log, the
evaluation, the results/figure, and the rest.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import jax  # noqa: E402

from lgjax import evaluate, train  # noqa: E402
from lgjax.checkpoints import RunDir, metrics  # noqa: E402
from lgjax.harness import study  # noqa: E402
from lgjax.harness.study import RunOptions, run_study  # noqa: E402
from lgjax.runtime import enable_compile_cache  # noqa: E402
from lgjax.studies.implicit_bias import multiseed  # noqa: E402

SECONDS: dict[str, float] = defaultdict(float)
WAIT = "  of which waiting for the previous write"
CHUNKS: list[tuple[int, float]] = []  # (steps, seconds) of every chunk call after a run's first
FIRST: list[tuple[int, float]] = []  # the first chunk call of each run


def timed(owner, name: str, label: str):
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            SECONDS[label] += time.perf_counter() - t0

    setattr(owner, name, wrapper)


def timed_runner():
    make = train.make_chunk_runner

    def make_timed(*args, **kwargs):
        runner = make(*args, **kwargs)
        calls = []

        def run(states, n_steps):
            t0 = time.perf_counter()
            out = runner(states, n_steps)
            jax.block_until_ready(out[1])
            (FIRST if not calls else CHUNKS).append((int(n_steps), time.perf_counter() - t0))
            calls.append(1)
            return out

        return run

    train.make_chunk_runner = make_timed


def import_seconds() -> float:
    t0 = time.perf_counter()
    code = "import jax, lgjax.harness.cli, lgjax.studies.implicit_bias.multiseed; jax.devices()"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    return time.perf_counter() - t0


def main(steps: int, cold: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        enable_compile_cache(str(Path(tmp) / "cache") if cold else None)
        timed_runner()
        # a save first waits for the previous one: the wait is inside the save's time
        timed(RunDir, "_finish_pending", WAIT)
        timed(RunDir, "save", "checkpoint writes (orbax + digests)")
        timed(train, "init_states", "program load")
        timed(metrics.Log, "add", "metrics log")
        timed(evaluate, "evaluate", "evaluation")
        timed(study, "write_outputs", "results, table and figure")
        cfg = multiseed.Config(run=RunOptions(seeds=8, steps=steps, out=str(Path(tmp) / "out"),
                                              ckpt_root=str(Path(tmp) / "ck"), progress=False))
        t0 = time.perf_counter()
        run_study(multiseed, cfg)
        wall = time.perf_counter() - t0
    per_step = statistics.median(s / n for n, s in CHUNKS if n >= 100)
    chunk_total = sum(s for _, s in CHUNKS) + sum(s for _, s in FIRST)
    arithmetic = per_step * 2 * steps
    first_load = sum(s - n * per_step for n, s in FIRST)
    SECONDS["program load"] += first_load
    chunk_overhead = chunk_total - arithmetic - first_load
    parts = dict(SECONDS)
    parts["chunk calls beyond the steady rate"] = chunk_overhead
    parts["JAX and lgjax import (a process of its own)"] = import_seconds()
    accounted = arithmetic + sum(v for k, v in parts.items()
                                 if not k.startswith("JAX") and k != WAIT)
    parts["the rest (harness, run directories, preflight)"] = wall - accounted
    fixed = wall - arithmetic + parts["JAX and lgjax import (a process of its own)"]
    print(f"Table-1 workload, {steps} steps, {'cold' if cold else 'warm'} compilation cache: "
          f"wall {wall:.1f} s in the study (the import apart); steady "
          f"{per_step * 1e3:.2f} ms per 8-seed step: arithmetic {arithmetic:.1f} s; "
          f"everything else {fixed:.1f} s")
    for k, v in sorted(parts.items(), key=lambda kv: -kv[1]):
        print(f"  {k:52s} {v:7.2f} s")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(int(args[0]) if args else 4000, "--cold" in sys.argv)
