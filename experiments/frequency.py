"""frequency: the rotary base sets the kernel g(s) = sum_i cos(s theta_i); does selection hold?

Spec: implicit-bias.md, experiment `frequency` (measurement 9). RoPE bases {1e3, 1e4, 1e5} at
K = 2 (the study's setting), K = 1 as an extra row; 5 seeds, 4000 steps, batch 256; accuracy at
48 and the selected offset at 32 (and at every length). g is read from the encoding's own
positional-only kernel.
Command: lgjax frequency        (~3 min here)
Expect: selection at -K for every base, mild loss at the largest base.

Runnable entry: python experiments/frequency.py [flags]  (the same as `lgjax frequency`)
"""

import sys

from lgjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["frequency", *sys.argv[1:]]))
