"""contract-lab: which relations each stand-in positional scheme keeps and which it forgets.

Runnable entry, the same as `lgjax contract-lab`: python experiments/contract_lab.py [flags].
Its published-scale command, runtime here and what it should show are in the docstring of
lgjax/studies/contract/lab.py; `lgjax contract-lab --help` lists every flag.
"""

import sys

from lgjax.harness.cli import main

if __name__ == "__main__":
    sys.exit(main(["contract-lab", *sys.argv[1:]]))
