"""A realizability grid's measurement with every length padded to the longest against each length
at its own size (`evaluate_grid(own_size=...)`), on the profile's rows: compilation (a first call
minus a warm one, the persistent compilation cache off) and measuring (the best warm call), both
ways taking turns in one process, and the padded token rows that `grid.OWN_SIZE_ROWS` is
compared with. Untrained parameters: the work does not depend on the values.

    python benchmarks/eval_padding.py [--encoding alibi] [--recipes quick,default] [--rounds 2]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from lgjax import grid
from lgjax.profile import instruments, recipes
from lgjax.studies.realizability import train as rtrain


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encoding", default="alibi")
    ap.add_argument("--recipes", default="quick,default")
    ap.add_argument("--rounds", type=int, default=2, help="warm calls per way")
    a = ap.parse_args()
    for name in a.recipes.split(","):
        recipe = recipes.RECIPES[name]
        cfg = instruments.rz_config(a.encoding, recipe, Path("unused"))
        g = next(iter(rtrain.runs(cfg).values()))
        lengths, n = rtrain.eval_lengths(cfg), cfg.run.eval_sequences
        params = grid.init_states(g).params
        rows = grid.padded_rows(g, lengths, n)
        print(f"{name}: {math.prod(g.shape)} cells x {n} sequences, lengths {lengths}; "
              f"{rows:,} padded token rows (own size past {grid.OWN_SIZE_ROWS:,}: "
              f"{'yes' if grid.reads_own_size(g, lengths, n) else 'no'})", flush=True)
        measure(g, params, lengths, n, a.rounds)


def measure(g, params, lengths, n: int, rounds: int) -> None:
    run = {own: (lambda own=own: grid.evaluate_grid(g, params, lengths, n, own_size=own))
           for own in (False, True)}
    first = {own: timed(run[own]) for own in (False, True)}
    warm = {False: [], True: []}
    for _ in range(rounds):
        for own in (False, True):
            warm[own].append(timed(run[own]))
    for own in (False, True):
        best, calls = min(warm[own]), ", ".join(f"{t:.2f}" for t in warm[own])
        print(f"  {'own size' if own else 'padded  '}: compiling {first[own] - best:5.2f} s, "
              f"measuring {best:5.2f} s (warm calls {calls})", flush=True)


if __name__ == "__main__":
    main()
