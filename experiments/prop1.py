"""prop1: the low-rank carrier of the RoPE solution and the decay law of its peak attention.

Runnable entry, the same as `lgjax prop1`: python experiments/prop1.py [flags].
Its published-scale command, runtime here and what it should show are in the docstring of
lgjax/studies/implicit_bias/prop1.py; `lgjax prop1 --help` lists every flag.
"""

import sys

from lgjax.harness.cli import main

if __name__ == "__main__":
    sys.exit(main(["prop1", *sys.argv[1:]]))
