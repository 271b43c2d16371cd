"""The implicit-bias figures, from result dicts (no JAX here: figures redraw from results.json)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lgjax.harness.outputs import save, subplots

PANELS = (("accuracy", "accuracy"), ("peak_height", "peak attention height"),
          ("selected_offset", "selected offset"))


def multiseed_figure(results: dict, stem: Path) -> None:
    encodings = results["encodings"]
    lengths = np.asarray(results["lengths"])
    lo, hi = results["train_lengths"]
    fig, axes = subplots(1, 3, figsize=(13, 3.8))
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
    save(fig, stem)


def transformer_figure(results: dict, stem: Path) -> None:
    """Accuracy by length (with APE's in-range expectation) and each encoding's shift-head
    offset profile at every profiled length."""
    encodings = results["encodings"]
    lengths = np.asarray(results["lengths"])
    fig, axes = subplots(1, 1 + len(encodings), figsize=(4.5 * (1 + len(encodings)), 3.6))
    ax = axes[0]
    exp = results["expected_ape_accuracy"]
    ax.plot(lengths, [exp[str(L)] if str(L) in exp else exp[L] for L in lengths], "k:",
            label="(Lmax-K)/(L-K)")
    for enc in encodings:
        ax.plot(lengths, np.asarray(results[enc]["accuracy"]).mean(0), marker="o", label=enc)
    ax.axhline(results["chance"], ls="--", color="0.5", lw=0.8)
    ax.set_xlabel("evaluation length L")
    ax.set_ylabel("per-token accuracy")
    ax.legend(fontsize=8)
    for ax, enc in zip(axes[1:], encodings):
        r = results[enc]
        layer, head = r["shift_head"][0]
        for L, prof in r["profiles"].items():
            p = np.asarray(prof[0][layer][head])
            ax.plot(np.arange(len(p)) - (len(p) - 1), p, label=f"L={L}")
        ax.axvline(-results["K"], ls=":", color="k", lw=0.8)
        ax.set_xlabel("offset t - i")
        ax.set_title(f"{enc}: shift head (layer {layer}, head {head})")
        ax.legend(fontsize=8)
    save(fig, stem)


def decay_figure(res: dict, stem: Path) -> None:
    """1/a*(L) against L-1 per K (seeds as points) with each seed's least-squares line."""
    fig, ax = subplots(figsize=(5, 3.8))
    x = np.asarray(res["lengths"]) - 1
    for K in res["Ks"]:
        r = res[f"K{K}"]
        color = None
        for s, (peak, fit) in enumerate(zip(np.asarray(r["peak_height"]), r["fits"])):
            pts = ax.plot(x, 1 / peak, "o", ms=3, color=color,
                          label=f"K={K}" if s == 0 else None)[0]
            color = pts.get_color()
            ax.plot(x, fit["alpha"] + fit["c"] * x, "-", lw=0.7, color=color)
    ax.set_xlabel("L - 1")
    ax.set_ylabel("1 / peak attention a*(L)")
    ax.legend(fontsize=8)
    save(fig, stem)


def shift_figure(res: dict, stem: Path) -> None:
    """Rows: encodings; columns: mean attention vs offset t - n, and vs absolute position t."""
    encodings = res["encodings"]
    fig, axes = subplots(len(encodings), 2, figsize=(9, 3.2 * len(encodings)), squeeze=False)
    for row, enc in zip(axes, encodings):
        for L, curve in zip(res["lengths"], res[enc]["curves"]):
            curve = np.asarray(curve)
            row[0].plot(np.arange(L) - (L - 1), curve, label=f"L={L}")
            row[1].plot(np.arange(L), curve, label=f"L={L}")
        row[0].set_title(f"{enc}: relative coordinates")
        row[1].set_title(f"{enc}: absolute coordinates")
        row[0].set_xlabel("offset t - n")
        row[1].set_xlabel("key position t")
        row[0].set_ylabel("mean attention")
        row[0].legend(fontsize=7)
    save(fig, stem)


def mechanics_dynamics_figure(series: dict, stem: Path) -> None:
    """Carrier fractions, SV energy and accuracy over steps (mean and min-max over seeds)."""
    fig, ax = subplots(figsize=(6, 4))
    for metric, s in series.items():
        steps = np.asarray(s["steps"])
        ax.plot(steps, s["mean"], marker=".", label=metric)
        ax.fill_between(steps, s["min"], s["max"], alpha=0.2)
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel("step")
    ax.legend(fontsize=8)
    save(fig, stem)


def _accuracy_panel(ax, lengths, curves: dict, chance: float | None, title: str) -> None:
    """Mean accuracy over seeds (band: min-max) against evaluation length, one line per label."""
    for label, acc in curves.items():
        acc = np.asarray(acc, float)
        line = ax.plot(lengths[:acc.shape[1]], acc.mean(0), marker="o", ms=3, label=label)[0]
        ax.fill_between(lengths[:acc.shape[1]], acc.min(0), acc.max(0), alpha=0.15,
                        color=line.get_color())
    if chance is not None:
        ax.axhline(chance, color="gray", ls=":", lw=0.8, label="chance")
    ax.set_xlabel("evaluation length L")
    ax.set_ylabel("accuracy (mean, min-max over seeds)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)


def frequency_figure(res: dict, stem: Path) -> None:
    """Accuracy against length per rotary base and offset, and the base's kernel ratios."""
    fig, axes = subplots(1, 2, figsize=(10, 3.8))
    curves = {f"K={res[n]['K']} base {res[n]['base']:g}": res[n]["accuracy"] for n in res["rows"]}
    _accuracy_panel(axes[0], res["lengths"], curves, None, "RoPE accuracy by rotary base")
    names = [n for n in res["rows"] if res[n]["K"] == res["K"]]
    x = np.arange(len(names))
    axes[1].bar(x - 0.2, [res[n]["g1_over_g0"] for n in names], 0.4, label="g(1)/g(0)")
    axes[1].bar(x + 0.2, [res[n]["max_far_over_g0"] for n in names], 0.4,
                label=f"max g(s)/g(0), s={res['far'][0]}..{res['far'][1]}")
    axes[1].set_xticks(x, [f"{res[n]['base']:g}" for n in names])
    axes[1].set(xlabel="rotary base", ylabel="ratio to g(0)")
    axes[1].set_title("content-free kernel g(s) = sum_i cos(s theta_i)", fontsize=9)
    # headroom above the bars (ratios are <= 1) so the legend covers none of them
    axes[1].set_ylim(0, 1.25)
    axes[1].legend(fontsize=7, loc="upper left", ncols=2)
    save(fig, stem)


def linear_figure(res: dict, stem: Path) -> None:
    fig, ax = subplots(figsize=(5.5, 3.8))
    _accuracy_panel(ax, res["lengths"], {a: res[a]["accuracy"] for a in res["attentions"]},
                    res.get("chance"), f"softmax vs linear attention (RoPE, K={res['K']})")
    save(fig, stem)


def variants_figure(res: dict, stem: Path) -> None:
    """(a) accuracy by length per scheme and offset; (d) peak attention by length per H."""
    fig, axes = subplots(1, 2, figsize=(10, 3.8))
    a = {n[2:]: res[n]["accuracy"] for n in res["names"] if n.startswith("a-")}
    _accuracy_panel(axes[0], res["lengths"], a, res.get("chance"),
                    "other relative schemes: accuracy by length")
    for n in (n for n in res["names"] if n.startswith("d-")):
        peak = np.asarray(res[n]["peak_height_per_head"]).max(-1)  # [seeds, lengths]
        axes[1].plot(res["lengths"], peak.mean(0), marker="o", ms=3, label=n[2:])
    axes[1].set_xlabel("evaluation length L")
    axes[1].set_ylabel("peak mean attention (max over heads)")
    axes[1].set_title("more heads dilute more (d = 64)", fontsize=9)
    axes[1].legend(fontsize=7)
    save(fig, stem)


def maxmargin_figure(res: dict, stem: Path) -> None:
    """cos(trained W, max-margin W) over training steps per encoding, and under weight decay."""
    fig, axes = subplots(1, 2, figsize=(10, 3.8))
    for enc in res["encodings"]:
        traj = res[enc]["trajectory"]
        steps = [int(s) for s in traj]
        cos = np.asarray([traj[s]["cos"] for s in traj], float)  # [steps, seeds]
        axes[0].plot(steps, cos.mean(1), marker="o", ms=3, label=enc)
        axes[0].fill_between(steps, cos.min(1), cos.max(1), alpha=0.15)
        wd = res[enc]["weight_decay"]
        axes[1].plot([float(k) for k in wd], [np.mean(wd[k]["cos"]) for k in wd], marker="o",
                     label=enc)
    axes[0].set_xscale("symlog", linthresh=1)
    axes[0].set_xlabel("training step")
    axes[0].set_ylabel("cos(trained W, W_mm)")
    axes[0].set_title("alignment with the attention-SVM selector", fontsize=9)
    axes[1].set_xscale("log")
    axes[1].set_xlabel("weight decay on W_Q, W_K (final step)")
    axes[1].set_title("towards the wd -> 0 limit", fontsize=9)
    for ax in axes:
        ax.legend(fontsize=7)
    save(fig, stem)
