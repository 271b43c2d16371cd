"""linear: the same head with raw logits as attention weights (no exp, no normalisation).

Runnable entry, the same as `lgjax linear`: python experiments/linear.py [flags].
Its published-scale command, runtime here and what it should show are in the docstring of
lgjax/studies/implicit_bias/linear.py; `lgjax linear --help` lists every flag.
"""

import sys

from lgjax.harness.cli import main

if __name__ == "__main__":
    sys.exit(main(["linear", *sys.argv[1:]]))
