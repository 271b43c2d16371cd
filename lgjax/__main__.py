"""`python -m lgjax <command>`: the same as the `lgjax` script."""

import sys

from lgjax.harness.cli import main

sys.exit(main())
