"""realizability-report: the training-free score alpha_L beside the trained grid's LG@L.

Spec: realizability.md, "Statistics and sweeps". Reads the grid's results (realizability-train)
and the alpha study's results.json, then per tier: alpha next to LG at each length; Spearman rho
over learnable (cell, L) rows (cell = encoding x task, seeds averaged; learnable: mean train
accuracy > 0.8) with a cluster-bootstrap 95% CI over cells; the sufficiency precision
P[LG >= 0.7 | alpha >= 0.5] over (encoding, task, L, seed) rows with a row-bootstrap CI; the
screen AUC (label: seed-mean LG >= 0.7) over (encoding, task, L) rows with a cluster-bootstrap CI;
counts of measurements against the spec's expected counts. Figures: alpha vs LG per tier,
heatmaps of alpha and LG at L = 60 (encoding x task), LG and alpha against L, rho and precision
against depth. Without alpha results only the LG side is printed and drawn.
Command: lgjax realizability-report RESULTS --alpha results/realizability-alpha/results.json
  (RESULTS: realizability-train's --out folder; seconds).
Expect: alpha tracks 1-layer LG closely (high rho); at depth alpha stays a high-precision
sufficient screen while rho weakens.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lgjax import stats
from lgjax.config import ConfigError
from lgjax.experiments import realizability_sweeps  # imports this module back, used at call time

CORE_TASKS = ("prev", "skip-2", "skip-3", "skip-5", "copy", "reverse", "first")  # main grid
EXPECTED_MAIN = 5 * 7 * 5 * 5  # PE x core tasks x lengths x seeds, per tier (x 3 tiers = 2625)
EXPECTED_TIERS = ("1L1H", "2L4H", "4L4H")
ALPHA_ENCODING = {"learned-abs": "ape"}  # the alpha study's encoding names -> the model's


@dataclass(frozen=True)
class Config:
    results: str = field(default="", metadata={"positional": True})  # realizability-train results
    alpha: str = ""  # the alpha study's results.json (empty: print the LG side only)
    selection: str = "reference"  # which alpha: reference, or an ablation (lbfgs, min_norm, margin)
    out: str = "results/realizability-report"  # report.json and figures go here
    learnable: float = 0.8  # a cell is learnable when its mean train accuracy exceeds this
    alpha_min: float = 0.5  # the screen: alpha_L >= this predicts length generalization
    lg_min: float = 0.7  # length generalization: LG@L >= this
    resamples: int = 10_000  # bootstrap resamples (percentile intervals)
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


def load_train(path: str, flag: str = "results") -> dict:
    p = Path(path)
    p = p / "results.json" if p.is_dir() else p
    if not p.is_file():
        raise ConfigError(f"{flag}: {p} does not exist; give the realizability-train results.json "
                          "(or its folder)")
    result = json.loads(p.read_text())
    if result.get("experiment") != "realizability-train":
        raise ConfigError(f"{flag}: {p} is not a realizability-train result")
    return result


def load_alpha(path: str, flag: str = "--alpha",
               hint: str = "give a realizability-alpha results.json") -> dict:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{flag}: {p} does not exist; {hint}")
    return json.loads(p.read_text())


def measurements(train: dict, alpha: dict | None) -> list[dict]:
    """One row per (tier, encoding, task, seed, L)."""
    rows = []
    for p in train["programs"]:
        by_task = (alpha or {}).get(p["encoding"], {})
        for i, task in enumerate(p["tasks"]):
            for j, seed in enumerate(p["seeds"]):
                for k, L in enumerate(p["lengths"]):
                    rows.append({"tier": p["tier"], "encoding": p["encoding"], "task": task,
                                 "seed": seed, "L": L, "lg": p["lg"][i][j][k],
                                 "acc_all": p["acc_all"][i][j][k],
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
    col = lambda rs, f: np.array([r[f] for r in rs], float)
    cell_id = lambda rs: np.array([f"{r['encoding']}/{r['task']}" for r in rs])
    out = {"learnable_cells": len(set(cell_id(learn))), "cells": len(set(cell_id(cells)))}
    out["rho"] = stats.spearman(col(learn, "alpha"), col(learn, "lg"))
    out["rho_ci"] = stats.bootstrap_ci(stats.spearman, (col(learn, "alpha"), col(learn, "lg")),
                                       cell_id(learn), cfg.resamples)
    per_seed = [r for r in rows if np.isfinite(r["alpha"])]
    prec = lambda a, g: stats.precision(a, g, cfg.alpha_min, cfg.lg_min)
    a, g = col(per_seed, "alpha"), col(per_seed, "lg")
    out["precision"] = prec(a, g)
    out["precision_ci"] = stats.bootstrap_ci(prec, (a, g), None, cfg.resamples)
    out["screened_rows"] = int((a >= cfg.alpha_min).sum())
    out["rows"] = len(per_seed)
    screen = lambda a, g: stats.auc(a, g >= cfg.lg_min)
    a, g = col(cells, "alpha"), col(cells, "lg")
    out["auc"] = screen(a, g)
    out["auc_ci"] = stats.bootstrap_ci(screen, (a, g), cell_id(cells), cfg.resamples)
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


def report(cfg: Config) -> dict:
    train = load_train(cfg.results)
    alpha_raw = alpha = None
    if cfg.alpha:
        alpha_raw = load_alpha(cfg.alpha, "--alpha", "run the alpha study first or leave --alpha "
                               "empty for the LG side only")
        alpha = alpha_table(alpha_raw, cfg.selection)
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
    realizability_sweeps.add(result, cfg, train, alpha_raw, alpha)
    return result


def fmt_ci(x: float, ci) -> str:
    return f"{x:+.3f} [{ci[0]:+.3f}, {ci[1]:+.3f}]"


def table(result: dict) -> str:
    lines = []
    cells = result["cells"]
    lengths = sorted({c["L"] for c in cells})
    for tier in result["tiers"]:
        lines.append(f"\n{tier}: seed-mean LG@L (rows i >= L0)"
                     + (" | alpha_L" if result["alpha"] else " | alpha pending")
                     + "; train acc at L0")
        lines.append(f"  {'encoding':11s}{'task':10s}" + "".join(f"{L:>7d}" for L in lengths)
                     + (" |" + "".join(f"{L:>7d}" for L in lengths) if result["alpha"] else "")
                     + "  train")
        mine = [c for c in cells if c["tier"] == tier]
        for enc in dict.fromkeys(c["encoding"] for c in mine):
            for task in dict.fromkeys(c["task"] for c in mine if c["encoding"] == enc):
                row = {c["L"]: c for c in mine if c["encoding"] == enc and c["task"] == task}
                lg = "".join(f"{row[L]['lg']:7.3f}" if L in row else "      -" for L in lengths)
                al = " |" + "".join(f"{row[L]['alpha']:7.3f}" if L in row else "      -"
                                    for L in lengths) if result["alpha"] else ""
                train = next(iter(row.values()))["train_acc"]
                lines.append(f"  {enc:11s}{task:10s}{lg}{al}  {train:5.3f}")
    if result["stats"]:
        th = result["thresholds"]
        lines.append(f"\ntier   learnable cells  Spearman rho [95% CI]     precision "
                     f"P[LG>={th['lg_min']:g}|a>={th['alpha_min']:g}] [CI] (screened/rows)  "
                     "screen AUC [CI]")
        for tier, s in result["stats"].items():
            lines.append(f"{tier:6s} {s['learnable_cells']:>3d}/{s['cells']:<3d}          "
                         f"{fmt_ci(s['rho'], s['rho_ci'])}  "
                         f"{fmt_ci(s['precision'], s['precision_ci'])} "
                         f"({s['screened_rows']}/{s['rows']})    {fmt_ci(s['auc'], s['auc_ci'])}")
    c = result["counts"]
    lines.append("\nmeasurements (encoding x task x L x seed): " + ", ".join(
        f"{t}: {v['main']} main + {v['extra']} beside" for t, v in c["per_tier"].items())
        + f"; main grid {c['main']}/{c['expected_main']} expected"
        + (" (REDUCED)" if c["reduced"] or result["train_reduced"] else ""))
    lines += realizability_sweeps.tables(result)
    return "\n".join(lines).lstrip("\n")


def main(cfg: Config) -> dict:
    if not cfg.results:
        raise ConfigError("results: give the realizability-train results (results.json or folder)")
    result = report(cfg)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(result, indent=1))
    from lgjax.experiments import realizability_figures

    written = realizability_figures.draw(result, out, cfg.heatmap_length)
    print(table(result))
    print(f"wrote {out}/: report.json, {', '.join(written)}")
    return result
