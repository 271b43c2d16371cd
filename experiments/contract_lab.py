"""contract-lab: which relations each stand-in positional scheme keeps and which it forgets.

Spec: contract.md, part 1 (no training). Six stand-in scores over the pinned content pair (Q, K),
four metrics each (lgjax.contracts): shift error of the pair (2, 7), out-of-table fraction,
collisions and monotonic breaks of score(0, d) over d = 1..test-1.
Command: lgjax contract-lab            (well under a second)
Expect: relative, RoPE (to float rounding), ALiBi and NoPE shift-invariant, sinusoidal and learned
not; learned undefined past its table ((test-train)/(test-1) of the distances); NoPE collides on
every pair, the clipped relative bias on every pair past the clip; ALiBi collides on none.

Runnable entry: python experiments/contract_lab.py [flags]  (the same as `lgjax contract-lab`)
"""

import sys

from lgjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["contract-lab", *sys.argv[1:]]))
