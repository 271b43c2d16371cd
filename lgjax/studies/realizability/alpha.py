"""realizability-alpha: the training-free score alpha_L for every encoding x task x length, its
ablations (other selections at L0) and its frequency sweeps (docs/studies/realizability.md).

alpha_L: fit one positional-only head at L0 = 20 (reference: zero init, Adam lr 0.1 with coupled
weight decay 1e-4, 400 full-batch steps), keep it fixed, and count the new rows i in [L0, L) whose
strict argmax over keys j <= i is the target. Beside it: the in-range argmax accuracy at L0 (a cell
below 1 is flagged "*": the head does not realize the task even at L0) and three other selections
(L-BFGS to convergence on the same objective, the min-norm interpolant, the hard margin).
Sweeps (reference only): RoPE and sinusoidal num x base, RoPE frequency scale.
Command: lgjax realizability-alpha     (training-free; ~50 s here on a loaded 2-core CPU, mostly
compiling 10 programs; the min-norm ablation depends on rcond: its sensitivity is printed)
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from lgjax.config import require
from lgjax.encodings import ENCODINGS
from lgjax.harness.ranges import option
from lgjax.harness.study import Study
from lgjax.studies.realizability import score as scoring
from lgjax.studies.realizability.score import TASK_NAMES

ABLATIONS = ("lbfgs", "min_norm", "margin")
LABELS = {"reference": "zero init, Adam lr {lr:g}, coupled weight decay {weight_decay:g}, "
                       "{steps} full-batch steps (the pinned selection)",
          "lbfgs": "mean CE + wd/2 |W|^2 to convergence: optax L-BFGS, float64, "
                   "|grad| < {lbfgs_tol:g}",
          "min_norm": "min-Frobenius-norm least squares onto the 0/1 target pattern "
                      "(float64 pseudo-inverse, rcond {rcond:g})",
          "margin": "hard margin, the wd -> 0 limit: min |W| s.t. every target beats every "
                    "other key by 1 (exact NNLS)"}


@dataclass(frozen=True)
class Config:
    encodings: tuple[str, ...] = ("ape", "nope", "alibi", "sinusoidal", "rope")  # heads
    tasks: tuple[str, ...] = TASK_NAMES  # target rules; "skip-k" reads i-k, "pos-k" reads slot k
    L0: int = option(
        20, ge=1)  # training length: the head is fitted on the rows of one length-L0 sequence
    lengths: tuple[int, ...] = (30, 40, 50, 60, 80)  # transfer lengths L > L0
    focus_length: int = 60  # the length shown in the sweep tables and the heatmap
    num: int = option(16, ge=1)  # frequencies of RoPE / sinusoidal in the main table
    base: float = option(1e4, gt=1)  # theta_k = scale * base^(-k/num) in the main table
    scale: float = option(1.0, gt=0)  # frequency scale in the main table
    sweep_nums: tuple[int, ...] = option(
        (8, 16, 32), ge=1)  # frequency counts swept (reference selection)
    sweep_bases: tuple[float, ...] = option((1e3, 1e4, 1e5), gt=1)  # bases swept with every count
    sweep_scales: tuple[float, ...] = option(
        (1.0, 0.3, 0.1, 0.03, 0.01), gt=0)  # frequency scales at num, base
    scale_encodings: tuple[str, ...] = ("rope",)  # encodings the scale sweep applies to
    lr: float = option(0.1, gt=0)  # reference Adam learning rate (pinned)
    weight_decay: float = option(
        1e-4, ge=0)  # coupled weight decay (pinned); L-BFGS uses CE + wd/2 |W|^2
    steps: int = option(400, ge=1)  # reference Adam steps (pinned, no convergence test)
    lbfgs_tol: float = option(1e-8, gt=0)  # L-BFGS (float64) stops at this gradient 2-norm
    lbfgs_iters: int = option(5000, ge=1)  # ... or after this many iterations
    rcond: float = option(
        1e-6, ge=0)  # min-norm fit: singular values below rcond x the largest count as 0
    min_norm_rconds: tuple[float, ...] = option(
        (1e-4, 1e-8, 1e-10), ge=0)  # rcond sensitivity of min-norm
    rtol: float = option(
        1e-12, ge=0)  # ablations' row-space basis: smaller singular values are rounding
    tie: float = option(1e-6, ge=0)  # a key within this of the target's score counts as a miss
    out: str = "results/realizability-alpha"  # results.json, alpha.png/.pdf

    def recipe(self) -> scoring.Recipe:
        return scoring.Recipe(**{f.name: getattr(self, f.name) for f in fields(scoring.Recipe)})


def alpha_undefined(name: str) -> str | None:
    """None where alpha_L is defined for the encoding; otherwise the one line that says why not.
    alpha_L scores a positional-only head; a content-aware encoding's positional term reads
    queries, keys or token states, and no positional restriction of one is registered, so its
    behaviours would read as no position at all (NoPE's constant feature): a silent zero."""
    enc = ENCODINGS[name]
    if enc.kind != "content":
        return None
    why = (f"alpha_L undefined for {name}: it is defined on a positional-only head, and a "
           "content-aware encoding's positional term reads queries, keys or token states")
    if enc.positional_restriction is None:
        return why + " (no positional restriction of it is defined here)"
    label = enc.positional_restriction(enc.options())[2]
    return why + f"; `lgjax profile {name}` reports alpha_L {label}"


def check(cfg: Config) -> None:
    for enc in (*cfg.encodings, *cfg.scale_encodings):
        why = alpha_undefined(enc) if enc in ENCODINGS else None
        require(why is None, "encodings", str(why))
        require(enc in scoring.HEADS, "encodings", f"unknown encoding {enc!r}; choose from "
                f"{sorted(scoring.HEADS)}")
    for name in cfg.tasks:
        need = scoring.min_length(name)  # raises ConfigError for an unknown or malformed name
        require(cfg.L0 >= need, "L0", f"task {name!r} needs L0 >= {need}; raise L0")
    require(len(cfg.lengths) > 0 and min(cfg.lengths) > cfg.L0, "lengths",
            f"transfer lengths must exceed L0 = {cfg.L0}")
    require(cfg.focus_length in cfg.lengths, "focus_length", "must be one of lengths")
    require(min(cfg.num, *cfg.sweep_nums) >= 1, "num/sweep_nums", "need >= 1 frequency")
    require(min(cfg.base, *cfg.sweep_bases) > 1, "base/sweep_bases", "a base must exceed 1")
    require(min(cfg.scale, *cfg.sweep_scales) > 0, "scale/sweep_scales", "must be > 0")
    require(cfg.steps >= 1, "steps", "need at least one Adam step")


def runs(cfg: Config) -> dict:
    return {}  # training-free


# ---- the grid ------------------------------------------------------------------------------


def families(cfg: Config) -> list[dict]:
    """One reference program per (encoding, frequency count): its settings (base, scale), the
    main setting first where the family holds it."""
    main, out = (cfg.base, cfg.scale), []
    for enc in cfg.encodings:
        if not scoring.HEADS[enc].frequencies:
            out.append({"encoding": enc, "num": cfg.num, "settings": [main]})
            continue
        scales = cfg.sweep_scales if enc in cfg.scale_encodings else ()
        for num in dict.fromkeys((cfg.num, *cfg.sweep_nums)):
            settings = [main] if num == cfg.num else []
            settings += [(b, cfg.scale) for b in cfg.sweep_bases]
            settings += [(cfg.base, s) for s in scales] if num == cfg.num else []
            out.append({"encoding": enc, "num": num, "settings": list(dict.fromkeys(settings))})
    return out


def measure(cfg: Config, trained: dict | None = None) -> dict:
    t0 = time.perf_counter()
    recipe, Lmax = cfg.recipe(), max(cfg.lengths)
    scored = [n for n in cfg.tasks if scoring.positional(n)]
    t_TxL0 = jnp.asarray(np.stack([scoring.targets(n, cfg.L0) for n in scored]))
    rows_TxRxL = jnp.asarray(np.stack([scoring.row_sets(n, cfg.L0, cfg.lengths, Lmax)
                                       for n in scored]))
    rows, timing = [], []
    for fam in families(cfg):
        enc, head, tf = fam["encoding"], scoring.HEADS[fam["encoding"]], time.perf_counter()
        theta = np.stack([scoring.frequencies(fam["num"], b, s) for b, s in fam["settings"]])
        out = jax.tree.map(np.asarray, scoring.reference_family(
            enc, head.shape(fam["num"], cfg.L0), recipe, jnp.asarray(theta), t_TxL0, rows_TxRxL))
        timing.append({"program": f"reference {enc} num={fam['num']}",
                       "cells": len(fam["settings"]) * len(scored),
                       "seconds": time.perf_counter() - tf})
        for s, (base, scale) in enumerate(fam["settings"]):
            setting = _setting(head, fam["num"], base, scale)
            main = fam["num"] == cfg.num and (base, scale) == (cfg.base, cfg.scale)
            rows += _rows(enc, "reference", setting, main, out, s, scored, cfg)
    tf = time.perf_counter()
    out = scoring.ablations(recipe, cfg.encodings, cfg.num,
                            scoring.frequencies(cfg.num, cfg.base, cfg.scale), t_TxL0,
                            rows_TxRxL, rconds=cfg.min_norm_rconds)
    timing.append({"program": "ablations (float64, all encodings)",
                   "cells": len(out) * len(cfg.encodings) * len(scored),
                   "seconds": time.perf_counter() - tf})
    for e, enc in enumerate(cfg.encodings):
        setting = _setting(scoring.HEADS[enc], cfg.num, cfg.base, cfg.scale)
        for sel in out:
            rows += _rows(enc, sel, setting, True, out[sel], e, scored, cfg)
    return {"experiment": "realizability-alpha", "config": asdict(cfg),
            "lengths": list(cfg.lengths), "rows": rows, "timing": timing,
            "wall_seconds": time.perf_counter() - t0, "loadavg_1min": os.getloadavg()[0]}


def _setting(head, num, base, scale) -> dict:
    if head.frequencies:
        return {"num": num, "base": base, "scale": scale}
    return {"num": None, "base": None, "scale": None}  # the feature map has no frequencies


def _rows(enc, sel, setting, main, res, i, scored, cfg) -> list[dict]:
    """The rows of one (encoding, selection, setting): the scored tasks' (task k's leaves at
    res[...][i, k]), then the content-dependent tasks' (alpha := 0)."""
    rows = []
    for k, task in enumerate(scored):
        frac = res["frac"][i, k]
        diag = {key: float(v[i, k]) for key, v in res.items() if key != "frac"}
        flags = [flag for flag, raised in (
            ("not realized at L0", frac[0] < 1.0),
            ("L-BFGS not converged", sel == "lbfgs" and diag["grad_norm"] >= cfg.lbfgs_tol),
            ("infeasible at L0", sel == "margin" and not diag["min_margin"] >= 1 - 1e-6)) if raised]
        rows.append({"encoding": enc, "task": task, "selection": sel, **setting, "main": main,
                     "acc_L0": float(frac[0]), "alpha": [float(a) for a in frac[1:]],
                     "flags": flags, "diag": diag})
    return rows + [{"encoding": enc, "task": task, "selection": sel, **setting, "main": main,
                    "acc_L0": None, "alpha": [0.0] * len(cfg.lengths),
                    "flags": ["content-dependent: alpha := 0"], "diag": {}}
                   for task in cfg.tasks if task not in scored]


# ---- tables --------------------------------------------------------------------------------


def _cells(result, sel, main=True):
    return [r for r in result["rows"] if r["selection"] == sel and r["main"] == main]


def _alpha_block(result, sel) -> list[str]:
    L0, lengths = result["config"]["L0"], result["lengths"]
    head = f"{'encoding':12s}{'task':10s}{f'acc@{L0}':>8s}" + "".join(
        f"{f'a{L}':>7s}" for L in lengths) + "  flags"
    lines = [f"alpha_L, {sel} selection: {LABELS[sel].format(**result['config'])}",
             f"acc@{L0}: in-range argmax accuracy at L0; * = not realized at L0", head]
    for r in _cells(result, sel):
        acc = "-" if r["acc_L0"] is None else f"{r['acc_L0']:.3f}"
        star = "*" if "not realized at L0" in r["flags"] else " "
        lines.append(f"{r['encoding']:12s}{r['task']:10s}{acc:>7s}{star}"
                     + "".join(f"{a:7.3f}" for a in r["alpha"]) + "  " + "; ".join(r["flags"]))
    return lines


def _ablation_block(result) -> list[str]:
    cfg, L0, L = result["config"], result["config"]["L0"], result["config"]["focus_length"]
    idx, Lmax = result["lengths"].index(L), len(result["lengths"]) - 1
    sels = ("reference", *ABLATIONS)
    lines = [f"selections side by side: acc@{L0} (* = not realized at L0), alpha_{L}, "
             f"alpha_{result['lengths'][-1]}"]
    lines += [f"  {sel:9s} {LABELS[sel].format(**cfg)}" for sel in sels]
    lines.append(f"{'encoding':12s}{'task':10s}" + "".join(f"{sel:>21s}" for sel in sels))
    by = {(r["encoding"], r["task"], r["selection"]): r for r in result["rows"] if r["main"]}
    for r in _cells(result, "reference"):
        line = f"{r['encoding']:12s}{r['task']:10s}"
        for sel in sels:
            c = by[r["encoding"], r["task"], sel]
            acc = "  -  " if c["acc_L0"] is None else f"{c['acc_L0']:5.2f}"
            star = "*" if "not realized at L0" in c["flags"] else " "
            line += f"   {acc}{star}{c['alpha'][idx]:6.2f}{c['alpha'][Lmax]:6.2f}"
        lines.append(line)
    return lines + [_diag_summary(result, sel) for sel in sels] + _sensitivity(result)


def _diag_summary(result, sel) -> str:
    cells = [r for r in _cells(result, sel) if r["diag"]]
    if sel == "reference":
        rise = max(r["diag"]["ce_max_rise"] for r in cells)
        up = [f"{r['encoding']}/{r['task']}" for r in cells
              if r["diag"]["ce_end"] >= r["diag"]["ce_start"]]
        return (f"  reference: largest one-step CE rise on the Adam path {rise:.3g}; final CE "
                f"not below the initial: {', '.join(up) or 'none'}")
    if sel == "lbfgs":
        return (f"  lbfgs: max final gradient norm {max(r['diag']['grad_norm'] for r in cells):.1e}"
                f" (tol {result['config']['lbfgs_tol']:g}); iterations "
                f"{min(r['diag']['iters'] for r in cells):.0f}-"
                f"{max(r['diag']['iters'] for r in cells):.0f}")
    if sel == "min_norm":
        res = [r["diag"]["rms_residual"] for r in cells]
        exact = sum(x < 1e-6 for x in res)
        return (f"  min_norm: rms residual of the least-squares fit {min(res):.2f}-{max(res):.2f}"
                f"; {exact} cells interpolate exactly")
    bad = [f"{r['encoding']}/{r['task']}" for r in cells if "infeasible at L0" in r["flags"]]
    return (f"  margin: {len(cells) - len(bad)} cells feasible; no margin-1 solution at L0: "
            f"{', '.join(bad)}")


def _sensitivity(result) -> list[str]:
    """The min-norm interpolant at other rconds: the cells whose alpha at the focus length (or
    acc at L0) moves."""
    cfg, L = result["config"], result["config"]["focus_length"]
    idx = result["lengths"].index(L)
    base = {(r["encoding"], r["task"]): r for r in _cells(result, "min_norm")}
    out = [f"  min_norm rcond sensitivity (vs rcond {cfg['rcond']:g}; cells whose acc@L0 or "
           f"alpha_{L} moves):"]
    for rc in cfg["min_norm_rconds"]:
        moved = []
        for r in _cells(result, f"min_norm@{rc:g}"):
            b = base[r["encoding"], r["task"]]
            if r["acc_L0"] is not None and (abs(r["alpha"][idx] - b["alpha"][idx]) > 1e-9
                                            or abs(r["acc_L0"] - b["acc_L0"]) > 1e-9):
                moved.append(f"{r['encoding']}/{r['task']} {b['alpha'][idx]:.2f}->"
                             f"{r['alpha'][idx]:.2f}")
        out.append(f"    rcond {rc:g}: {len(moved)} cells: {', '.join(moved)}")
    return out


def _sweep_block(result, enc) -> list[str]:
    cfg, L = result["config"], result["config"]["focus_length"]
    idx = result["lengths"].index(L)
    cells = [r for r in result["rows"] if r["encoding"] == enc and r["selection"] == "reference"]
    settings = list(dict.fromkeys((r["num"], r["base"], r["scale"]) for r in cells))
    settings.sort(key=lambda s: (s[2] != cfg["scale"], s[0], s[1], -s[2]))
    lines = [f"{enc}: alpha_{L} by frequency setting (reference selection; * = not realized "
             f"at L0)", f"{'num':>4s}{'base':>8s}{'scale':>7s} " + "".join(
                 f"{t:>10s}" for t in cfg["tasks"])]
    for num, base, scale in settings:
        by_task = {r["task"]: r for r in cells if (r["num"], r["base"], r["scale"])
                   == (num, base, scale)}
        vals = "".join(f"{by_task[t]['alpha'][idx]:9.3f}"
                       + ("*" if "not realized at L0" in by_task[t]["flags"] else " ")
                       for t in cfg["tasks"])
        lines.append(f"{num:4d}{base:8.0e}{scale:7.2f} {vals}")
    return lines


def table(result: dict) -> str:
    lines = _alpha_block(result, "reference") + [""] + _ablation_block(result) + [""]
    for enc in result["config"]["encodings"]:
        if scoring.HEADS[enc].frequencies:
            lines += _sweep_block(result, enc) + [""]
    t = result["timing"]
    lines.append(f"measure: {result['wall_seconds']:.1f} s wall for {len(t)} programs "
                 f"(1-min load average {result['loadavg_1min']:.1f} on {os.cpu_count()} CPUs)")
    return "\n".join(lines)


# ---- figure --------------------------------------------------------------------------------


def figure(result: dict, path: Path) -> None:
    """Top: alpha at the focus length, encoding x task. Bottom: alpha against L per encoding
    (task x length). * = not realized at L0; "def" = content-dependent, alpha := 0."""
    from matplotlib.figure import Figure

    from lgjax.harness.outputs import save
    from lgjax.studies.realizability.figures import heat

    cfg, lengths = result["config"], result["lengths"]
    encs, tasks, L = cfg["encodings"], cfg["tasks"], cfg["focus_length"]
    ref = {(r["encoding"], r["task"]): r for r in _cells(result, "reference")}
    fig = Figure(figsize=(max(12, 3.4 * len(encs)), 3.2 + 0.45 * (len(encs) + len(tasks))))
    grid = fig.add_gridspec(2, len(encs), height_ratios=(len(encs) + 1.5, len(tasks)))
    ax = fig.add_subplot(grid[0, :])
    a = np.array([[ref[e, t]["alpha"][lengths.index(L)] for t in tasks] for e in encs])
    im = heat(ax, a, [[_mark(ref[e, t]) for t in tasks] for e in encs], aspect="auto")
    ax.set_xticks(range(len(tasks)), tasks)
    ax.set_yticks(range(len(encs)), encs)
    ax.set_title(f"alpha_{L}: share of the new rows (L0 = {cfg['L0']} <= i < {L}) where a "
                 f"positional-only head fitted at L0 still puts its argmax on the target\n"
                 f"(reference selection; * = target not realized even at L0, def = "
                 f"content-dependent task, alpha := 0)")
    fig.colorbar(im, ax=ax, label=f"alpha_{L}")
    for k, e in enumerate(encs):
        axe = fig.add_subplot(grid[1, k])
        heat(axe, np.array([ref[e, t]["alpha"] for t in tasks]),
             [[_mark(ref[e, t])] * len(lengths) for t in tasks], fontsize=7, aspect="auto")
        axe.set_xticks(range(len(lengths)), lengths)
        axe.set_yticks(range(len(tasks)), tasks if k == 0 else [])
        axe.set(xlabel="test length L", title=f"{e}: alpha_L against L")
    save(fig, path)


def _mark(row) -> str:
    if row["acc_L0"] is None:
        return " def"
    return "*" if "not realized at L0" in row["flags"] else ""


STUDY = Study(__name__, Config, runs, measure, table, check=check, figure=figure)
