"""variants: other relative schemes, content-conditioned selection, carrier peaks, more heads.

Runnable entry, the same as `lgjax variants`: python experiments/variants.py [flags].
Its published-scale command, runtime here and what it should show are in the docstring of
lgjax/studies/implicit_bias/variants.py; `lgjax variants --help` lists every flag.
"""

import sys

from lgjax.harness.cli import main

if __name__ == "__main__":
    sys.exit(main(["variants", *sys.argv[1:]]))
