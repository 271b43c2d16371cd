"""The contract study's verdict logic (docs/studies/contract.md, the report): the null policy and
the predicted matrix (fixed before any run), t-intervals over seeds, verdicts, winners, intervention
effects and rank correlations, all computed from a result dict of
`lgjax.studies.contract.measure.measure_matrix` (per-seed values; nothing here reruns a model).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import stdtrit

from lgjax.studies.contract import readouts as contract_eval

LEVEL = 0.95  # two-sided t-interval over seeds
NO_EFFECT = 0.05  # |difference| below this, with the interval covering 0, is "no effect"

POLICY = f"""Null policy (declared before the run):
- a cell is learnable when its in-range accuracy (mean over seeds) is >= {{learnable}}; a
  prediction about a cell that is not learnable is marked "not learnable", never a failure;
- intervals are {LEVEL:.0%} t-intervals over seeds; a difference between two schemes uses
  Welch's interval, an intervention's effect the paired interval over seeds (same parameters,
  same sequences);
- "no effect": |difference| < {NO_EFFECT} with the interval covering 0;
- a predicted-better cell is "confirmed" when its difference to the best predicted-worse
  learnable rival has an interval above 0, "contradicted" when below 0 (mirrored for a
  predicted-worse cell against the worst predicted-better rival); an interval covering 0 with
  |difference| >= {NO_EFFECT} is "unresolved" (more seeds needed);
- a scheme "wins" a column of a task when its lower bound is above every rival's upper bound;
  if one scheme wins every cell, the thesis (no task-independent best scheme) is weakened."""


@dataclass(frozen=True)
class Prediction:
    task: str  # the task family
    column: str  # the matrix column (see COLUMNS)
    high: tuple[str, ...]  # schemes predicted to score higher
    low: tuple[str, ...]  # schemes predicted to score lower
    claim: str  # the spec's prediction, in words


PREDICTIONS = (
    Prediction("absolute_anchor", "extend", ("ape", "sinusoidal"),
               ("relclip", "rope", "alibi", "nope"),
               "absolute wins named slots: the slot keeps its address past the trained range"),
    Prediction("offset_copy", "shift_consistency", ("relclip", "rope", "alibi"),
               ("ape", "sinusoidal"), "relative/rotary resist origin shifts on offset tasks"),
    Prediction("offset_copy", "extend", ("alibi",), ("ape", "sinusoidal", "nope"),
               "a monotone bias helps local copying"),
    Prediction("ordered_update", "far_extend", ("rope",), ("alibi",),
               "a monotone bias hurts remote ordered updates (far bin, distance >= 16)"),
    Prediction("periodic_marker", "nonlocal", ("rope",), ("alibi", "relclip"),
               "rotary may show periodic confusions: the chosen head misattends far "
               "(>= 4 positions) more often at extension"),
)


def _mean_over(d: dict, key: str):
    """The per-seed `key` averaged over d's entries (shifts or lengths); None where they have no
    such readout (near/far: ordered_update only)."""
    values = [np.asarray(v[key], float) for v in d.values() if key in v]
    return np.mean(values, axis=0) if values else None


def _extension(key: str):
    return lambda c: _mean_over({k: v for k, v in c["extend"].items() if k.isdigit()}, key)


COLUMNS = {  # name: (label, cell -> per-seed values or None)
    "in_range": ("in range", lambda c: c["in_range"]["accuracy"]),
    "shift_acc": ("shifted", lambda c: _mean_over(c["shift"], "accuracy")),
    "shift_consistency": ("shift cons.", lambda c: _mean_over(c["shift"], "consistency")),
    "extend": ("ext none", _extension("none")),
    "pi": ("ext PI", _extension("pi")),
    "ntk": ("ext NTK", _extension("ntk")),  # RoPE extensions: RoPE cells only
    "yarn": ("ext YaRN", _extension("yarn")),
    "llama3": ("ext Llama 3", _extension("llama3")),
    "retrieval": ("ext retrieval", _extension("retrieval")),
    "near_extend": ("ext near", _extension("near")),
    "far_extend": ("ext far", _extension("far")),
    "nonlocal": ("misattend far", _extension("nonlocal")),
    "matched_extend": ("ext at matched loss", lambda c: c.get("matched", {}).get("extend")),
}
MATRIX = ("in_range", "shift_acc", "shift_consistency", "extend", "pi", "retrieval")
WIN_COLUMNS = ("in_range", "shift_consistency", "extend", "pi", "retrieval", "matched_extend")
INTERVENTIONS = ("pi", "ntk", "yarn", "llama3", "retrieval")


# ---- statistics ----------------------------------------------------------------------------

def t_interval(x) -> tuple[float, float, float]:
    """(mean, low, high); the interval is NaN with fewer than two values."""
    x = np.asarray(x, float)
    m = float(x.mean())
    if len(x) < 2:
        return m, float("nan"), float("nan")
    half = stdtrit(len(x) - 1, 0.5 + LEVEL / 2) * x.std(ddof=1) / np.sqrt(len(x))
    return m, m - half, m + half


def diff_interval(a, b, paired: bool = False) -> tuple[float, float, float]:
    """mean(a) - mean(b) with a paired or Welch t-interval."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if paired:
        return t_interval(a - b)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    d = float(a.mean() - b.mean())
    se = np.sqrt(va + vb)
    if se == 0:
        return d, d, d
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = stdtrit(df, 0.5 + LEVEL / 2) * se
    return d, d - half, d + half


def effect_label(d: float, lo: float, hi: float) -> str:
    """The sign of a difference under the null policy: up / down / no effect / unresolved."""
    if lo > 0:
        return "up"
    if hi < 0:
        return "down"
    if abs(d) < NO_EFFECT:
        return "no effect"
    return "unresolved"


def verdict(values: dict, learnable: dict, scheme: str, side: str, rivals) -> dict:
    """One predicted cell: `scheme` predicted on `side` ("high"/"low") against `rivals`."""
    if not learnable.get(scheme, False):
        return {"verdict": "not learnable"}
    rivals = [r for r in rivals if r in values and learnable.get(r, False)]
    if not rivals:
        return {"verdict": "no learnable rival"}
    expected, opposite = ("up", "down") if side == "high" else ("down", "up")
    rival = (max if side == "high" else min)(rivals, key=lambda r: np.mean(values[r]))
    diff = diff_interval(values[scheme], values[rival])
    sign = effect_label(*diff)  # "no effect" and "unresolved" are the verdict as they are
    label = {expected: "confirmed", opposite: "contradicted"}.get(sign, sign)
    return {"verdict": label, "rival": rival, "diff": list(diff)}


def winner(values: dict) -> str | None:
    """The scheme whose lower bound is above every rival's upper bound, if any."""
    iv = {s: t_interval(v) for s, v in values.items()}
    for s, (_, lo, _) in iv.items():
        if len(iv) > 1 and all(lo > hi for r, (_, _, hi) in iv.items() if r != s):
            return s
    return None


# ---- the matrix from a result --------------------------------------------------------------

def ordered(result: dict, task: str) -> list[tuple[str, dict]]:
    """(scheme, cell) of a task in the result's scheme order."""
    row = result["cells"].get(task, {})
    return [(s, row[s]) for s in result["schemes"] if s in row]


def column(result: dict, task: str, name: str) -> dict:
    """{scheme: per-seed values} of one column of one task (schemes that have it)."""
    return {s: np.asarray(v, float) for s, c in ordered(result, task)
            if (v := COLUMNS[name][1](c)) is not None}


def learnable_map(result: dict, task: str) -> dict:
    return {s: bool(np.mean(v) >= result["learnable"])
            for s, v in column(result, task, "in_range").items()}


def judge(result: dict) -> list[dict]:
    """Every predicted cell with its verdict (cells not yet measured are left out)."""
    out = []
    for p in PREDICTIONS:
        if p.task not in result["cells"]:
            continue
        values, ok = column(result, p.task, p.column), learnable_map(result, p.task)
        for side, group, rivals in (("high", p.high, p.low), ("low", p.low, p.high)):
            for s in group:
                if s in values:
                    out.append({"task": p.task, "column": p.column, "scheme": s, "side": side,
                                "claim": p.claim, **verdict(values, ok, s, side, rivals)})
    return out


def winners(result: dict) -> dict:
    """{(task, column): winner or None} over the columns a task has measured."""
    return {(t, c): winner(v) for t in result["cells"] for c in WIN_COLUMNS
            if (v := column(result, t, c))}


def not_learnable(result: dict) -> list[str]:
    return [f"{t}/{s}" for t in result["cells"] for s, ok in learnable_map(result, t).items()
            if not ok]


def thesis_line(wins: dict) -> str:
    won = [w for w in wins.values() if w]
    if wins and len(won) == len(wins) and len(set(won)) == 1:
        return f"{won[0]} wins every cell: the thesis (no task-independent best) is weakened."
    counts = {s: won.count(s) for s in sorted(set(won))}
    return (f"No scheme wins every cell ({len(won)} of {len(wins)} cells have a winner: "
            f"{counts or 'none'}).")


def interventions(result: dict) -> list[dict]:
    """Each intervention's paired effect on extension accuracy, per cell."""
    out = []
    for task in result["cells"]:
        base = column(result, task, "extend")
        for name in INTERVENTIONS:
            for s, v in column(result, task, name).items():
                d = diff_interval(v, base[s], paired=True)
                out.append({"task": task, "scheme": s, "intervention": name, "diff": list(d),
                            "effect": effect_label(*d)})
    return out


def correlations(result: dict) -> dict:
    """Per task, Spearman's rho of each predictor with extension accuracy over seed-runs."""
    out = {}
    for task, row in result["cells"].items():
        ext = column(result, task, "extend")
        preds = {"in-range loss": {s: row[s]["in_range"]["loss"] for s in ext},
                 "shift consistency": column(result, task, "shift_consistency")}
        # each one's stand-in in the lab (none for a plugin's encoding: undefined)
        lab = {s: result["lab"].get(result["lab_names"].get(s), {}) for s in ext}
        for metric in ("shift_error", "out_of_table", "collisions", "monotonic_breaks"):
            # None (undefined in the lab) becomes NaN
            preds[f"lab {metric}"] = {s: np.full(len(ext[s]), lab[s].get(metric), float)
                                      for s in ext}
        y = np.concatenate([ext[s] for s in ext])
        out[task] = {k: contract_eval.rank_correlation(np.concatenate([v[s] for s in ext]), y)
                     for k, v in preds.items()}
    return out


RANGES = (0, 8, 16, 32, 64, 128)  # distance ranges of the failure-by-offset summary


def failure_ranges(cell: dict, edges=RANGES) -> list[float | None]:
    """Extension accuracy by the distance needed (query - evidence), pooled over seeds and
    lengths, in the ranges [edges[i], edges[i+1]); None where no query needed that range."""
    f = cell["extend"]["failure"]
    lo = np.arange(len(f["total"])) * f["bin"]
    total, hits = np.asarray(f["total"], float), np.asarray(f["correct"], float)
    out = []
    for a, b in zip(edges[:-1], edges[1:]):
        inside = (lo >= a) & (lo < b)
        n = total[inside].sum()
        out.append(float(hits[inside].sum() / n) if n else None)
    return out
