"""Benchmark of the grid runner: ms per (cell x seed)-step at each realizability tier, the
one-program runner (every task x seed of one encoding) against the cells trained one after
another (each task its own `lgjax.train` program over the seeds), and the fraction of this
machine's fp32 matmul peak measured in the same run.

Usage: python benchmarks/bench_grid.py [--steps 10] [--repeats 2] [--loop-tasks 2]
       [--tiers 1L1H,2L4H,4L4H] [--out results/bench-grid]
The loop is timed on --loop-tasks of the tasks (its cost per cell-step does not depend on which
task); both sides are timed as the least wall time of --repeats identical chunks after a warm-up
(compilation excluded), so machine noise only adds time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lgjax import grid, train, transformer  # noqa: E402
from lgjax.bench import matmul_peak  # noqa: E402
from lgjax.config import RunConfig  # noqa: E402
from lgjax.experiments import realizability_train as rt  # noqa: E402


def best_chunk(runner, states, steps: int, repeats: int) -> float:
    jax.block_until_ready(runner(states, jnp.int32(1)))  # compile and warm up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(runner(states, jnp.int32(steps)))
        best = min(best, time.perf_counter() - t0)
    return best


def time_program(g: grid.Grid, steps: int, repeats: int) -> float:
    T, S = g.shape
    seconds = best_chunk(grid.make_grid_runner(g), grid.init_states(g), steps, repeats)
    return 1e3 * seconds / (steps * T * S)


def time_loop(g: grid.Grid, steps: int, repeats: int, n_tasks: int) -> float:
    total = 0.0
    for t in range(n_tasks):
        cfg: RunConfig = g.cell_config(t)
        total += best_chunk(train.make_chunk_runner(cfg), train.init_states(cfg), steps, repeats)
    return 1e3 * total / (steps * n_tasks * g.shape[1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--loop-tasks", type=int, default=2)
    p.add_argument("--tiers", default="1L1H,2L4H,4L4H")
    p.add_argument("--encoding", default="rope")
    p.add_argument("--out", default="results/bench-grid")
    args = p.parse_args()
    cfg = rt.Config()
    peak = max(matmul_peak().values())
    rows = []
    for tier in args.tiers.split(","):
        g = rt.program_grid(cfg, tier, args.encoding)
        prog = time_program(g, args.steps, args.repeats)
        loop = time_loop(g, args.steps, args.repeats, args.loop_tasks)
        t = g.train
        flop = transformer.flops_per_step(g.model, t.batch, t.lmax, cfg.vocab, cfg.vocab)
        rows.append({"tier": tier, "cells": g.shape[0], "seeds": g.shape[1],
                     "ms_per_cell_step_program": prog, "ms_per_cell_step_loop": loop,
                     "gflop_per_cell_step": flop / 1e9,
                     "peak_fraction_program": flop / (prog * 1e-3) / 1e9 / peak,
                     "full_grid_minutes_program": prog * 1e-3 * 5 * g.shape[0] * g.shape[1]
                     * t.steps / 60})
        r = rows[-1]
        print(f"{tier}: program {prog:.2f} ms per cell-step, loop {loop:.2f} "
              f"(loop/program {loop / prog:.2f}x); {r['gflop_per_cell_step']:.3f} GFLOP per "
              f"cell-step = {100 * r['peak_fraction_program']:.0f}% of the {peak:.0f} GFLOP/s "
              f"matmul peak; the tier's 5-encoding grid at this rate: "
              f"{r['full_grid_minutes_program']:.0f} min", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_grid.json").write_text(json.dumps(
        {"rows": rows, "matmul_peak_gflops": peak, "encoding": args.encoding,
         "steps": args.steps, "repeats": args.repeats, "cpu_count": os.cpu_count(),
         "load_average": os.getloadavg(), "jax": jax.__version__}, indent=1))


if __name__ == "__main__":
    main()
