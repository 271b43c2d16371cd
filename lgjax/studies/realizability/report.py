"""realizability-report: the training-free score alpha_L beside the trained grid's LG@L.

docs/studies/realizability.md, its statistics and sweeps. Reads the grid's results
(realizability-train) and the alpha study's results.json, then per tier: alpha next to LG at each
length; Spearman rho over learnable (cell, L) rows (cell = encoding x task, seeds averaged;
learnable: mean train accuracy > 0.8) with a cluster-bootstrap 95% CI over cells; the sufficiency
precision P[LG >= 0.7 | alpha >= 0.5] over (encoding, task, L, seed) rows with a row-bootstrap CI;
the screen AUC (label: seed-mean LG >= 0.7) over (encoding, task, L) rows with a cluster-bootstrap
CI; counts of measurements against the spec's expected counts. Beside the main grid, the sweeps
given by their flags: L0 sensitivity (1L1H trained at L0 in {10, 20, 40}, tested at 3 L0), the RoPE
frequency scale on skip-3 (alpha and trained 1L1H), and the scale check (d = 128, 64 tokens) with
the main grid's statistics; the main grid supplies L0 = 20 and scale 1. Figures: alpha vs LG per
tier, heatmaps of alpha and LG at L = 60 (encoding x task), LG and alpha against L, rho and
precision against depth. Without alpha results only the LG side is printed and drawn.
Command: lgjax realizability-report RESULTS --alpha results/realizability-alpha/results.json
  (RESULTS: realizability-train's --out folder; seconds).
Expect: alpha tracks 1-layer LG closely (high rho); at depth alpha stays a high-precision
sufficient screen while rho weakens.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path

import numpy as np

from lgjax.config import ConfigError
from lgjax.harness import outputs
from lgjax.harness.outputs import check_writable
from lgjax.harness.ranges import option
from lgjax.harness.study import write_outputs
from lgjax.studies.realizability import stats

CORE_TASKS = ("prev", "skip-2", "skip-3", "skip-5", "copy", "reverse", "first")  # main grid
EXPECTED_MAIN = 5 * 7 * 5 * 5  # PE x core tasks x lengths x seeds, per tier (x 3 tiers = 2625)
EXPECTED_TIERS = ("1L1H", "2L4H", "4L4H")
EXPECTED_SCALE_CHECK = 700  # spec: measurements in the scale check
SCALE_TASK = "skip-3"  # the task of the RoPE frequency-scale rows
ALPHA_ENCODING = {"learned-abs": "ape"}  # the name alpha results saved before ape was one name


@dataclass(frozen=True)
class Config:
    results: str = field(default="", metadata={"positional": True})  # realizability-train results
    alpha: str = ""  # the alpha study's results.json (empty: print the LG side only)
    selection: str = "reference"  # which alpha: reference, or an ablation (lbfgs, min_norm, margin)
    out: str = "results/realizability-report"  # report.json and figures go here
    learnable: float = option(
        0.8, ge=0, le=1)  # a cell is learnable when its mean train accuracy exceeds this
    alpha_min: float = option(
        0.5, ge=0, le=1)  # the screen: alpha_L >= this predicts length generalization
    lg_min: float = option(0.7, ge=0, le=1)  # length generalization: LG@L >= this
    resamples: int = option(10_000, ge=1)  # bootstrap resamples (percentile intervals)
    heatmap_length: int = 60  # the test length of the heatmaps
    sensitivity: tuple[str, ...] = ()  # realizability-train results at other L0 (1L1H, L = 3 L0)
    sensitivity_alpha: tuple[str, ...] = ()  # realizability-alpha results at those L0
    rope_scale: tuple[str, ...] = ()  # realizability-train results of RoPE skip-3 at other scales
    scale_check: str = ""  # realizability-train results of the d = 128, 64-token grid


def alpha_table(result: dict, selection: str = "reference") -> dict:
    """The one adapter onto realizability-alpha's results.json: {encoding: {task: {L: alpha}}}
    from its main-setting rows of one selection, encodings named as the trained grid names
    them."""
    table: dict = {}
    for r in result["rows"]:
        if r["selection"] == selection and r["main"]:
            enc = ALPHA_ENCODING.get(r["encoding"], r["encoding"])
            table.setdefault(enc, {})[r["task"]] = dict(zip(result["lengths"], r["alpha"]))
    if not table:
        raise ConfigError(f"--selection: the alpha results hold no main rows of selection "
                          f"{selection!r}; use one of "
                          f"{sorted({r['selection'] for r in result['rows']})}")
    return table


PROGRAM_KEYS = ("tier", "encoding", "tasks", "seeds", "lengths", "lg", "acc_all", "train_acc",
                "train_seconds")
ALPHA_ROW_KEYS = ("selection", "main", "encoding", "task", "alpha")


def load(path: str, flag: str, hint: str, experiment: str, keys: tuple[str, ...]) -> dict:
    """The results.json at path (or in the folder path), checked to be `experiment`'s."""
    p = Path(path)
    p = p / "results.json" if p.is_dir() else p
    if not p.is_file():
        raise ConfigError(f"{flag}: {p} does not exist; {hint}")
    return outputs.read_result(p, flag, experiment, keys, experiment)


def load_train(path: str, flag: str = "results") -> dict:
    result = load(path, flag, "give the realizability-train results.json (or its folder)",
                  "realizability-train", ("programs", "config", "reduced"))
    outputs.require_entries(result["programs"], PROGRAM_KEYS, flag, path, "program")
    return result


def load_alpha(path: str, flag: str, hint: str) -> dict:
    result = load(path, flag, hint, "realizability-alpha", ("rows", "lengths", "config"))
    outputs.require_entries(result["rows"], ALPHA_ROW_KEYS, flag, path, "row")
    return result


def check_heatmap_length(train: dict, L: int) -> None:
    measured = sorted({L for p in train["programs"] for L in p["lengths"]})
    if L not in measured:
        raise ConfigError(f"--heatmap-length: {L} is not a measured test length; choose one of "
                          f"{measured}")


def measurements(train: dict, alpha: dict | None) -> list[dict]:
    """One row per (tier, encoding, task, seed, L)."""
    rows = []
    for p in train["programs"]:
        by_task = (alpha or {}).get(p["encoding"], {})
        axes = (enumerate(p["tasks"]), enumerate(p["seeds"]), enumerate(p["lengths"]))
        for (i, task), (j, seed), (k, L) in product(*axes):
            rows.append({"tier": p["tier"], "encoding": p["encoding"], "task": task, "seed": seed,
                         "L": L, "lg": p["lg"][i][j][k], "acc_all": p["acc_all"][i][j][k],
                         "train_acc": p["train_acc"][i][j],
                         "alpha": by_task.get(task, {}).get(L, float("nan"))})
    return rows


def seed_means(rows: list[dict]) -> list[dict]:
    """(tier, encoding, task, L) rows with LG, all-row and train accuracy averaged over seeds."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r["tier"], r["encoding"], r["task"], r["L"])].append(r)
    return [{"tier": t, "encoding": e, "task": k, "L": L, "alpha": g[0]["alpha"],
             "n_seeds": len(g), **{f: float(np.mean([r[f] for r in g]))
                                   for f in ("lg", "acc_all", "train_acc")}}
            for (t, e, k, L), g in groups.items()]


def tier_stats(rows: list[dict], cfg: Config) -> dict:
    """rho, precision and AUC of one tier's rows, each with its 95% bootstrap interval."""
    cells = [r for r in seed_means(rows) if np.isfinite(r["alpha"])]
    learn = [r for r in cells if r["train_acc"] > cfg.learnable]
    per_seed = [r for r in rows if np.isfinite(r["alpha"])]
    cell_id = lambda rs: np.array([f"{r['encoding']}/{r['task']}" for r in rs])
    out = {"learnable_cells": len(set(cell_id(learn))), "cells": len(set(cell_id(cells)))}
    for name, stat, over, clusters in (  # the rows each is over, the clusters it resamples
            ("rho", stats.spearman, learn, cell_id(learn)),
            ("precision", lambda a, g: stats.precision(a, g, cfg.alpha_min, cfg.lg_min),
             per_seed, None),
            ("auc", lambda a, g: stats.auc(a, g >= cfg.lg_min), cells, cell_id(cells))):
        alpha_lg = tuple(np.array([r[f] for r in over], float) for f in ("alpha", "lg"))
        out[name] = stat(*alpha_lg)
        out[f"{name}_ci"] = stats.bootstrap_ci(stat, alpha_lg, clusters, cfg.resamples)
    out["screened_rows"] = int(sum(r["alpha"] >= cfg.alpha_min for r in per_seed))
    out["rows"] = len(per_seed)
    return out


def stats_per_tier(rows: list[dict], cfg: Config) -> dict:
    """tier_stats of each tier's rows, tiers in the order they first appear."""
    return {t: tier_stats([r for r in rows if r["tier"] == t], cfg)
            for t in dict.fromkeys(r["tier"] for r in rows)}


def counts(rows: list[dict]) -> dict:
    """Measurements per tier in the main grid (core tasks) and beside it, vs the spec."""
    per = defaultdict(lambda: {"main": 0, "extra": 0})
    for r in rows:
        per[r["tier"]]["main" if r["task"] in CORE_TASKS else "extra"] += 1
    main = sum(per[t]["main"] for t in EXPECTED_TIERS)
    return {"per_tier": dict(per), "main": main, "expected_main": EXPECTED_MAIN *
            len(EXPECTED_TIERS), "reduced": main < EXPECTED_MAIN * len(EXPECTED_TIERS)}


# ---- the sweeps beside the main grid: each reads realizability-train results (and the
# realizability-alpha results at the matching L0) ----------------------------------------------


def sensitivity(main: dict, main_alpha: dict | None, runs: tuple[str, ...],
                alphas: tuple[str, ...], cfg: Config) -> dict:
    """Per L0: seed-mean LG and alpha at L = 3 L0 per (encoding, task), and rho / precision /
    AUC over those rows (1L1H)."""
    by_l0 = {}
    alpha_at = {a["config"]["L0"]: a for a in (
        load_alpha(p, "--sensitivity-alpha", "give a realizability-alpha results.json")
        for p in alphas)}
    if main_alpha is not None:
        alpha_at.setdefault(main["config"]["L0"], main_alpha)
    for train in [main] + [load_train(r, "--sensitivity") for r in runs]:
        L0 = train["config"]["L0"]
        L = 3 * L0
        table = alpha_table(alpha_at[L0], cfg.selection) if L0 in alpha_at else None
        rows = [r for r in measurements(train, table) if r["tier"] == "1L1H" and r["L"] == L]
        if not rows:
            raise ConfigError(f"--sensitivity: the L0 = {L0} results hold no 1L1H rows at "
                              f"L = 3 L0 = {L}; train them with --tiers 1L1H --test-lengths {L}")
        by_l0[L0] = {"L": L, "alpha": table is not None, "cells": seed_means(rows),
                     "stats": tier_stats(rows, cfg) if table else None}
    return dict(sorted(by_l0.items()))


def rope_scale(main: dict, alpha: dict | None, runs: tuple[str, ...]) -> list[dict]:
    """RoPE on skip-3 per frequency scale: seed-mean LG, train accuracy and alpha per length
    (alpha: the reference row of that scale at the alpha study's main num and base)."""
    at = {}  # scale -> {L: alpha}
    for r in alpha["rows"] if alpha else ():
        if (r["encoding"], r["task"], r["selection"], r["num"], r["base"]) == \
                ("rope", SCALE_TASK, "reference", alpha["config"]["num"], alpha["config"]["base"]):
            at.setdefault(r["scale"], dict(zip(alpha["lengths"], r["alpha"])))
    out = []
    for train in [main] + [load_train(r, "--rope-scale") for r in runs]:
        scale = train["config"]["rope_scale"]
        for c in seed_means(measurements(train, None)):
            if (c["tier"], c["encoding"], c["task"]) == ("1L1H", "rope", SCALE_TASK):
                out.append({"scale": scale, **c,
                            "alpha": at.get(scale, {}).get(c["L"], float("nan"))})
    return sorted(out, key=lambda r: (-r["scale"], r["L"]))


def scale_check(path: str, alpha: dict | None, cfg: Config) -> dict:
    """The main grid's per-tier statistics on the d = 128, 64-token grid."""
    train = load_train(path, "--scale-check")
    rows = measurements(train, alpha)
    main = sum(r["task"] in CORE_TASKS for r in rows)
    return {"d": train["config"]["d"], "vocab": train["config"]["vocab"],
            "seeds": train["config"]["run"]["seeds"], "cells": seed_means(rows),
            "stats": stats_per_tier(rows, cfg) if alpha else {},
            "main_measurements": main, "expected": EXPECTED_SCALE_CHECK}


def report(cfg: Config) -> dict:
    train = load_train(cfg.results)
    check_heatmap_length(train, cfg.heatmap_length)
    alpha_raw = load_alpha(cfg.alpha, "--alpha", "run the alpha study first or leave --alpha "
                           "empty for the LG side only") if cfg.alpha else None
    alpha = alpha_table(alpha_raw, cfg.selection) if alpha_raw is not None else None
    rows = measurements(train, alpha)
    result = {"experiment": "realizability-report", "results": cfg.results,
              "alpha_source": cfg.alpha, "selection": cfg.selection,
              "alpha": alpha is not None, "tiers": list(dict.fromkeys(r["tier"] for r in rows)),
              "rows": rows, "cells": seed_means(rows), "counts": counts(rows),
              "train_reduced": train["reduced"],
              "stats": stats_per_tier(rows, cfg) if alpha else {},
              "train_seconds": {f"{p['tier']}/{p['encoding']}": p["train_seconds"]
                                for p in train["programs"]},
              "thresholds": {"learnable": cfg.learnable, "alpha_min": cfg.alpha_min,
                             "lg_min": cfg.lg_min, "resamples": cfg.resamples}}
    if cfg.sensitivity:
        result["sensitivity"] = sensitivity(train, alpha_raw, cfg.sensitivity,
                                            cfg.sensitivity_alpha, cfg)
    if cfg.rope_scale:
        result["rope_scale"] = rope_scale(train, alpha_raw, cfg.rope_scale)
    if cfg.scale_check:
        result["scale_check"] = scale_check(cfg.scale_check, alpha, cfg)
    return result


# ---- tables --------------------------------------------------------------------------------


def fmt_ci(s: dict, name: str) -> str:
    """The statistic s[name] with its 95% interval s[name + "_ci"]."""
    lo, hi = s[f"{name}_ci"]
    return f"{s[name]:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def lg_alpha_lines(head: str, rows, lengths: list, alpha: bool) -> list[str]:
    """The column header (after `head`), then per (label, {L: cell}) of rows the label, the
    seed-mean LG at each length, alpha_L beside it (when alpha) and the train accuracy."""
    at = lambda row, f: "".join(f"{row[L][f]:7.3f}" if L in row else "      -" for L in lengths)
    columns = "".join(f"{L:>7d}" for L in lengths)
    lines = [head + columns + (" |" + columns if alpha else "") + "  train"]
    for label, row in rows:
        lines.append(label + at(row, "lg") + (" |" + at(row, "alpha") if alpha else "")
                     + f"  {next(iter(row.values()))['train_acc']:5.3f}")
    return lines


def table(result: dict) -> str:
    lines = []
    cells = result["cells"]
    lengths = sorted({c["L"] for c in cells})
    for tier in result["tiers"]:
        lines.append(f"\n{tier}: seed-mean LG@L (rows i >= L0)"
                     + (" | alpha_L" if result["alpha"] else " | alpha pending")
                     + "; train acc at L0")
        mine = [c for c in cells if c["tier"] == tier]
        rows = defaultdict(dict)
        for c in mine:
            rows[c["encoding"], c["task"]][c["L"]] = c
        lines += lg_alpha_lines(f"  {'encoding':11s}{'task':10s}", [
            (f"  {enc:11s}{task:10s}", row) for (enc, task), row in rows.items()], lengths,
            result["alpha"])
    if result["stats"]:
        th = result["thresholds"]
        lines.append(f"\ntier   learnable cells  Spearman rho [95% CI]     precision "
                     f"P[LG>={th['lg_min']:g}|a>={th['alpha_min']:g}] [CI] (screened/rows)  "
                     "screen AUC [CI]")
        for tier, s in result["stats"].items():
            lines.append(f"{tier:6s} {s['learnable_cells']:>3d}/{s['cells']:<3d}          "
                         f"{fmt_ci(s, 'rho')}  {fmt_ci(s, 'precision')} "
                         f"({s['screened_rows']}/{s['rows']})    {fmt_ci(s, 'auc')}")
    c = result["counts"]
    lines.append("\nmeasurements (encoding x task x L x seed): " + ", ".join(
        f"{t}: {v['main']} main + {v['extra']} beside" for t, v in c["per_tier"].items())
        + f"; main grid {c['main']}/{c['expected_main']} expected"
        + (" (REDUCED)" if c["reduced"] or result["train_reduced"] else ""))
    return "\n".join(lines + sweep_tables(result)).lstrip("\n")


def sweep_tables(result: dict) -> list[str]:
    """The lines of the sweeps' sections (those in result)."""
    lines = []
    sens = result.get("sensitivity")
    if sens:
        l0s = list(sens)
        lines.append("\nL0 sensitivity (1L1H, tested at L = 3 L0): seed-mean LG / alpha")
        lines.append(f"  {'encoding':11s}{'task':10s}" + "".join(
            f"{'L0=' + str(k) + ' @' + str(sens[k]['L']):>16s}" for k in l0s))
        at = {(k, c["encoding"], c["task"]): c for k in l0s for c in sens[k]["cells"]}
        for enc, task in dict.fromkeys((enc, task) for _, enc, task in at):
            lines.append(f"  {enc:11s}{task:10s}" + "".join(
                f"{c['lg']:9.3f} / {c['alpha']:4.2f}" if c else f"{'-':>16s}"
                for c in (at.get((k, enc, task)) for k in l0s)))
        for k in l0s:
            s = sens[k]["stats"]
            if s:
                lines.append(f"  L0 = {k:<3d} rho {fmt_ci(s, 'rho')}  precision "
                             f"{fmt_ci(s, 'precision')} ({s['screened_rows']}/{s['rows']})  AUC "
                             f"{fmt_ci(s, 'auc')}")
    scale = result.get("rope_scale")
    if scale:
        lines.append(f"\nRoPE frequency scale on {SCALE_TASK} (1L1H): seed-mean LG@L | alpha_L; "
                     "train acc")
        rows = [(f"  {s:6g}", {r["L"]: r for r in scale if r["scale"] == s})
                for s in dict.fromkeys(r["scale"] for r in scale)]
        lines += lg_alpha_lines(f"  {'scale':>6s}", rows, sorted({r["L"] for r in scale}), True)
    sc = result.get("scale_check")
    if sc:
        lines.append(f"\nscale check (d = {sc['d']}, {sc['vocab']} tokens, {sc['seeds']} seeds): "
                     f"{sc['main_measurements']} main-grid measurements ({sc['expected']} "
                     "expected)")
        for tier, s in sc["stats"].items():
            lines.append(f"  {tier:6s} learnable {s['learnable_cells']}/{s['cells']}  rho "
                         f"{fmt_ci(s, 'rho')}  precision {fmt_ci(s, 'precision')}  AUC "
                         f"{fmt_ci(s, 'auc')}")
    return lines


def main(cfg: Config) -> dict:
    if not cfg.results:
        raise ConfigError("results: give the realizability-train results (results.json or folder)")
    out = Path(cfg.out)
    check_writable(out, "--out")  # before the bootstraps, not after them
    result = report(cfg)
    from lgjax.studies.realizability import figures

    write_outputs(result, out, table, lambda r, stem: figures.draw(r, out, cfg.heatmap_length),
                  result_file="report.json")
    return result
