"""prop1: the low-rank carrier of the RoPE solution and the decay law of its peak attention.

Spec: implicit-bias.md, experiment `prop1` (measurements 3-5). RoPE, K in {1, 2, 3}, 5 seeds,
4000 steps, batch 256, train [8, 16]; peak heights at 12..48 for the decay fit.
Command: lgjax prop1            (~2-3 min here)
Expect: carrier fractions far above their value at initialisation (~1/m) and 1/d; carrier-only
profile peaking at -K for K >= 2 (K = 1 peaks at 0, the adjacent special case); a good linear
fit of 1/a*(L) on L-1.

Runnable entry: python experiments/prop1.py [flags]  (the same as `lgjax prop1`)
"""

import sys

from lgjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["prop1", *sys.argv[1:]]))
