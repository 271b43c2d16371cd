"""The contract matrix's report as text and figures, from its results alone (report.md,
contract.png, contract-confusion.png)."""


from __future__ import annotations

from pathlib import Path

import numpy as np

from lgjax.harness import outputs
from lgjax.harness.outputs import markdown_table
from lgjax.studies.contract.verdicts import (
    COLUMNS,
    MATRIX,
    POLICY,
    PREDICTIONS,
    RANGES,
    column,
    correlations,
    failure_ranges,
    interventions,
    judge,
    learnable_map,
    not_learnable,
    ordered,
    t_interval,
    thesis_line,
    winners,
)

# ---- text ----------------------------------------------------------------------------------

def ci(m, lo, hi, sign: str = "") -> str:
    """A mean [95% CI] at two decimals (sign "+": a signed difference)."""
    return f"{m:{sign}.2f} [{lo:{sign}.2f},{hi:{sign}.2f}]"


# every table below is a list of lines (markdown, but for the predicted matrix's list)

def predicted_table() -> list[str]:
    return ["Predicted matrix (declared before the run; + = predicted higher, - = lower):"] + [
        f"- {p.task} / {COLUMNS[p.column][0]}: + {','.join(p.high)}  - {','.join(p.low)}  "
        f"({p.claim})" for p in PREDICTIONS]


def matrix_table(result: dict) -> list[str]:
    lines = []
    for task in result["cells"]:
        values = {c: v for c in (*MATRIX, "matched_extend", "near_extend", "far_extend")
                  if (v := column(result, task, c))}
        ok = learnable_map(result, task)
        rows = [[s, *(ci(*t_interval(v[s])) if s in v else "-" for v in values.values()),
                 "yes" if ok[s] else "NO"] for s in result["schemes"] if s in values["in_range"]]
        lines += ["", f"## {task}",
                  *markdown_table(["scheme", *(COLUMNS[c][0] for c in values), "learnable"],
                                  rows)]
    return lines


def verdict_table(result: dict) -> list[str]:
    rows = [[v["task"], COLUMNS[v["column"]][0], v["scheme"], "+" if v["side"] == "high" else "-",
             v["verdict"], v.get("rival", ""),
             ci(*v["diff"], "+") if "diff" in v else ""]
            for v in judge(result)]
    return markdown_table(["task", "column", "scheme", "predicted", "verdict", "vs",
                           "difference [95% CI]"], rows)


def intervention_table(result: dict) -> list[str]:
    rows = [[v["task"], v["scheme"], v["intervention"], ci(*v["diff"], "+"), v["effect"]]
            for v in interventions(result)]
    return markdown_table(["task", "scheme", "intervention", "effect on ext. accuracy [95% CI]",
                           "label"], rows)


EXTENSION_COLUMNS = ("none", "pi", "ntk", "yarn", "llama3")  # extend's keys, in this order


def rope_extension_table(result: dict) -> list[str]:
    """Accuracy of each RoPE cell at each extension length under each evaluation-time
    extension (none, linear PI, NTK, YaRN, Llama 3): which one keeps which task's relation."""
    rows = []
    for task, row in result["cells"].items():
        ext = row.get("rope", {}).get("extend", {})
        for L in (k for k in ext if k.isdigit() and "ntk" in ext[k]):
            rows.append([task, L, *(ci(*t_interval(ext[L][c])) for c in EXTENSION_COLUMNS)])
    if not rows:
        return ["(no plain-RoPE cell measured)"]
    return markdown_table(["task", "L", "none", "PI (linear)", "NTK", "YaRN", "Llama 3"], rows)


def matched_table(result: dict) -> list[str]:
    rows = [[task, f"{m['level']:.3f}", s, f"{np.mean(c['step']):.0f}",
             ci(*t_interval(c["extend"])), ci(*t_interval(column(result, task, "extend")[s]))]
            for task, m in result.get("matched", {}).items() for s, c in m["schemes"].items()]
    return markdown_table(["task", "loss level", "scheme", "step (mean)",
                           "ext. accuracy at matched loss", "ext. accuracy final"], rows)


def correlation_table(result: dict) -> list[str]:
    corr = correlations(result)
    names = list(next(iter(corr.values()))) if corr else []
    strength = {k: np.nanmean([abs(corr[t][k]) for t in corr]) if any(
        np.isfinite(corr[t][k]) for t in corr) else float("nan") for k in names}
    shown = lambda x, form: format(x, form) if np.isfinite(x) else "n/a"
    lines = markdown_table(["predictor", *corr, "mean abs"],
                           [[k, *(shown(corr[t][k], "+.2f") for t in corr),
                             shown(strength[k], ".2f")] for k in names])
    if any(not np.isfinite(corr[t][k]) for t in corr for k in names):
        lines.append("n/a: undefined (a predictor or the extension accuracy constant over the "
                     "seed-runs, as in a matrix of one cell, or a lab measure that a plugin's "
                     "encoding lacks).")
    contract = {k: v for k, v in strength.items() if k != "in-range loss" and np.isfinite(v)}
    if contract and np.isfinite(strength.get("in-range loss", np.nan)):
        best = max(contract, key=contract.get)
        lines.append(f"In-range loss: mean |rho| {strength['in-range loss']:.2f}; the strongest "
                     f"contract measure ({best}): {contract[best]:.2f}.")
    return lines


def failure_table(result: dict) -> list[str]:
    names = [f"{a}-{b - 1}" for a, b in zip(RANGES[:-1], RANGES[1:])]
    rows = [[task, s, *("" if v is None else f"{v:.2f}" for v in failure_ranges(c, RANGES))]
            for task in result["cells"] for s, c in ordered(result, task)]
    return markdown_table(["task", "scheme", *names], rows)


def attention_table(result: dict) -> list[str]:
    """The chosen head's in-range hit rate and the largest per-head logit range."""
    ext = result["extend"]
    top = lambda r: f"{np.mean(np.max(r, axis=-1)):.1f}"
    rows = [[task, s, f"{np.mean(c['in_range']['hit_rate']):.2f}",
             top(c["in_range"]["logit_range"]),
             *(top(c["extend"][str(L)]["logit_range"]) for L in ext)]
            for task in result["cells"] for s, c in ordered(result, task)]
    return markdown_table(["task", "scheme", "head hit rate (in range)", "logit range in range",
                           *(f"at {L}" for L in ext)], rows)


def params_table(result: dict) -> list[str]:
    rows = [[s, c["params"]["total"], c["params"]["encoding"], c["params"]["encoding_trained"]]
            for s, c in ordered(result, result["tasks"][0])]
    return markdown_table(["scheme", "parameters", "encoding", "encoding (trained)"], rows)


def render(result: dict) -> str:
    missing = [f"{t}/{s}" for t in result.get("planned_tasks", result["tasks"])
               for s in result.get("planned_schemes", result["schemes"])
               if s not in result["cells"].get(t, {})]
    head = [f"# Contract study: the matrix ({len(result['seeds'])} seeds, {result['steps']} "
            f"steps, batch {result['batch']}, lengths {result['train_lengths']}, extension "
            f"{result['extend']}, PAD shifts {result['shifts']})",
            f"PARTIAL: cells not measured yet: {', '.join(missing)}" if missing else
            "Complete matrix.", "", POLICY.format(learnable=result["learnable"]), "",
            *predicted_table(), "", f"Parameters per scheme ({result['tasks'][0]}):",
            *params_table(result)]
    stuck = not_learnable(result)
    if stuck:
        head += ["", f"Not learnable at this budget ({result['steps']} steps; in-range accuracy "
                 f"< {result['learnable']}): {', '.join(stuck)}. Their predictions are not "
                 "judged: a cell the budget did not teach says nothing about its scheme."]
    wins = winners(result)
    body = ["", "# Results: mean [95% CI] over seeds (accuracy; shift cons. = same answer "
            "before and after the shift)", *matrix_table(result), "", "## Verdicts",
            *verdict_table(result), "", "## Winners",
            *[f"- {t} / {COLUMNS[c][0]}: {w or 'none'}" for (t, c), w in wins.items()],
            thesis_line(wins), "", "## Interventions (paired, vs no intervention)",
            *intervention_table(result), "",
            "## RoPE extensions at evaluation (L_orig = trained LMAX, factor L / LMAX; mean "
            "[95% CI] accuracy)", *rope_extension_table(result), "",
            "## Matched training loss", *matched_table(result),
            "", "## Rank correlation with extension accuracy (Spearman, seed-runs)",
            *correlation_table(result), "",
            "## Failure by relative offset (extension accuracy by distance needed, pooled)",
            *failure_table(result), "",
            "## Attention: chosen head and logit range (max over heads, mean over seeds)",
            *attention_table(result)]
    return "\n".join(head + body)


# ---- figures -------------------------------------------------------------------------------

def figure(result: dict, stem: Path) -> None:
    """stem.png: one heatmap per matrix column (tasks x schemes; mean, CI half-width, and the
    verdict mark of a predicted cell); stem-confusion.png: the chosen head's distance-confusion
    matrix per cell at the extension lengths."""
    marks = {(v["task"], v["column"], v["scheme"]): v["verdict"] for v in judge(result)}
    tasks, schemes = list(result["cells"]), result["schemes"]
    rows = (len(MATRIX) + 2) // 3
    fig, axes = outputs.subplots(rows, 3, squeeze=False,
                                 figsize=(5.5 * 3, rows * (0.75 * len(tasks) + 1.6)))
    for ax in axes.flat[len(MATRIX):]:
        ax.axis("off")
    for k, (ax, name) in enumerate(zip(axes.flat, MATRIX)):
        grid = np.full((len(tasks), len(schemes)), np.nan)
        for i, t in enumerate(tasks):
            for s, v in column(result, t, name).items():
                m, lo, hi = t_interval(v)
                j = schemes.index(s)
                grid[i, j] = m
                mark = VERDICT_MARK.get(marks.get((t, name, s)), "")
                ax.text(j, i, f"{m:.2f}\n±{(hi - lo) / 2:.2f}{mark}", ha="center",
                        va="center", fontsize=7)
        ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", alpha=0.8, aspect="auto")
        ax.set_xticks(range(len(schemes)), schemes, rotation=45, fontsize=8)
        ax.set_yticks(range(len(tasks)), tasks if k % 3 == 0 else [], fontsize=8)
        ax.set_title(COLUMNS[name][0], fontsize=9)
    fig.suptitle("contract matrix: mean ± 95% CI half-width over seeds "
                 "(✓ confirmed, ✗ contradicted, = no effect, ? unresolved, ∅ not learnable)",
                 fontsize=9)
    outputs.save(fig, stem)
    confusion_figure(result, Path(f"{stem}-confusion"))


VERDICT_MARK = {"confirmed": " ✓", "contradicted": " ✗", "no effect": " =", "unresolved": " ?",
                "not learnable": " ∅", "no learnable rival": ""}


def confusion_figure(result: dict, stem: Path) -> None:
    tasks, schemes = list(result["cells"]), result["schemes"]
    fig, axes = outputs.subplots(len(tasks), len(schemes), squeeze=False,
                                 figsize=(2.2 * len(schemes), 2.2 * len(tasks)))
    for i, t in enumerate(tasks):
        for j, s in enumerate(schemes):
            ax = axes[i, j]
            cell = result["cells"][t].get(s)
            if cell is None:
                ax.axis("off")
                continue
            counts = np.asarray(cell["extend"]["confusion"], float)
            width = cell["extend"]["failure"]["bin"]
            span = counts.shape[0] * width
            ax.imshow(np.log1p(counts), origin="lower", cmap="magma",
                      extent=(0, span, 0, span))
            ax.plot([0, span], [0, span], color="w", lw=0.5, ls=":")
            ax.set_title(f"{t}\n{s}", fontsize=7)
            ax.tick_params(labelsize=6)
            if j == 0:
                ax.set_ylabel("distance needed", fontsize=7)
            if i == len(tasks) - 1:
                ax.set_xlabel("distance attended", fontsize=7)
    fig.suptitle("chosen head (on in-range data): distance attended vs needed at the "
                 "extension lengths (log counts)", fontsize=9)
    outputs.save(fig, stem)


# ---- the command ---------------------------------------------------------------------------

def write_markdown(result: dict, out: Path) -> list[str]:
    (out / "report.md").write_text(render(result))
    return ["report.md"]


