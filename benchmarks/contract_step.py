"""A contract cell's training step, four ways in one process: the model computing every row of
its last block (as it did before) or the query row alone (`transformer.make_apply(...,
query_row=True)`, what contract-train runs), with the cell's seeds as one vmap (the `blocks`
strategy: 5 seeds are one block) or one after another (`lax.map`, contract-train's). The four
runners take turns, best chunk of each over the rounds; ratios against (every row, vmap), so
they hold on a shared machine. Also printed: how far the four are apart after the timed steps
from the same start (float summation order only; the model is the same function).

    python benchmarks/contract_step.py [--cells absolute_anchor/rope,ordered_update/ape]
                                       [--steps 20] [--rounds 3] [--out results/contract-step.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lgjax import runtime  # noqa: E402

runtime.split_cpu_into_devices()  # the devices every lgjax command uses

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from lgjax import train, transformer  # noqa: E402
from lgjax.bench.command import best_in_turns  # noqa: E402
from lgjax.studies.contract import train as contract  # noqa: E402

VARIANTS = (("every row", "blocks"), ("every row", "map"), ("query row", "blocks"),
            ("query row", "map"))


def runners(task: str, scheme: str):
    rc = contract.run_config(contract.Config(), task, scheme)
    out, make_apply = {}, transformer.make_apply
    for model, strategy in VARIANTS:
        row = model == "query row"
        transformer.make_apply = lambda *a, row=row, **k: make_apply(*a, **(k | {"query_row": row}))
        try:
            run = train.make_chunk_runner(rc, strategy=strategy)
            states = train.init_states(rc)
            t0 = time.perf_counter()
            jax.block_until_ready(run(states, jnp.int32(1)))  # traced here, with this model
            out[model, strategy] = (run, states, time.perf_counter() - t0)
        finally:
            transformer.make_apply = make_apply
    return rc, out


def measure(task: str, scheme: str, steps: int, rounds: int) -> dict:
    rc, runs = runners(task, scheme)
    S = len(rc.train.seeds)
    best = best_in_turns({k: lambda run=run, states=states: jax.block_until_ready(
        run(states, jnp.int32(steps))) for k, (run, states, _) in runs.items()}, rounds)
    ends = {k: run(states, jnp.int32(steps))[0].params for k, (run, states, _) in runs.items()}
    base = ends["every row", "blocks"]
    apart = {k: max(float(jnp.max(jnp.abs(a - b))) for a, b in
                    zip(jax.tree.leaves(p), jax.tree.leaves(base))) for k, p in ends.items()}
    ms = lambda s: 1e3 * s / (steps * S)
    ref = best["every row", "blocks"][0]
    return {"cell": f"{task}/{scheme}", "seeds": S, "steps": steps,
            "rows": [{"model": m, "seeds_as": s, "ms_per_seed_step": ms(best[m, s][0]),
                      "cpu_ms_per_seed_step": ms(best[m, s][1]), "speedup": ref / best[m, s][0],
                      "first_call_s": runs[m, s][2], "max_param_diff": apart[m, s]}
                     for m, s in VARIANTS]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", default="absolute_anchor/rope,ordered_update/ape")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="results/contract-step.json")
    a = ap.parse_args()
    t0 = time.perf_counter()
    res = [measure(*c.split("/"), a.steps, a.rounds) for c in a.cells.split(",")]
    for r in res:
        print(f"{r['cell']} ({r['seeds']} seeds, best of {a.rounds} chunks of {r['steps']} steps; "
              f"{len(jax.devices())} devices)")
        for row in r["rows"]:
            print(f"  {row['model']:9s} seeds as {row['seeds_as']:6s}: "
                  f"{row['ms_per_seed_step']:6.2f} ms per seed-step (CPU "
                  f"{row['cpu_ms_per_seed_step']:6.2f}), {row['speedup']:.2f}x; params apart "
                  f"by {row['max_param_diff']:.1e} after {r['steps']} steps")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"jax": jax.__version__, "devices": len(jax.devices()),
                               "cells": res, "seconds": time.perf_counter() - t0}, indent=1))
    print(f"wrote {out} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
