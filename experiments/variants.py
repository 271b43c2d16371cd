"""variants: other relative schemes, content-conditioned selection, carrier peaks, more heads.

Spec: implicit-bias.md, experiment `variants`. 5 seeds, 4000 steps, batch 256 everywhere.
 (a) ALiBi, T5-style bias and RoPE at K in {1, 2}: accuracy by length and selected offset;
 (b) two_offset (the query's mode token picks K0 = 1 or K1 = 3), H = 1 and H = 2: in-range
     accuracy and the mode-conditioned carrier profile peaks (W_Q E[mode])^T R_delta m_K;
 (c) carrier-only profile peaks for K in {2, 3, 4, 5} (RoPE);
 (d) H = 1 vs H = 4 at d = 64: per-head top-1 SV energy of W and peak attention by length.
Command: lgjax variants         (~6 min here)
Expect: ALiBi solves K = 1 but picks -1 at K = 2; T5 selects any K but decays faster; more
heads dilute more.

Runnable entry: python experiments/variants.py [flags]  (the same as `lgjax variants`)
"""

import sys

from lgjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["variants", *sys.argv[1:]]))
