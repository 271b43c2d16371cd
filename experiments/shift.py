"""shift: the double dissociation of mean attention in relative vs absolute coordinates.

Spec: implicit-bias.md, experiment `shift`. RoPE and APE, K = 1, 8 seeds, 4000 steps; mean
attention over 4096 sequences at lengths 16, 24, 32, 48. Reuses the `multiseed` runs of the same
config (checkpoints/multiseed-K1/<encoding>) when they are finished, else trains them.
Command: lgjax shift            (~1-2 min here; seconds if multiseed ran)
Expect: RoPE curves coincide in relative coordinates, APE curves in absolute ones.

Runnable entry: python experiments/shift.py [flags]  (the same as `lgjax shift`)
"""

import sys

from lgjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["shift", *sys.argv[1:]]))
