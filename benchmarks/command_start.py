"""How long each command takes to start: a fresh process importing the CLI and building the
command's parser (what `lgjax COMMAND --help` does, and what every run of the command pays
before its first line of work), and which heavy libraries that start imported.

Each command is timed in fresh processes, RUNS times; with --trees A,B (two checkouts of
lgjax) the trees take turns, command by command, so machine drift falls on both alike. The
median of each is printed, and the B/A ratio where two trees are given.

    python benchmarks/command_start.py [--commands profile,contract-train] [--runs 5]
                                       [--trees /path/before,/path/after]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HEAVY = ("scipy.stats", "scipy.optimize", "scipy.special", "matplotlib.figure",
         "orbax.checkpoint", "flax.linen")
PROBE = """
import json, sys, time
t0 = time.perf_counter()
import lgjax.harness.cli as cli
cli.parser_for([{command!r}])
print(json.dumps({{"seconds": time.perf_counter() - t0,
                   "heavy": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def start(tree: Path, command: str) -> dict:
    """One fresh process in `tree` (its lgjax first on the path)."""
    out = subprocess.run([sys.executable, "-c", PROBE.format(command=command, heavy=HEAVY)],
                         cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commands", default="")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--trees", default=str(Path(__file__).resolve().parents[1]))
    a = ap.parse_args()
    trees = [Path(t).resolve() for t in a.trees.split(",")]
    sys.path.insert(0, str(trees[-1]))
    from lgjax.harness.cli import commands

    names = a.commands.split(",") if a.commands else list(commands())
    for name in names:
        seconds = {t: [] for t in trees}
        heavy = {}
        for _ in range(a.runs):
            for t in trees:
                r = start(t, name)
                seconds[t].append(r["seconds"])
                heavy[t] = r["heavy"]
        med = [statistics.median(seconds[t]) for t in trees]
        cols = "  ".join(f"{m:5.2f} s ({', '.join(heavy[t]) or '-'})" for m, t in zip(med, trees))
        ratio = f"  {med[-1] / med[0]:.2f}x" if len(trees) > 1 else ""
        print(f"{name:22s} {cols}{ratio}", flush=True)


if __name__ == "__main__":
    main()
