"""Table 1 / Figure: RoPE vs APE accuracy, peak height and selected offset vs length (K = 1).

Command (paper scale, ~1-2 min on a 2-core CPU including compile):
    lgjax multiseed --encodings rope,ape --K 1 --seeds 8 --steps 4000 --batch 256 \
        --train-lengths 8,16 --eval-lengths 12,16,20,24,32,40,48 --out results/multiseed
What it should show (docs/studies/implicit-bias.md): RoPE near 1.0 in range with a slow decline and
still well above chance (0.05) at 48; APE 1.0 in range and near chance from 20 on; RoPE's
selected offset equal to -K in every seed x length cell.
"""

import sys

from lgjax.harness.cli import main

if __name__ == "__main__":
    sys.exit(main(["multiseed", *sys.argv[1:]]))
