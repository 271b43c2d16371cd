"""mechanics: margin bound, dynamics of the carrier, APE pinning vs weight decay, sweeps.

Spec: implicit-bias.md, experiment `mechanics` (measurements 6-8, 10).
 (a) RoPE, K = 2, 5 seeds: bound 1/(1+(L-1)e^{-mu}) from the measured margin vs the observed
     mean attention at -K, by length;
 (b) carrier fraction and top-1 SV energy over training, read from (a)'s checkpoints;
 (c) APE with weight decay lambda in {0, 1e-4, 1e-2} on the table, 3 seeds: out-of-range
     accuracy, pin location, in-range vs out-of-range row norms, and the inference-time fixes
     (interpolation, clamp-to-last, index rescaling);
 (d) one-seed sweeps of d, m, training range and tau (RoPE, K = 2): carrier fraction, decay fit.
Command: lgjax mechanics        (~6-8 min here)
Expect: bound valid but loose; carrier and rank concentration appear together early, then
plateau; APE out-of-range accuracy near chance for every lambda and every fix.

Runnable entry: python experiments/mechanics.py [flags]  (the same as `lgjax mechanics`)
"""

import sys

from lgjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["mechanics", *sys.argv[1:]]))
