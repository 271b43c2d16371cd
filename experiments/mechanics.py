"""mechanics: margin bound, dynamics of the carrier, APE pinning vs weight decay, sweeps.

Runnable entry, the same as `lgjax mechanics`: python experiments/mechanics.py [flags].
Its published-scale command, runtime here and what it should show are in the docstring of
lgjax/studies/implicit_bias/mechanics.py; `lgjax mechanics --help` lists every flag.
"""

import sys

from lgjax.harness.cli import main

if __name__ == "__main__":
    sys.exit(main(["mechanics", *sys.argv[1:]]))
