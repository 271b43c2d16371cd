"""transformer: the bridge to a 2-layer, 4-head decoder on the full-sequence shift task.

Spec: implicit-bias.md, row `transformer`. Reference: 2 layers, 4 heads, d = 192, MLP 4d GELU,
pre-LayerNorm, causal; out[i] = in[i-K], K = 3 (rows i < K unscored); train lengths [8, 16],
Adam lr 3e-4, batch 256, 8000 steps; evaluation at 12, 16, 24, 32, 48.
Command: lgjax transformer --encodings rope,ape --seeds 1 --steps 3000   (CPU: ~0.35 s/step)
Expect: RoPE per-token accuracy near 1.0 to 48; APE's tracks the in-range fraction of scored
rows (Lmax-K)/(L-K); a RoPE head's offset profiles at 16 and 48 coincide and peak at -K.

Runnable entry: python experiments/transformer.py [flags]  (the same as `lgjax transformer`)
"""

import sys

from lgjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["transformer", *sys.argv[1:]]))
