"""The implicit-bias tables: Table 1 printed (mean +- std over seeds) and its tidy CSV rows."""

from __future__ import annotations

import numpy as np

METRICS = ("accuracy", "peak_height", "selected_offset")


def rows(results: dict, encodings) -> list[dict]:
    """One row per encoding x seed x length x metric."""
    out = []
    for enc in encodings:
        for metric in METRICS:
            grid = results[enc][metric]
            for s, seed in enumerate(results["seeds"]):
                for j, length in enumerate(results["lengths"]):
                    out.append({"encoding": enc, "seed": seed, "length": length,
                                "metric": metric, "value": grid[s][j]})
    return out


def multiseed_table(results: dict) -> str:
    encodings, lengths = results["encodings"], results["lengths"]
    lo, hi = results["train_lengths"]
    head = f"{'':14s}" + "".join(f"{('L=' + str(L) + ('*' if lo <= L <= hi else '')):>14s}"
                                 for L in lengths)
    lines = [f"accuracy and peak height, mean +- std over {len(results['seeds'])} seeds "
             f"(* = inside the training range [{lo}, {hi}]; chance {results['chance']:.3f})",
             head]
    for enc in encodings:
        for metric in ("accuracy", "peak_height"):
            a = np.asarray(results[enc][metric])
            cells = "".join(f"{m:>8.3f}+-{s:<4.3f}" for m, s in zip(a.mean(0), a.std(0)))
            lines.append(f"{enc + ' ' + metric[:4]:14s}{cells}")
    lines.append("selected offset (argmax of mean attention minus query position), seed x length")
    for enc in encodings:
        for s, row in zip(results["seeds"], results[enc]["selected_offset"]):
            lines.append(f"{enc:6s} seed {s:<3d} " + "".join(f"{v:>14d}" for v in row))
    return "\n".join(lines)
