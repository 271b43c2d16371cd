"""Where a realizability grid program's time goes, op by op: a `jax.profiler` trace of STEPS
steps of one 1L1H program (every task x seed of one encoding), each XLA op's time summed and
classed by what its optimized HLO computes (matmul fusions, elementwise, reductions, copies...).

    python benchmarks/profile_grid.py [ENCODING] [STEPS]     # defaults: rope 20

Prints ms per cell-step without the profiler, then each class's share of the executed time
(the classes can add past 100%: ops of the two threads overlap) and the matmul fusions' rate.
"""

from __future__ import annotations

import collections
import glob
import gzip
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

DUMP = tempfile.mkdtemp(prefix="lgjax-hlo-")
os.environ["XLA_FLAGS"] = (f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={DUMP} "
                           "--xla_dump_hlo_as_text --xla_dump_hlo_module_re=.*run.*").strip()
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from lgjax import grid, transformer  # noqa: E402
from lgjax.bench.command import matmul_peak  # noqa: E402
from lgjax.studies.realizability import train as rt  # noqa: E402


def op_classes(hlo: str) -> dict[str, str]:
    """Each instruction of the optimized module: the class of what it (or its fusion) computes."""
    bodies = {m[1]: m[2] for m in re.finditer(r"\n%?([\w.\-]+) \(.*?\) -> .*? \{\n(.*?)\n\}",
                                              hlo, re.S)}
    out = {}
    for m in re.finditer(r"%?([\w.\-]+) = \S+ ([a-z\-]+)\(.*?\)(.*)", hlo):
        name, op, rest = m.groups()
        calls = re.search(r"calls=%?([\w.\-]+)", rest)
        ops = set(re.findall(r"= \S+ ([a-z\-]+)\(", bodies.get(calls[1], ""))) if calls else set()
        ops = ops or {op}
        out.setdefault(name, "matmul fusions" if "dot" in ops else
                       "GELU (tanh)" if "tanh" in ops else
                       "softmax, cross-entropy (exp, log)" if ops & {"exponential", "log"} else
                       "transposes and copies" if ops & {"transpose", "copy"}
                       and not ops & {"multiply", "add"} else
                       "control flow (while, conditional)" if op in ("while", "conditional") else
                       "reductions (LayerNorm, sums)" if "reduce" in ops else
                       "other elementwise")
    return out


def main(encoding: str, steps: int) -> None:
    cfg = rt.Config()
    g = rt.program_grid(cfg, "1L1H", encoding)
    gflop = transformer.flops_per_step(g.model, g.train.batch, g.train.lmax, cfg.vocab,
                                       cfg.vocab) / 1e9  # per cell-step, as bench_grid counts
    runner, states = grid.make_grid_runner(g, "tasks"), grid.init_states(g)
    jax.block_until_ready(runner(states, jnp.int32(1)))
    cells = len(g.tasks) * len(g.train.seeds)
    t0 = time.perf_counter()
    jax.block_until_ready(runner(states, jnp.int32(steps)))
    ms = (time.perf_counter() - t0) / steps / cells * 1e3
    trace_dir = tempfile.mkdtemp(prefix="lgjax-trace-")
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
        jax.block_until_ready(runner(states, jnp.int32(steps)))
    events = json.load(gzip.open(glob.glob(f"{trace_dir}/**/*.trace.json.gz", recursive=True)[0]))
    events = events["traceEvents"] if isinstance(events, dict) else events
    hlo = Path(glob.glob(f"{DUMP}/*jit_run*cpu_after_optimizations.txt")[0]).read_text()
    classes = op_classes(hlo)
    us = collections.Counter()
    total = 0.0
    for e in events:
        if e.get("ph") != "X":
            continue
        if e["name"] == "ThunkExecutor::Execute (wait for completion)":
            total += e["dur"]
        elif e["name"].startswith("SlinkyThreadPool::Await"):
            us["thread-pool waits"] += e["dur"]
        elif e["name"] in classes:
            us[classes[e["name"]]] += e["dur"]
    peak = max(matmul_peak().values())
    print(f"1L1H {encoding}: {ms:.2f} ms per cell-step without the profiler "
          f"({gflop / ms * 1e3:.0f} GFLOP/s, "
          f"{100 * gflop / ms * 1e3 / peak:.0f}% of the {peak:.0f} "
          f"GFLOP/s matmul peak measured now); executed under the profiler: "
          f"{total / 1e3:.0f} ms")
    for name, t in us.most_common():
        print(f"  {name:36s} {t / 1e3:8.1f} ms  {100 * t / total:5.1f}%")
    mm = us["matmul fusions"] / 1e6 / (steps * cells)  # seconds per cell-step
    print(f"matmul fusions: {gflop / mm:.0f} GFLOP/s "
          f"({100 * gflop / mm / peak:.0f}% of the peak), counting every "
          "FLOP of the step as theirs")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(args[0] if args else "rope", int(args[1]) if len(args) > 1 else 20)
