"""The card's comparison: for each trained instrument, the profiled encoding against each
canonical encoding as a difference with a 95% interval over seeds and tasks, and a verdict word.

Each trained instrument gives one number per (task, seed), higher is better (METRICS). The
difference is profiled minus canonical of the task-averaged seed means, over the tasks both
have. Its interval:
  welch   every task has >= 2 seeds of each encoding: Welch's t interval over seeds,
          stratified by task (the standard error from each task's two seed variances, the
          Welch-Satterthwaite degrees of freedom). Seeds are not paired: a seed fixes the data
          stream and evaluation sequences (lgjax.keys) but not the initialisation, which
          differs between encodings (their parameters differ), and tasks are held fixed: the
          question is "on these tasks".
  tasks   some task has a single seed (the quick recipe's realizability row): a paired t
          interval over tasks of the per-task differences (tasks are the replicates).
  none    one task of one seed: no interval; the verdict is "indistinguishable".
Verdict: "better" when the whole interval lies above 0, "worse" when below, otherwise
"indistinguishable". An interval of zero width (no spread anywhere) is just the difference.
scipy gives the t quantiles.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import stdtrit

from lgjax.profile.summary import FOCUS, IB_LONG

LEVEL = 0.95
RULE = (f"difference = profiled minus canonical, of the task-averaged seed means (higher is "
        f"better); {LEVEL:.0%} interval: Welch's t over seeds, stratified by task "
        "(Welch-Satterthwaite df), or, where a task has a single seed, a paired t over tasks of "
        "the per-task differences; verdict: better if the interval lies above 0, worse if below "
        "0, indistinguishable if it contains 0 or cannot be formed (one task of one seed)")


def interval(a: list, b: list, level: float = LEVEL) -> dict:
    """a, b: per task, the seed values of the profiled and the canonical encoding (the same
    tasks, in the same order). The difference of the task-averaged means, its interval, the
    method and degrees of freedom, and the verdict."""
    a, b = [np.asarray(x, np.float64) for x in a], [np.asarray(y, np.float64) for y in b]
    T = len(a)
    d_T = np.array([x.mean() - y.mean() for x, y in zip(a, b)])
    diff = float(d_T.mean())
    if all(len(x) >= 2 for x in a + b):
        parts = [x.var(ddof=1) / len(x) / T ** 2 for x in a + b]  # Var of each mean's share
        se2 = float(sum(parts))
        dfs = [len(x) - 1 for x in a + b]
        df = se2 ** 2 / sum(p ** 2 / n for p, n in zip(parts, dfs)) if se2 > 0 else None
        method = "welch"
    elif T >= 2:
        se2, df, method = float(d_T.var(ddof=1) / T), T - 1, "tasks"
    else:
        return {"diff": diff, "lo": None, "hi": None, "df": None, "method": "none",
                "verdict": "indistinguishable", "tasks": T,
                "seeds": [len(a[0]), len(b[0])]}
    half = 0.0 if se2 == 0 else float(stdtrit(df, 0.5 + level / 2)) * math.sqrt(se2)
    lo, hi = diff - half, diff + half
    verdict = "better" if lo > 0 else "worse" if hi < 0 else "indistinguishable"
    return {"diff": diff, "lo": lo, "hi": hi, "df": df, "method": method, "verdict": verdict,
            "tasks": T, "seeds": [min(map(len, a)), min(map(len, b))]}


def _ib(inst: dict) -> dict:
    ib = inst["implicit_bias"]
    i = ib["lengths"].index(IB_LONG)
    return {K: np.asarray(ib[K]["accuracy"])[:, i] for K in ("K1", "K2")}


def _rz(tier: str):
    def values(inst: dict) -> dict:
        rz = inst.get("realizability", {}).get(tier)
        if rz is None:
            return {}
        i = rz["lengths"].index(FOCUS)
        return {t: np.asarray(rz["lg"])[k, :, i] for k, t in enumerate(rz["tasks"])}
    return values


def _cm(inst: dict) -> dict:
    cm = inst.get("contract_matrix")
    if not cm:
        return {}
    L = str(max(cm["extend"]))
    return {t: np.asarray(r["extend"][L]) for t, r in cm["tasks"].items()}


# instrument: (what each (task, seed) number is, its values {task: [seed]} from an instruments
# dict); the tasks of the implicit-bias instrument are its two offsets
METRICS = {
    "implicit_bias": (f"accuracy at L={IB_LONG}, tasks K=1 and K=2", _ib),
    "realizability_1L1H": (f"LG@{FOCUS} of the trained 1L1H head, per task", _rz("1L1H")),
    "realizability_2L4H": (f"LG@{FOCUS} of the trained 2L4H transformer, per task", _rz("2L4H")),
    "contract_matrix": ("accuracy at the longest extension length, per task family", _cm),
}


def of(inst: dict, ref_inst: dict, name: str) -> dict:
    """{instrument: {"metric", "vs": {canonical: interval(...)}}} for every trained instrument
    both the profile and the reference measured (on the tasks both have)."""
    out = {}
    for key, (metric, values) in METRICS.items():
        mine = values(inst)
        vs = {}
        for n, x in ref_inst.items():
            theirs = values(x)
            tasks = [t for t in mine if t in theirs]
            if n != name and tasks:
                vs[n] = interval([mine[t] for t in tasks], [theirs[t] for t in tasks])
        if vs:
            out[key] = {"metric": metric, "vs": vs}
    return out


def cell(c: dict) -> str:
    """'+0.12 [-0.03, +0.27] indistinguishable' (the interval omitted where there is none)."""
    ci = "" if c["lo"] is None else f" [{c['lo']:+.2f}, {c['hi']:+.2f}]"
    return f"{c['diff']:+.2f}{ci} {c['verdict']}"


def verdict_lines(comparison: dict) -> list[str]:
    """One line per instrument: which canonical encodings it is better than, worse than, and
    indistinguishable from."""
    lines = []
    for key, c in comparison.items():
        by = {w: [n for n, v in c["vs"].items() if v["verdict"] == w]
              for w in ("better", "worse", "indistinguishable")}
        said = [f"{w} than {', '.join(by[w])}" if w != "indistinguishable" else
                f"indistinguishable from {', '.join(by[w])}" for w in by if by[w]]
        lines.append(f"Comparison, {key.replace('_', ' ')} ({c['metric']}): "
                     + "; ".join(said) + ".")
    return lines
