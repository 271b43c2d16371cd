"""The realizability report's sweeps beside the main grid (spec: realizability.md, "Statistics and
sweeps"): L0 sensitivity (1L1H trained at L0 in {10, 20, 40}, tested at 3 L0), the RoPE frequency
scale on skip-3 (alpha and trained 1L1H), and the scale check (d = 128, 64 tokens) with the main
grid's statistics. Each reads realizability-train results (and realizability-alpha results at
the matching L0); the main grid supplies L0 = 20 and scale 1.
"""

from __future__ import annotations

from lgjax.config import ConfigError
from lgjax.experiments import realizability_report as rr

SCALE_TASK = "skip-3"
EXPECTED_SCALE_CHECK = 700  # spec: measurements in the scale check


def sensitivity(main: dict, main_alpha: dict | None, runs: tuple[str, ...],
                alphas: tuple[str, ...], cfg) -> dict:
    """Per L0: seed-mean LG and alpha at L = 3 L0 per (encoding, task), and rho / precision /
    AUC over those rows (1L1H)."""
    by_l0 = {}
    alpha_at = {a["config"]["L0"]: a for a in (rr.load_alpha(p, "--sensitivity-alpha")
                                               for p in alphas)}
    if main_alpha is not None:
        alpha_at.setdefault(main["config"]["L0"], main_alpha)
    for train in [main] + [rr.load_train(r, "--sensitivity") for r in runs]:
        L0 = train["config"]["L0"]
        L = 3 * L0
        a = alpha_at.get(L0)
        table = rr.alpha_table(a, cfg.selection) if a else None
        rows = [r for r in rr.measurements(train, table) if r["tier"] == "1L1H" and r["L"] == L]
        if not rows:
            raise ConfigError(f"--sensitivity: the L0 = {L0} results hold no 1L1H rows at "
                              f"L = 3 L0 = {L}; train them with --tiers 1L1H --test-lengths {L}")
        by_l0[L0] = {"L": L, "alpha": table is not None, "cells": rr.seed_means(rows),
                     "stats": rr.tier_stats(rows, cfg) if table else None}
    return dict(sorted(by_l0.items()))


def rope_scale(main: dict, alpha: dict | None, runs: tuple[str, ...]) -> list[dict]:
    """RoPE on skip-3 per frequency scale: seed-mean LG, train accuracy and alpha per length."""
    out = []
    for train in [main] + [rr.load_train(r, "--rope-scale") for r in runs]:
        scale = train["config"]["rope_scale"]
        for c in rr.seed_means(rr.measurements(train, None)):
            if (c["tier"], c["encoding"], c["task"]) == ("1L1H", "rope", SCALE_TASK):
                out.append({"scale": scale, **c, "alpha": sweep_alpha(alpha, scale, c["L"])})
    return sorted(out, key=lambda r: (-r["scale"], r["L"]))


def sweep_alpha(alpha: dict | None, scale: float, L: int) -> float:
    if alpha is None:
        return float("nan")
    c = alpha["config"]
    for r in alpha["rows"]:
        if (r["encoding"], r["task"], r["selection"], r["num"], r["base"], r["scale"]) == \
                ("rope", SCALE_TASK, "reference", c["num"], c["base"], scale):
            return dict(zip(alpha["lengths"], r["alpha"])).get(L, float("nan"))
    return float("nan")


def scale_check(path: str, alpha_table: dict | None, cfg) -> dict:
    """The main grid's per-tier statistics on the d = 128, 64-token grid."""
    train = rr.load_train(path, "--scale-check")
    rows = rr.measurements(train, alpha_table)
    main = sum(r["task"] in rr.CORE_TASKS for r in rows)
    return {"d": train["config"]["d"], "vocab": train["config"]["vocab"],
            "seeds": train["config"]["run"]["seeds"], "cells": rr.seed_means(rows),
            "stats": rr.stats_per_tier(rows, cfg) if alpha_table else {},
            "main_measurements": main, "expected": EXPECTED_SCALE_CHECK}


def tables(result: dict) -> list[str]:
    lines = []
    sens = result.get("sensitivity")
    if sens:
        l0s = list(sens)
        lines.append("\nL0 sensitivity (1L1H, tested at L = 3 L0): seed-mean LG / alpha")
        lines.append(f"  {'encoding':11s}{'task':10s}" + "".join(
            f"{'L0=' + str(k) + ' @' + str(sens[k]['L']):>16s}" for k in l0s))
        keys = dict.fromkeys((c["encoding"], c["task"]) for k in l0s for c in sens[k]["cells"])
        for enc, task in keys:
            cells = [next((c for c in sens[k]["cells"]
                           if (c["encoding"], c["task"]) == (enc, task)), None) for k in l0s]
            lines.append(f"  {enc:11s}{task:10s}" + "".join(
                f"{c['lg']:9.3f} / {c['alpha']:4.2f}" if c else f"{'-':>16s}" for c in cells))
        for k in l0s:
            s = sens[k]["stats"]
            if s:
                lines.append(f"  L0 = {k:<3d} rho {rr.fmt_ci(s['rho'], s['rho_ci'])}  precision "
                             f"{rr.fmt_ci(s['precision'], s['precision_ci'])} "
                             f"({s['screened_rows']}/{s['rows']})  AUC "
                             f"{rr.fmt_ci(s['auc'], s['auc_ci'])}")
    scale = result.get("rope_scale")
    if scale:
        lengths = sorted({r["L"] for r in scale})
        lines.append(f"\nRoPE frequency scale on {SCALE_TASK} (1L1H): seed-mean LG@L | alpha_L; "
                     "train acc")
        lines.append(f"  {'scale':>6s}" + "".join(f"{L:>7d}" for L in lengths) + " |"
                     + "".join(f"{L:>7d}" for L in lengths) + "  train")
        for s in dict.fromkeys(r["scale"] for r in scale):
            row = {r["L"]: r for r in scale if r["scale"] == s}
            lines.append(f"  {s:6g}" + "".join(f"{row[L]['lg']:7.3f}" for L in lengths) + " |"
                         + "".join(f"{row[L]['alpha']:7.3f}" for L in lengths)
                         + f"  {row[lengths[0]]['train_acc']:5.3f}")
    sc = result.get("scale_check")
    if sc:
        lines.append(f"\nscale check (d = {sc['d']}, {sc['vocab']} tokens, {sc['seeds']} seeds): "
                     f"{sc['main_measurements']} main-grid measurements ({sc['expected']} "
                     "expected)")
        for tier, s in sc["stats"].items():
            lines.append(f"  {tier:6s} learnable {s['learnable_cells']}/{s['cells']}  rho "
                         f"{rr.fmt_ci(s['rho'], s['rho_ci'])}  precision "
                         f"{rr.fmt_ci(s['precision'], s['precision_ci'])}  AUC "
                         f"{rr.fmt_ci(s['auc'], s['auc_ci'])}")
    return lines


def add(result: dict, cfg, train: dict, alpha: dict | None, alpha_tab: dict | None) -> None:
    """Fill result's sweep sections from cfg's extra results (those given)."""
    if cfg.sensitivity:
        result["sensitivity"] = sensitivity(train, alpha, cfg.sensitivity,
                                            cfg.sensitivity_alpha, cfg)
    if cfg.rope_scale:
        result["rope_scale"] = rope_scale(train, alpha, cfg.rope_scale)
    if cfg.scale_check:
        result["scale_check"] = scale_check(cfg.scale_check, alpha_tab, cfg)
