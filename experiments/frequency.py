"""frequency: the rotary base sets the kernel g(s) = sum_i cos(s theta_i); does selection hold?

Runnable entry, the same as `lgjax frequency`: python experiments/frequency.py [flags].
Its published-scale command, runtime here and what it should show are in the docstring of
lgjax/studies/implicit_bias/frequency.py; `lgjax frequency --help` lists every flag.
"""

import sys

from lgjax.harness.cli import main

if __name__ == "__main__":
    sys.exit(main(["frequency", *sys.argv[1:]]))
