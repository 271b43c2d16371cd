"""Matplotlib figures from result dicts (no JAX here: figures redraw from results.json)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

PANELS = (("accuracy", "accuracy"), ("peak_height", "peak attention height"),
          ("selected_offset", "selected offset"))


def multiseed_figure(results: dict, encodings, stem: Path) -> None:
    lengths = np.asarray(results["lengths"])
    lo, hi = results["train_lengths"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, (metric, label) in zip(axes, PANELS):
        ax.axvspan(lo, hi, color="0.9", label="training range")
        for enc in encodings:
            a = np.asarray(results[enc][metric], dtype=float)
            mean, sd = a.mean(0), a.std(0)
            line, = ax.plot(lengths, mean, marker="o", label=enc)
            ax.fill_between(lengths, mean - sd, mean + sd, color=line.get_color(), alpha=0.2)
            for seed_row in a:
                ax.plot(lengths, seed_row, color=line.get_color(), alpha=0.25, lw=0.7)
        if metric == "accuracy":
            ax.axhline(results["chance"], ls="--", color="k", lw=0.8, label="chance")
            ax.set_ylim(-0.02, 1.02)
        if metric == "selected_offset":
            ax.axhline(-results["K"], ls=":", color="k", lw=0.8, label="-K")
        ax.set_xlabel("evaluation length L")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"K = {results['K']}, {len(results['seeds'])} seeds (mean +- std, thin: seeds)")
    fig.tight_layout()
    for ext in ("png", "pdf"):
        fig.savefig(f"{stem}.{ext}", dpi=130)
    plt.close(fig)
