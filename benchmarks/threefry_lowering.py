"""Threefry on a CPU as JAX lowers it (a loop of 5 iterations) against unrolled (what lgjax.keys
registers), taking turns in one process on the programs lgjax trains: the realizability grid's
1L1H and 2L4H programs (every task x seed of one encoding, the serial layout), the Table-1
multiseed step (8 seeds) and a contract cell (5 seeds, query row). Each pair is built from the
same states; printed per program: ms per cell- or seed-step of each (median over the rounds),
their ratio, and whether the two ended bitwise equal.

    python benchmarks/threefry_lowering.py [--programs grid-1L1H,multiseed] [--rounds 5]
                                           [--out results/threefry-lowering.json]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lgjax import runtime  # noqa: E402

runtime.split_cpu_into_devices()  # the devices every lgjax command uses

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax._src.random import threefry2x32 as threefry  # noqa: E402
from jax.interpreters import mlir  # noqa: E402

from lgjax import grid, train  # noqa: E402
from lgjax.bench.command import reference_config  # noqa: E402

ROLLED = threefry._threefry2x32_cpu_lowering_rule  # JAX's own CPU rule
UNROLLED = threefry._threefry2x32_lowering_rule  # its rule for every other platform


def program(name: str):
    """(runner, states, cells or seeds per step, steps per timed chunk)."""
    if name.startswith("grid-"):
        from lgjax.studies.realizability import train as realizability
        g = realizability.program_grid(realizability.Config(), name[5:], "rope")
        return grid.make_grid_runner(g, "serial"), grid.init_states(g), math.prod(g.shape), 20
    if name == "multiseed":
        rc = reference_config("rope", tuple(range(8)))
        return train.make_chunk_runner(rc), train.init_states(rc), len(rc.train.seeds), 500
    if name == "contract":
        from lgjax.studies.contract import train as contract
        rc = contract.run_config(contract.Config(), "absolute_anchor", "rope")
        return train.make_chunk_runner(rc), train.init_states(rc), len(rc.train.seeds), 20
    raise SystemExit(f"--programs: unknown {name!r}; use grid-1L1H, grid-2L4H, multiseed or "
                     "contract")


def built(name: str, rule) -> tuple:
    """The program traced and compiled under `rule` (the lowering is read at the first call)."""
    mlir.register_lowering(threefry.threefry2x32_p, rule, platform="cpu")
    run, states, n, steps = program(name)
    t0 = time.perf_counter()
    out = jax.block_until_ready(run(states, jnp.int32(steps)))
    return run, states, n, steps, out, time.perf_counter() - t0


def measure(name: str, rounds: int) -> dict:
    rolled, unrolled = built(name, ROLLED), built(name, UNROLLED)
    equal = all(bool(jnp.array_equal(a, b)) for a, b in
                zip(jax.tree.leaves(rolled[4]), jax.tree.leaves(unrolled[4])))
    ms = {"rolled": [], "unrolled": []}
    for _ in range(rounds):
        for key, (run, states, n, steps, *_) in (("rolled", rolled), ("unrolled", unrolled)):
            t0 = time.perf_counter()
            jax.block_until_ready(run(states, jnp.int32(steps)))
            ms[key].append(1e3 * (time.perf_counter() - t0) / (steps * n))
    med = {k: statistics.median(v) for k, v in ms.items()}
    return {"program": name, "ms_per_step": ms, "median": med,
            "ratio": med["rolled"] / med["unrolled"], "bitwise_equal": equal,
            "first_call_s": {"rolled": rolled[5], "unrolled": unrolled[5]}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", default="grid-1L1H,grid-2L4H,multiseed,contract")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default="results/threefry-lowering.json")
    args = ap.parse_args()
    rows = []
    for name in args.programs.split(","):
        r = measure(name, args.rounds)
        rows.append(r)
        print(f"{name:10s} rolled {r['median']['rolled']:.3f} ms, unrolled "
              f"{r['median']['unrolled']:.3f} ms per step and cell/seed: "
              f"{r['ratio']:.3f}x; bitwise equal: {r['bitwise_equal']}", flush=True)
    mlir.register_lowering(threefry.threefry2x32_p, UNROLLED, platform="cpu")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"devices": jax.device_count(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
