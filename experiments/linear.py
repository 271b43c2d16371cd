"""linear: the same head with raw logits as attention weights (no exp, no normalisation).

Spec: implicit-bias.md, experiment `linear`. RoPE, K = 2, 5 seeds, 4000 steps, batch 256,
trained on the same data as the softmax head (same seeds, same batches).
Command: lgjax linear           (~1 min here)
Expect: linear fits in range, near chance at 48, low carrier fraction.

Runnable entry: python experiments/linear.py [flags]  (the same as `lgjax linear`)
"""

import sys

from lgjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["linear", *sys.argv[1:]]))
