"""Figures of realizability-report, drawn from its result dict only (redrawable without
training): alpha vs LG per tier, heatmaps at one length, LG and alpha against L, rho and
precision against depth. Each writes <name>.png and <name>.pdf."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lgjax.plots import plt, save


def _save(fig, out: Path, name: str) -> str:
    save(fig, out / name)
    return f"{name}.png/.pdf"


def _order(cells, field):
    return list(dict.fromkeys(c[field] for c in cells))


def scatter(result: dict, out: Path) -> str:
    tiers, cells = result["tiers"], result["cells"]
    encs = _order(cells, "encoding")
    fig, axes = plt.subplots(1, len(tiers), figsize=(4 * len(tiers), 3.8), squeeze=False)
    learnable = result["thresholds"]["learnable"]
    for ax, tier in zip(axes[0], tiers):
        for i, enc in enumerate(encs):
            mine = [c for c in cells if c["tier"] == tier and c["encoding"] == enc]
            ok = np.array([c["train_acc"] > learnable for c in mine], bool)
            a = np.array([c["alpha"] for c in mine])
            g = np.array([c["lg"] for c in mine])
            color = f"C{i}"
            ax.scatter(a[ok], g[ok], s=14, color=color, label=enc)
            ax.scatter(a[~ok], g[~ok], s=14, facecolors="none", edgecolors=color)
        s = result["stats"].get(tier, {})
        ax.set_title(f"{tier}: rho = {s.get('rho', float('nan')):.2f}")
        ax.set_xlabel("alpha_L")
        ax.set_ylabel("LG@L (seed mean)")
        ax.set_xlim(-0.05, 1.05)
        ax.set_ylim(-0.05, 1.05)
    axes[0][0].legend(fontsize=7, title="hollow: not learnable", title_fontsize=7)
    return _save(fig, out, "alpha_vs_lg")


def _grid(cells, tier, L, field, encs, tasks):
    m = np.full((len(encs), len(tasks)), np.nan)
    for c in cells:
        if c["tier"] == tier and c["L"] == L:
            m[encs.index(c["encoding"]), tasks.index(c["task"])] = c[field]
    return m


def heatmaps(result: dict, out: Path, L: int) -> str:
    cells, tiers = result["cells"], result["tiers"]
    encs, tasks = _order(cells, "encoding"), _order(cells, "task")
    panels = ([("alpha", tiers[0], f"alpha_{L}")] if result["alpha"] else []) + \
        [("lg", t, f"LG@{L} {t}") for t in tiers]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 2.8), squeeze=False)
    for ax, (field, tier, title) in zip(axes[0], panels):
        m = _grid(cells, tier, L, field, encs, tasks)
        ax.imshow(m, vmin=0, vmax=1, cmap="viridis")
        for (i, j), v in np.ndenumerate(m):
            if np.isfinite(v):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6,
                        color="white" if v < 0.5 else "black")
        ax.set_xticks(range(len(tasks)), tasks, rotation=60, fontsize=7)
        ax.set_yticks(range(len(encs)), encs, fontsize=7)
        ax.set_title(title)
    return _save(fig, out, f"heatmaps_L{L}")


def vs_length(result: dict, out: Path, tier: str) -> str:
    cells = [c for c in result["cells"] if c["tier"] == tier]
    encs, tasks = _order(cells, "encoding"), _order(cells, "task")
    cols = 5
    rows = -(-len(tasks) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3 * cols, 2.5 * rows), squeeze=False)
    for ax, task in zip(axes.flat, tasks):
        for i, enc in enumerate(encs):
            mine = sorted((c for c in cells if c["encoding"] == enc and c["task"] == task),
                          key=lambda c: c["L"])
            Ls = [c["L"] for c in mine]
            ax.plot(Ls, [c["lg"] for c in mine], "o-", color=f"C{i}", ms=3, label=enc)
            if result["alpha"]:
                ax.plot(Ls, [c["alpha"] for c in mine], "--", color=f"C{i}")
        ax.set_title(task, fontsize=9)
        ax.set_ylim(-0.05, 1.05)
    for ax in axes.flat[len(tasks):]:
        ax.axis("off")
    axes[0][0].legend(fontsize=6)
    fig.suptitle(f"{tier}: LG@L (solid)" + (", alpha_L (dashed)" if result["alpha"] else ""))
    return _save(fig, out, f"vs_length_{tier}")


def depth(result: dict, out: Path) -> str:
    tiers = [t for t in result["tiers"] if t in result["stats"]]
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    x = np.arange(len(tiers))
    for name, shift in (("rho", -0.05), ("precision", 0.05)):
        v = np.array([result["stats"][t][name] for t in tiers])
        ci = np.array([result["stats"][t][f"{name}_ci"] for t in tiers]).reshape(-1, 2)
        ax.errorbar(x + shift, v, yerr=np.abs(ci.T - v), fmt="o-", capsize=3, label=name)
    ax.set_xticks(x, tiers)
    ax.set_ylim(-0.1, 1.05)
    ax.set_ylabel("value (95% CI)")
    ax.legend()
    return _save(fig, out, "depth")


def draw(result: dict, out: Path, heatmap_length: int) -> list[str]:
    written = [heatmaps(result, out, heatmap_length)]
    written += [vs_length(result, out, t) for t in result["tiers"]]
    if result["alpha"]:
        written += [scatter(result, out), depth(result, out)]
    return written
