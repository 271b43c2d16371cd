"""The table of the added encodings on docs/results/profiles.md: each one's profile summary,
redrawn from profile.json.

Command (the profiles first, ~3-4 min each here at the default recipe; then the table):
    for e in rope_linear rope_ntk rope_dynamic rope_yarn rope_llama3 xpos kerple_log \
             kerple_power fire; do lgjax profile $e --out results/profile/$e; done
    lgjax profile rope --random-positions 128 --out results/profile/rope-rp128
    python experiments/encoding_profiles.py results/profile/*/profile.json [--reference FILE]
(--reference adds the canonical encodings' rows at the same recipe from a reference file,
default: none; the packaged one is lgjax/profile/reference.json.)
Columns: the contract lab at init (shift error, out-of-table fraction, collisions, monotonic
breaks), alpha_60 and trained LG@60 at 1L1H over the realizability study's 7 main-grid tasks
(mean, and how many pass the study's thresholds alpha >= 0.5 and LG >= 0.7), rho(alpha_L, LG),
and the fixed-offset accuracy in range (16) and at length 48 (K = 1, 2; chance 0.05).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from lgjax.harness.outputs import markdown_table
from lgjax.profile import summary
from lgjax.studies.realizability.report import CORE_TASKS

COLUMNS = ["encoding", "recipe", "shift error", "out of table", "collisions", "monotonic breaks",
           "mean alpha_60 (7)", "alpha_60 >= 0.5", "mean LG@60", "LG@60 >= 0.7", "rho",
           "K=1 acc @16 / @48", "K=2 acc @16 / @48"]


def row(card: dict) -> list:
    s, name = card["summary"], card["encoding"]
    if card.get("random_positions"):
        name += f" (random positions, M = {card['random_positions']})"
    c, a, rz, ib = s["contract"], s["alpha"], s["realizability"], s["implicit_bias"]
    alpha = [a[t]["alpha"] for t in CORE_TASKS if t in a]
    lg = [rz["tasks"][t]["lg"] for t in CORE_TASKS if rz and t in rz["tasks"]]
    f = lambda v, fmt="{:.2f}": "-" if v is None else fmt.format(v)
    return [f"`{name}`", card["recipe"]["name"], f(c["shift_error"], "{:.2g}"),
            f(c["out_of_table"]), c["collisions"], c["monotonic_breaks"],
            f(float(np.mean(alpha))), f"{sum(v >= 0.5 for v in alpha)}/{len(alpha)}",
            f(float(np.mean(lg)) if lg else None), f"{sum(v >= 0.7 for v in lg)}/{len(lg)}",
            f(rz.get("rho") if rz else None),
            *(f"{ib[K]['acc_in_range']:.2f} / {ib[K]['acc_long']:.2f}" for K in ("K1", "K2"))]


def canonical(ref_file: Path, recipe: str) -> list[dict]:
    """The reference file's encodings at `recipe`, as cards."""
    entry = json.loads(ref_file.read_text())["recipes"][recipe]
    return [{"encoding": n, "recipe": entry["recipe"], "summary": summary.of(inst)}
            for n, inst in entry["encodings"].items()]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("profiles", nargs="+", help="profile.json files")
    p.add_argument("--reference", help="add the canonical encodings' rows from this file")
    a = p.parse_args(argv)
    cards = [json.loads(Path(f).read_text()) for f in a.profiles]
    if a.reference:
        cards += canonical(Path(a.reference), cards[0]["recipe"]["name"])
    print("\n".join(markdown_table(COLUMNS, [row(c) for c in cards])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
