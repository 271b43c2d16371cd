"""maxmargin: does training converge in direction to the attention-SVM selector?

Spec: implicit-bias.md (the max-margin view) and the controls issue. For a fixed sample of
training sequences (K = 2, lengths [8, 16]) the hard-margin selector W_mm is solved in the dual
(FISTA, lgjax.maxmargin) in the feature space the head sees at that checkpoint: APE z = E[s] + p_t
(W = wq wk^T), RoPE the lifted (A_i, B_i) with the trained embedding E[s] as x. Reported per
analysed checkpoint: cos(trained, W_mm), the solver's min margin, duality gap and KKT residual.
Then runs with weight decay on wq and wk (lambda decreasing towards 0): final cos(trained, W_mm).
Command: lgjax maxmargin        (~15 min here: each dual solve is a few seconds per seed)

Runnable entry: python experiments/maxmargin.py [flags]  (the same as `lgjax maxmargin`)
"""

import sys

from lgjax.cli import main

if __name__ == "__main__":
    sys.exit(main(["maxmargin", *sys.argv[1:]]))
