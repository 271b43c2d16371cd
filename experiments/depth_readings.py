"""Table 4's depth tiers: Spearman rho(alpha_L, LG) over the learnable cells and its 95% cluster
bootstrap interval, per tier, under the claims file's reading (the main grid's 7 tasks) and over
all 10 tasks, side by side, with the learnable cells each reading keeps (seed-mean alpha_L and
LG per (encoding, task) over the evaluated lengths) and whether the interval includes 0.

    python experiments/depth_readings.py REPORT    # REPORT: a realizability-report --out folder
                                                   # (its report.json, made with --alpha)

The statistics are the claims checker's (lgjax.studies.realizability.claims.tier_stats: the
report's tier_stats at its own thresholds and resamples). Measured:
docs/studies/differences/realizability.md.
"""
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from lgjax.studies.realizability import claims as C
from lgjax.studies.realizability import report as R

READINGS = {"7 tasks (the claims file's)": C.CORE, "all 10 tasks": None}


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: python experiments/depth_readings.py REPORT")
    rep = json.loads((Path(sys.argv[1]) / "report.json").read_text())
    if not rep.get("alpha"):
        raise SystemExit(f"{sys.argv[1]}: the report ran without alpha results (--alpha)")
    results = {"realizability-report": rep}
    for tier in dict.fromkeys(r["tier"] for r in rep["rows"]):
        for name, tasks in READINGS.items():
            s = C.tier_stats(results, tier, tasks)
            lo, hi = s["rho_ci"]
            verdict = ("undefined" if not np.isfinite([s["rho"], lo, hi]).all() else
                       "includes 0" if lo <= 0 <= hi else "excludes 0")
            print(f"{tier}, {name}: rho {s['rho']:.3f} [{lo:.3f}, {hi:.3f}] over "
                  f"{s['learnable_cells']} learnable of {s['cells']} cells; the interval: "
                  f"{verdict}")
        cells = defaultdict(list)
        for r in R.seed_means([r for r in rep["rows"] if r["tier"] == tier]):
            if r["train_acc"] > rep["thresholds"]["learnable"]:
                cells[(r["encoding"], r["task"])].append((r["alpha"], r["lg"]))
        for (enc, task), al in sorted(cells.items()):
            a, g = np.array(al).T
            core = "" if task in C.CORE else " (not in the 7)"
            print(f"  {enc:>10s} {task:>9s}{core}: alpha_L {' '.join(f'{x:.2f}' for x in a)}"
                  f" | LG {' '.join(f'{x:.2f}' for x in g)}")


if __name__ == "__main__":
    main()
