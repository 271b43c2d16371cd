"""The realizability grid program against the ceiling its own matmuls set, in one run.

The grid's figure of merit was its share of the machine's fp32 matmul peak (square n = 1024
matmuls). Its matmuls are not square: at the study's shapes (batch 64 x L 20 rows, d = 64, an
MLP of 256, heads of 16-64) a matmul alone runs far below that peak. This benchmark measures the
ceiling those shapes allow: every dot_general of one training step (forward, backward, in the
step's own jaxpr, so nothing is modelled by hand) run alone, with the step's operand shapes and
dimension numbers, cell after cell as the grid lays its cells out (the serial layout, split over
the same devices), and nothing else: no sampling, LayerNorm, softmax, GELU, Adam or copies. If
every op but the matmuls were free, the grid would run at that speed.

Printed per tier and encoding, all timed in one process (best of --repeats chunks after a
warm-up, compilation excluded):
  grid        ms per cell-step of the grid program (the study's layout)
  matmuls     ms per cell-step of the step's matmuls alone (the ceiling)
  ratio       grid / matmuls (1.0: the grid is as fast as its matmuls allow)
  peak        the step's FLOP rate as a share of the n = 1024 matmul peak of the same run

    python benchmarks/grid_ceiling.py [--tiers 1L1H,2L4H] [--encodings rope,ape] [--steps 20]
                                      [--repeats 3] [--out results/grid-ceiling.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lgjax import runtime  # noqa: E402

runtime.split_cpu_into_devices()  # the devices every lgjax command uses

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from lgjax import grid, train, transformer  # noqa: E402
from lgjax.bench.command import best_chunk, matmul_peak  # noqa: E402
from lgjax.devices import place, shard_seeds  # noqa: E402
from lgjax.studies.realizability import train as rt  # noqa: E402


def step_dots(g: grid.Grid) -> list:
    """Every dot_general equation of one cell's training step (recursing into sub-jaxprs)."""
    cfg = g.cell_config(0)
    state = jax.tree.map(lambda x: x[0], grid.init_states(g))
    step = train.make_seed_step(cfg)
    found = []

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "dot_general":
                found.append(eqn)
            for v in eqn.params.values():
                for sub in v if isinstance(v, (tuple, list)) else (v,):
                    if isinstance(sub, jax.extend.core.ClosedJaxpr):
                        walk(sub.jaxpr)
                    elif isinstance(sub, jax.extend.core.Jaxpr):
                        walk(sub)

    walk(jax.make_jaxpr(step)(state).jaxpr)
    return found


def dot_flop(dots: list) -> float:
    """FLOP of the matmuls: 2 per multiply-add."""
    return float(sum(2 * math.prod(e.outvars[0].aval.shape) * math.prod(
        e.invars[0].aval.shape[d] for d in e.params["dimension_numbers"][0][0]) for e in dots))


def dots_runner(g: grid.Grid, dots: list):
    """jit(n_steps) running the step's matmuls alone for every cell, n_steps times: lax.map
    over the cells (the serial layout), split over the grid's devices. Each matmul's operands
    are arguments of their own (not constants: XLA would merge the matmuls of equal shapes and
    equal constant operands into one, as it did for a 2L4H step's layers) and pass an
    optimization barrier with the step counter each time, so no matmul is hoisted out of the
    loop; the outputs are the loop's carry, so none is dropped."""
    keys = jax.random.split(jax.random.key(0), len(dots))
    operands = tuple(tuple(jax.random.normal(jax.random.fold_in(k, i), v.aval.shape,
                                             v.aval.dtype) for i, v in enumerate(eqn.invars))
                     for k, eqn in zip(keys, dots))
    params = [dict(eqn.params) for eqn in dots]

    def one_cell(carry, ops, n_steps):
        def body(i, outs):
            new = []
            for (a, b), p in zip(ops, params):
                a, b, _ = jax.lax.optimization_barrier((a, b, i))
                new.append(jax.lax.dot_general(a, b, p["dimension_numbers"],
                                               precision=p["precision"],
                                               preferred_element_type=p["preferred_element_type"]))
            return tuple(new)

        return jax.lax.fori_loop(0, n_steps, body, carry)

    mesh = grid.cell_mesh(g)
    cells = math.prod(g.shape)
    carry_C = tuple(jnp.zeros((cells, *eqn.outvars[0].aval.shape), eqn.outvars[0].aval.dtype)
                    for eqn in dots)
    run = jax.jit(shard_seeds(lambda c, ops, n: jax.lax.map(lambda x: one_cell(x, ops, n), c),
                              mesh, n_replicated=2))
    carry_C = place(carry_C, mesh)
    return lambda _, n: run(carry_C, operands, n), carry_C


def grid_and_matmuls(g: grid.Grid, dots: list, steps: int, repeats: int) -> tuple:
    """((wall, CPU), (wall, CPU)): seconds of the best chunk of `steps` steps of the grid's
    training program, then of its matmuls alone (dots_runner)."""
    timed = best_chunk(grid.make_grid_runner(g), grid.init_states(g), steps, repeats)
    return timed, best_chunk(*dots_runner(g, dots), steps, repeats)


def measure(tier: str, encoding: str, steps: int, repeats: int, peak: float) -> dict:
    cfg = rt.Config()
    g = rt.program_grid(cfg, tier, encoding)
    cells = math.prod(g.shape)
    flop = transformer.flops_per_step(g.model, g.train.batch, g.train.lmax, cfg.vocab, cfg.vocab)
    dots = step_dots(g)
    flop_dots = dot_flop(dots)
    (grid_wall, grid_cpu), (mm_wall, mm_cpu) = grid_and_matmuls(g, dots, steps, repeats)
    per = lambda s: 1e3 * s / (steps * cells)
    return {"tier": tier, "encoding": encoding, "layout": g.layout, "cells": cells,
            "dots_per_step": len(dots), "gflop_per_cell_step": flop / 1e9,
            "dot_gflop_per_cell_step": flop_dots / 1e9,
            "grid_ms_wall": per(grid_wall), "grid_ms_cpu": per(grid_cpu),
            "matmuls_ms_wall": per(mm_wall), "matmuls_ms_cpu": per(mm_cpu),
            "ratio_wall": grid_wall / mm_wall, "ratio_cpu": grid_cpu / mm_cpu,
            "matmuls_gflops": flop_dots / (per(mm_wall) * 1e-3) / 1e9,
            "peak_fraction": flop / (per(grid_wall) * 1e-3) / 1e9 / peak}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiers", default="1L1H,2L4H")
    ap.add_argument("--encodings", default="rope,ape")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="results/grid-ceiling.json")
    a = ap.parse_args()
    t0 = time.perf_counter()
    peak = max(matmul_peak().values())
    rows = [measure(t, e, a.steps, a.repeats, peak) for t in a.tiers.split(",")
            for e in a.encodings.split(",")]
    print(f"matmul peak (n = 1024..4096) {peak:.0f} GFLOP/s; {len(jax.devices())} devices")
    print(f"{'tier':5s} {'encoding':9s} {'grid ms':>8s} {'matmuls ms':>11s} {'ratio':>6s} "
          f"{'matmul GFLOP/s':>15s} {'peak':>5s}  (per cell-step, wall; CPU ratio)")
    for r in rows:
        print(f"{r['tier']:5s} {r['encoding']:9s} {r['grid_ms_wall']:8.3f} "
              f"{r['matmuls_ms_wall']:11.3f} {r['ratio_wall']:6.2f} {r['matmuls_gflops']:15.0f} "
              f"{100 * r['peak_fraction']:4.0f}%  (CPU {r['ratio_cpu']:.2f})")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"peak_gflops": peak, "devices": len(jax.devices()),
                               "jax": jax.__version__, "rows": rows,
                               "seconds": time.perf_counter() - t0}, indent=1))
    print(f"wrote {out} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
