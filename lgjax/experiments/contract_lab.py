"""contract-lab: which relations each stand-in positional scheme keeps and which it forgets.

Spec: contract.md, part 1 (no training). Six stand-in scores over the pinned content pair (Q, K),
four metrics each (lgjax.contracts): shift error of the pair (2, 7), out-of-table fraction,
collisions and monotonic breaks of score(0, d) over d = 1..test-1.
Command: lgjax contract-lab            (well under a second)
Expect: relative, RoPE (to float rounding), ALiBi and NoPE shift-invariant, sinusoidal and learned
not; learned undefined past its table ((test-train)/(test-1) of the distances); NoPE collides on
every pair, the clipped relative bias on every pair past the clip; ALiBi collides on none.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from lgjax import contracts, plots  # noqa: E402


@dataclass(frozen=True)
class Config:
    train: int = 32  # train horizon: rows of the learned stand-in table (positions 0..train-1)
    test: int = 96  # distances d = 1..test-1 are scored from query position 0
    shift: int = 17  # common shift applied to the pair (2, 7) for the shift error
    out: str = "results/contract-lab"  # results.json and the figure


def runs(cfg: Config) -> dict:
    return {}


def measure(cfg: Config, trained: dict | None = None) -> dict:
    t0 = time.perf_counter()
    schemes = contracts.lab(cfg.train, cfg.test, cfg.shift)
    return {"experiment": "contract-lab", "config": asdict(cfg), "pair": list(contracts.PAIR),
            "distances": list(range(1, cfg.test)), "clip": contracts.CLIP,
            "tolerances": {"shift": contracts.SHIFT_TOL, "collide": contracts.COLLIDE,
                           "monotonic": contracts.MONO_TOL},
            "schemes": schemes, "wall_seconds": time.perf_counter() - t0}


def _shift_cell(p: dict) -> tuple[str, str]:
    if p["shift_error"] is None:
        return "undefined", "-"
    return f"{p['shift_error']:.2e}", "yes" if p["shift_invariant"] else "no"


def table(result: dict) -> str:
    c = result["config"]
    i, j = result["pair"]
    lines = [f"contract lab: pair ({i}, {j}) shifted by {c['shift']}; score(0, d) for "
             f"d = 1..{c['test'] - 1}; learned table {c['train']} rows",
             f"{'scheme':11s}{'shift error':>12s}{'invariant':>11s}{'out-of-table':>14s}"
             f"{'collisions':>13s}{'mono breaks':>13s}"]
    for name, p in result["schemes"].items():
        err, inv = _shift_cell(p)
        pairs = f"{p['collisions']}/{p['defined_pairs']}"
        lines.append(f"{name:11s}{err:>12s}{inv:>11s}{p['out_of_table']:>14.3f}{pairs:>13s}"
                     f"{p['monotonic_breaks']:>13d}")
    return "\n".join(lines)


def figure(result: dict, path: Path) -> None:
    """Score against distance, one panel per scheme (gaps: undefined)."""
    d = np.asarray(result["distances"])
    c = result["config"]
    fig, axes = plt.subplots(2, 3, figsize=(12, 6), sharex=True)
    for ax, (name, p) in zip(axes.flat, result["schemes"].items()):
        curve = np.array([np.nan if s is None else s for s in p["curve"]])
        ax.plot(d, curve, lw=1.2)
        markers = {"learned": (c["train"], "train horizon"), "relative": (result["clip"], "clip")}
        if name in markers:
            ax.axvline(markers[name][0], color="0.5", ls="--", lw=1, label=markers[name][1])
            ax.legend(loc="best", fontsize=8)
        ax.set_title(name)
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("distance d (key at d, query at 0)")
    for ax in axes[:, 0]:
        ax.set_ylabel("score(0, d)")
    fig.tight_layout()
    plots.save(fig, path)
