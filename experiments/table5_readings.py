"""Table 5's 75 rows: the row count of each candidate reading of the study's "1L1H setting", and
the three kernel fits' Spearman / Pearson against seed-mean LG under each.

    python experiments/table5_readings.py OUT    # OUT: lgjax reproduce realizability's --out
"""
import itertools
import json
import sys

import numpy as np

from lgjax.studies.realizability import stats
from lgjax.studies.realizability.claims import CORE, FITS, alpha_at

out = sys.argv[1]
results = {"realizability-alpha": json.load(open(f"{out}/realizability-alpha/results.json")),
           "realizability-report": json.load(open(f"{out}/realizability-report/report.json"))}
cells = [c for c in results["realizability-report"]["cells"] if c["tier"] == "1L1H"]
th = results["realizability-report"]["thresholds"]["learnable"]
lengths = sorted({c["L"] for c in cells})


def corr(rows, fit):
    a = np.array([alpha_at(results, c["L"], c["encoding"], c["task"], FITS[fit]) for c in rows])
    g = np.array([c["lg"] for c in rows])
    p = float(np.corrcoef(a, g)[0, 1]) if a.std() and g.std() else float("nan")
    return stats.spearman(a, g), p


readings = {
    "learnable cells of the 7 tasks x 5 lengths": lambda c: c["task"] in CORE
    and c["train_acc"] > th,
    "every cell of the 7 tasks x 5 lengths": lambda c: c["task"] in CORE,
    "learnable cells of all 10 tasks x 5 lengths": lambda c: c["train_acc"] > th}
for trip in itertools.combinations(lengths, 3):
    readings[f"learnable cells of all 10 tasks x L in {trip}"] = \
        lambda c, t=trip: c["train_acc"] > th and c["L"] in t
print("learnable cells:",
      sorted({(c["encoding"], c["task"]) for c in cells if c["train_acc"] > th}))
for name, keep in readings.items():
    rows = [c for c in cells if keep(c)]
    fits = "; ".join(f"{f} {s:.3f} / {p:.3f}" for f in FITS for s, p in [corr(rows, f)])
    print(f"{name}: {len(rows)} rows; Spearman / Pearson: {fits}")
