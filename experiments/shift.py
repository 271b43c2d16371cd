"""shift: the double dissociation of mean attention in relative vs absolute coordinates.

Runnable entry, the same as `lgjax shift`: python experiments/shift.py [flags].
Its published-scale command, runtime here and what it should show are in the docstring of
lgjax/studies/implicit_bias/shift.py; `lgjax shift --help` lists every flag.
"""

import sys

from lgjax.harness.cli import main

if __name__ == "__main__":
    sys.exit(main(["shift", *sys.argv[1:]]))
