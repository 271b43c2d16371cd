"""Benchmark of the multi-seed training step (issue: performance). Same as `lgjax bench`.

Command: python benchmarks/bench_step.py [--steps 200] [--no-torch] [--no-table1]
Runtime here: ~3-4 min with the Table-1 run and the PyTorch reference (pip install '.[bench]').
Shows ms per seed-step for vmap / lax.map over seeds at S = 1, 8, 32, the same seeds trained one
after another, the PyTorch eager reference, the fp32 matmul peak and the Table-1 wall time.
"""

import sys

from lgjax.harness.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
