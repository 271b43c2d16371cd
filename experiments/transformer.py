"""transformer: the bridge to a 2-layer, 4-head decoder on the full-sequence shift task.

Runnable entry, the same as `lgjax transformer`: python experiments/transformer.py [flags].
Its published-scale command, runtime here and what it should show are in the docstring of
lgjax/studies/implicit_bias/transformer.py; `lgjax transformer --help` lists every flag.
"""

import sys

from lgjax.harness.cli import main

if __name__ == "__main__":
    sys.exit(main(["transformer", *sys.argv[1:]]))
