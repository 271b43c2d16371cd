"""Benchmark of the grid runner: ms per (cell x seed)-step at each realizability tier, the
one-program runner (every task x seed of one encoding) against the cells trained one after
another (each task its own `lgjax.train` program over the seeds), and the fraction of this
machine's fp32 matmul peak measured in the same run.

Usage: python benchmarks/bench_grid.py [--steps 10] [--repeats 2] [--loop-tasks 2]
       [--tiers 1L1H,2L4H,4L4H] [--layouts tasks,serial] [--out results/bench-grid]
       [--d 64 --vocab 12 --tasks all --seeds 5]   (the main grid's shape; Table 7's scale check
       is --d 128 --vocab 64 --tasks core --seeds 2; --loop-tasks 0 skips the loop)
The loop is timed on --loop-tasks of the tasks (its cost per cell-step does not depend on which
task); both sides are timed as the least wall time of --repeats identical chunks after a warm-up
(compilation excluded), so machine noise only adds time. Both wall and process CPU time are
reported: on a shared CPU the wall time says what this run got, the CPU time what it cost.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lgjax import grid, train, transformer  # noqa: E402
from lgjax.bench.command import best_chunk, matmul_peak  # noqa: E402
from lgjax.bench.command import time_grid_program as time_program  # noqa: E402
from lgjax.config import RunConfig  # noqa: E402
from lgjax.studies.realizability import report as R  # noqa: E402
from lgjax.studies.realizability import train as rt  # noqa: E402


def matmul_peak_cpu(repeats: int = 5) -> float:
    """Best fp32 matmul rate per CPU-second (process time over all threads), n = 1024, 2048:
    the load-independent yardstick for the CPU-time columns."""
    square = jax.jit(lambda x: x @ x)
    best = 0.0
    for n in (1024, 2048):
        a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
        jax.block_until_ready(square(a))
        for _ in range(repeats):
            c0 = time.process_time()
            jax.block_until_ready(square(a))
            best = max(best, 2 * n**3 / (time.process_time() - c0) / 1e9)
    return best


def time_loop(g: grid.Grid, steps: int, repeats: int, n_tasks: int) -> tuple[float, float]:
    wall = cpu = 0.0
    for t in range(n_tasks):
        cfg: RunConfig = g.cell_config(t)
        w, c = best_chunk(train.make_chunk_runner(cfg), train.init_states(cfg), steps, repeats)
        wall, cpu = wall + w, cpu + c
    return tuple(1e3 * x / (steps * n_tasks * g.shape[1]) for x in (wall, cpu))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--loop-tasks", type=int, default=2)
    p.add_argument("--tiers", default="1L1H,2L4H,4L4H")
    p.add_argument("--encoding", default="rope")
    p.add_argument("--layouts", default="tasks,serial")
    p.add_argument("--out", default="results/bench-grid")
    p.add_argument("--d", type=int, default=rt.Config.d)
    p.add_argument("--vocab", type=int, default=rt.Config.vocab)
    p.add_argument("--tasks", default="all", help="all (the main grid's 10), core (its 7) or "
                   "a comma list")
    p.add_argument("--seeds", type=int, default=rt.Config.run.seeds)
    args = p.parse_args()
    tasks = {"all": rt.Config.tasks, "core": R.CORE_TASKS}.get(args.tasks)
    cfg = rt.Config(d=args.d, vocab=args.vocab,
                    tasks=tasks or tuple(args.tasks.split(",")),
                    run=dataclasses.replace(rt.Config.run, seeds=args.seeds))
    peak = max(matmul_peak().values())
    peak_cpu = matmul_peak_cpu()
    rows = []
    for tier in args.tiers.split(","):
        g = rt.program_grid(cfg, tier, args.encoding)
        t = g.train
        flop = transformer.flops_per_step(g.model, t.batch, t.lmax, cfg.vocab, cfg.vocab)
        row = {"tier": tier, "tasks": g.shape[0], "seeds": g.shape[1],
               "gflop_per_cell_step": flop / 1e9}
        timed = {f"program-{lay}": time_program(g, lay, args.steps, args.repeats)
                 for lay in args.layouts.split(",")}
        if args.loop_tasks:
            timed["loop"] = time_loop(g, args.steps, args.repeats, args.loop_tasks)
        for name, (wall, cpu) in timed.items():
            row[name] = {"ms_wall": wall, "ms_cpu": cpu,
                         "peak_fraction_wall": flop / (wall * 1e-3) / 1e9 / peak,
                         "peak_fraction_cpu": flop / (cpu * 1e-3) / 1e9 / peak_cpu,
                         "tier_grid_minutes_wall": wall * 1e-3 * 5 * g.shape[0] * g.shape[1]
                         * t.steps / 60}
            print(f"{tier} {name:15s} {wall:7.2f} ms wall, {cpu:7.2f} ms CPU per cell-step; "
                  f"{100 * row[name]['peak_fraction_wall']:3.0f}% of the {peak:.0f} GFLOP/s "
                  f"matmul peak (wall), {100 * row[name]['peak_fraction_cpu']:3.0f}% of the "
                  f"{peak_cpu:.0f} GFLOP per CPU-second one (CPU); {flop / 1e9:.3f} GFLOP per "
                  f"cell-step; the tier's "
                  f"5-encoding grid at this rate {row[name]['tier_grid_minutes_wall']:.0f} min",
                  flush=True)
        rows.append(row)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_grid.json").write_text(json.dumps(
        {"rows": rows, "matmul_peak_gflops": peak, "matmul_gflop_per_cpu_second": peak_cpu,
         "encoding": args.encoding, "d": args.d, "vocab": args.vocab,
         "tasks": list(cfg.tasks), "seeds": args.seeds,
         "steps": args.steps, "repeats": args.repeats, "cpu_count": os.cpu_count(),
         "load_average": os.getloadavg(), "jax": jax.__version__}, indent=1))


if __name__ == "__main__":
    main()
