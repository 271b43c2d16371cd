"""maxmargin: does training converge in direction to the attention-SVM selector?

Runnable entry, the same as `lgjax maxmargin`: python experiments/maxmargin.py [flags].
Its published-scale command, runtime here and what it should show are in the docstring of
lgjax/studies/implicit_bias/maxmargin.py; `lgjax maxmargin --help` lists every flag.
"""

import sys

from lgjax.harness.cli import main

if __name__ == "__main__":
    sys.exit(main(["maxmargin", *sys.argv[1:]]))
