"""Figures of realizability-report, drawn from its result dict only (redrawable without
training): alpha vs LG per tier, heatmaps at one length, LG and alpha against L, rho and
precision against depth. Each writes <name>.png and <name>.pdf. `heat` draws realizability-alpha's
heatmaps too."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lgjax.harness.outputs import save, subplots


def _save(fig, out: Path, name: str) -> str:
    save(fig, out / name)
    return f"{name}.png/.pdf"


def _order(cells, field):
    return list(dict.fromkeys(c[field] for c in cells))


def heat(ax, a, marks=None, fontsize=9, dark_below=0.6, **imshow):
    """a on a [0, 1] viridis scale, each finite cell written out (with marks[i][j] after it)."""
    im = ax.imshow(a, vmin=0, vmax=1, cmap="viridis", **imshow)
    for (i, j), v in np.ndenumerate(a):
        if np.isfinite(v):
            ax.text(j, i, f"{v:.2f}{marks[i][j] if marks else ''}", ha="center", va="center",
                    fontsize=fontsize, color="w" if v < dark_below else "k")
    return im


def scatter(result: dict, out: Path) -> str:
    tiers, cells = result["tiers"], result["cells"]
    encs = _order(cells, "encoding")
    fig, axes = subplots(1, len(tiers), figsize=(4 * len(tiers), 3.8), squeeze=False)
    learnable = result["thresholds"]["learnable"]
    for ax, tier in zip(axes[0], tiers):
        for i, enc in enumerate(encs):
            mine = [c for c in cells if c["tier"] == tier and c["encoding"] == enc]
            ok = np.array([c["train_acc"] > learnable for c in mine], bool)
            a, g = (np.array([c[f] for c in mine]) for f in ("alpha", "lg"))
            ax.scatter(a[ok], g[ok], s=14, color=f"C{i}", label=enc)
            ax.scatter(a[~ok], g[~ok], s=14, facecolors="none", edgecolors=f"C{i}")
        rho = result["stats"].get(tier, {}).get("rho", float("nan"))
        ax.set(title=f"{tier}: rho = {rho:.2f}", xlabel="alpha_L", ylabel="LG@L (seed mean)",
               xlim=(-0.05, 1.05), ylim=(-0.05, 1.05))
    axes[0][0].legend(fontsize=7, title="hollow: not learnable", title_fontsize=7)
    return _save(fig, out, "alpha_vs_lg")


def heatmaps(result: dict, out: Path, L: int) -> str:
    cells, tiers = result["cells"], result["tiers"]
    encs, tasks = _order(cells, "encoding"), _order(cells, "task")
    panels = ([("alpha", tiers[0], f"alpha_{L}")] if result["alpha"] else []) + \
        [("lg", t, f"LG@{L} {t}") for t in tiers]
    fig, axes = subplots(1, len(panels), figsize=(5 * len(panels), 2.8), squeeze=False)
    for ax, (field, tier, title) in zip(axes[0], panels):
        m = np.full((len(encs), len(tasks)), np.nan)
        for c in cells:
            if c["tier"] == tier and c["L"] == L:
                m[encs.index(c["encoding"]), tasks.index(c["task"])] = c[field]
        # cells stretch to the panel: at equal aspect, 10 tasks x 5 encodings left tight_layout no
        # room for the titles, which were cut off at the top
        heat(ax, m, fontsize=6, dark_below=0.5, aspect="auto")
        ax.set_xticks(range(len(tasks)), tasks, rotation=60, fontsize=7)
        ax.set_yticks(range(len(encs)), encs, fontsize=7)
        ax.set_title(title)
    return _save(fig, out, f"heatmaps_L{L}")


def vs_length(result: dict, out: Path, tier: str) -> str:
    cells = [c for c in result["cells"] if c["tier"] == tier]
    encs, tasks = _order(cells, "encoding"), _order(cells, "task")
    cols = 5
    rows = -(-len(tasks) // cols)
    fig, axes = subplots(rows, cols, figsize=(3 * cols, 2.5 * rows), squeeze=False)
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
        ax.set_xlabel("test length L", fontsize=8)
    for ax in axes.flat[len(tasks):]:
        ax.axis("off")
    axes[0][0].legend(fontsize=6)
    fig.suptitle(f"{tier}: LG@L (solid)" + (", alpha_L (dashed)" if result["alpha"] else ""))
    return _save(fig, out, f"vs_length_{tier}")


def depth(result: dict, out: Path) -> str:
    tiers = [t for t in result["tiers"] if t in result["stats"]]
    fig, ax = subplots(figsize=(4.5, 3.2))
    x = np.arange(len(tiers))
    for name, shift in (("rho", -0.05), ("precision", 0.05)):
        v = np.array([result["stats"][t][name] for t in tiers])
        ci = np.array([result["stats"][t][f"{name}_ci"] for t in tiers]).reshape(-1, 2)
        ax.errorbar(x + shift, v, yerr=np.abs(ci.T - v), fmt="o-", capsize=3, label=name)
    ax.set_xticks(x, tiers)
    # half a tier of margin each side: with one tier the two offset points sat on the frame
    ax.set(xlim=(-0.5, max(len(tiers), 1) - 0.5), ylim=(-0.1, 1.05), ylabel="value (95% CI)",
           title="rho(alpha_L, LG) and precision per tier")
    ax.legend(loc="lower right")
    return _save(fig, out, "depth")


def draw(result: dict, out: Path, heatmap_length: int) -> list[str]:
    written = [heatmaps(result, out, heatmap_length)]
    written += [vs_length(result, out, t) for t in result["tiers"]]
    if result["alpha"]:
        written += [scatter(result, out), depth(result, out)]
    return written
