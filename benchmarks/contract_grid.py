"""Contract cells of one scheme trained as one grid program (lgjax.grid) against one after
another as contract-train trains them, and against two cells side by side on the two CPU
devices (one thread each), taking turns in one process. The cells given must share a
parameter shape (their tasks' vocabulary sizes: a grid's condition). Printed: wall and CPU ms per
cell-step (best chunk over the rounds), ratios against one after another, and how far each
way's parameters end from one after another's (float summation order only: each cell takes its
seeds' keys as alone).

    python benchmarks/contract_grid.py [--scheme rope] [--tasks absolute_anchor,offset_copy]
                                       [--steps 20] [--rounds 3] [--out results/contract-grid.json]

Where the gain comes from on a CPU: a cell's 5 seeds do not split over two devices, so it trains
on one; a grid whose cell count the device count divides trains on all of them, as do two cells
side by side.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lgjax import runtime  # noqa: E402

runtime.split_cpu_into_devices()  # the devices every lgjax command uses

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from lgjax import grid, train  # noqa: E402
from lgjax.bench.command import best_in_turns  # noqa: E402
from lgjax.studies.contract import train as contract  # noqa: E402


def ways(scheme: str, tasks: list[str]) -> tuple[dict, int]:
    """{way: (run(n_steps) -> [final states], first call s)} and the cell count."""
    rcs = [contract.run_config(contract.Config(), t, scheme) for t in tasks]
    out = {}
    t0 = time.perf_counter()
    cells = [(train.make_chunk_runner(rc), train.init_states(rc)) for rc in rcs]
    jax.block_until_ready([run(s, jnp.int32(1)) for run, s in cells])
    out["one after another"] = (lambda n: [run(s, n)[0] for run, s in cells],
                                time.perf_counter() - t0)
    if len(jax.devices()) > 1 and len(rcs) > 1:
        t0 = time.perf_counter()
        pinned = [(train.make_chunk_runner(rc, devices=1),
                   jax.device_put(train.init_states(rc), jax.devices()[i % 2]))
                  for i, rc in enumerate(rcs)]
        pool = ThreadPoolExecutor(2)

        def side_by_side(n):
            done = []
            for i in range(0, len(pinned), 2):
                done += list(pool.map(lambda c: jax.block_until_ready(c[0](c[1], n)[0]),
                                      pinned[i:i + 2]))
            return done

        jax.block_until_ready(side_by_side(jnp.int32(1)))
        out["two side by side"] = (side_by_side, time.perf_counter() - t0)
    for layout in ("tasks", "serial"):
        g = grid.Grid(tuple(rc.task for rc in rcs), rcs[0].model, rcs[0].train, layout=layout)
        t0 = time.perf_counter()
        run, states = grid.make_grid_runner(g), grid.init_states(g)
        jax.block_until_ready(run(states, jnp.int32(1)))
        out[f"grid, {layout} layout, {grid.cell_devices(g)} device(s)"] = (
            lambda n, run=run, states=states: [run(states, n)[0]], time.perf_counter() - t0)
    return out, len(rcs) * len(rcs[0].train.seeds)


def flat_params(states_list) -> dict:
    """Every cell's parameters stacked in cell order (task-major, seeds within)."""
    return jax.tree.map(lambda *x: jnp.concatenate(x), *[s.params for s in states_list])


def measure(scheme: str, tasks: list[str], steps: int, rounds: int) -> dict:
    runs, n_cells = ways(scheme, tasks)
    best = best_in_turns({k: lambda run=run: jax.block_until_ready(run(jnp.int32(steps)))
                          for k, (run, _) in runs.items()}, rounds)
    ends = {k: flat_params(jax.device_get(run(jnp.int32(steps)))) for k, (run, _) in runs.items()}
    base = ends["one after another"]
    apart = {k: max(float(jnp.max(jnp.abs(a - b))) for a, b in
                    zip(jax.tree.leaves(p), jax.tree.leaves(base))) for k, p in ends.items()}
    ms = lambda s: 1e3 * s / (steps * n_cells)
    ref = best["one after another"][0]
    return {"scheme": scheme, "tasks": tasks, "cells": n_cells, "steps": steps,
            "rows": [{"way": k, "ms_per_cell_step": ms(best[k][0]),
                      "cpu_ms_per_cell_step": ms(best[k][1]), "speedup": ref / best[k][0],
                      "first_call_s": runs[k][1], "max_param_diff": apart[k]} for k in runs]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scheme", default="rope")
    ap.add_argument("--tasks", default="absolute_anchor,offset_copy")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="results/contract-grid.json")
    a = ap.parse_args()
    t0 = time.perf_counter()
    r = measure(a.scheme, a.tasks.split(","), a.steps, a.rounds)
    print(f"{a.scheme}: {', '.join(r['tasks'])} ({r['cells']} cells, best of {a.rounds} chunks "
          f"of {a.steps} steps; {len(jax.devices())} devices)")
    for row in r["rows"]:
        print(f"  {row['way']:32s} {row['ms_per_cell_step']:6.2f} ms per cell-step (CPU "
              f"{row['cpu_ms_per_cell_step']:6.2f}), {row['speedup']:.2f}x; params apart by "
              f"{row['max_param_diff']:.1e}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"jax": jax.__version__, "devices": len(jax.devices()), **r,
                               "seconds": time.perf_counter() - t0}, indent=1))
    print(f"wrote {out} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
