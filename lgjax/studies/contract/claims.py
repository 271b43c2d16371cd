"""Measurements behind the contract claims (contract.json, beside this module).

  contract-lab      {setting: contract-lab's results.json at that --train/--test/--shift}:
                    the listing's four outputs per stand-in scheme (72 values, exact);
  contract-report   the matrix (contract-train's result, as contract-report reads it): the
                    essay's seven predictions, each judged from the matrix by the declared null
                    policy (lgjax.studies.contract.verdicts) and returned as a verdict.

A prediction's cells are judged one by one by `verdicts.judge` (confirmed / contradicted / no
effect / unresolved / not learnable); a prediction then reads (AGGREGATE): "not learnable" when
none of its cells is learnable, the common verdict when every learnable cell has the same one,
"mixed" otherwise; the cells and intervals behind it are the verdict's detail.
"""

from __future__ import annotations

import numpy as np

from lgjax.claims import Measured, NotRun, Stat, every_cell, fixed, get
from lgjax.studies.contract import verdicts

LABELS = {m: (m,) for m in ("shift_error", "out_of_table", "collisions", "monotonic_breaks")}
SETTINGS = {"train32_test96_shift17": (32, 96, 17), "train16_test64_shift5": (16, 64, 5),
            "train64_test128_shift33": (64, 128, 33)}
SCHEMES = ("learned", "sinusoidal", "relative", "rope", "alibi", "nope")
MATRIX_FLAG = ("lgjax reproduce contract; the matrix is 24 cells x 5 seeds x 3000 steps, "
               "185-288 s a cell on a 2-core CPU, ~1.5 h in all (contract/train.py)")
HINTS = {"contract-report": MATRIX_FLAG, "contract-train": MATRIX_FLAG,
         "contract-lab": "lgjax reproduce contract --only contract-lab; seconds"}


def lab(setting: str, scheme: str):
    def measure(results):
        cfg = get(results, "contract-lab", setting, "config")
        if (cfg["train"], cfg["test"], cfg["shift"]) != SETTINGS[setting]:
            raise NotRun(f"contract-lab/{setting} ran at --train {cfg['train']} --test "
                         f"{cfg['test']} --shift {cfg['shift']}")
        row = get(results, "contract-lab", setting, "schemes", scheme)
        return Measured({"shift_error": fixed(row["shift_error"]),
                         "out_of_table": fixed(row["out_of_table"]),
                         "collisions": every_cell([row["collisions"]]),
                         "monotonic_breaks": every_cell([row["monotonic_breaks"]])})
    return measure


# ---------------------------------------------------------------- the predictions


def matrix(results) -> dict:
    result = get(results, "contract-report")
    for key in ("cells", "schemes", "learnable", "lab", "lab_names"):
        get(results, "contract-report", key)
    if not result["cells"]:
        raise NotRun(f"no cell of the matrix trained ({MATRIX_FLAG})")
    return result


def verdict(value: str, decides: str, n: int) -> Measured:
    return Measured({"": Stat(value, None, n, (value,))}, context={"decides": decides})


def _fmt(diff) -> str:
    d, lo, hi = diff
    return f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def aggregate(cells: list[dict]) -> str:
    """The prediction's verdict from its cells' (AGGREGATE in the module docstring)."""
    learnable = [c["verdict"] for c in cells if c["verdict"] not in
                 ("not learnable", "no learnable rival")]
    if not learnable:
        return "not learnable"
    return learnable[0] if len(set(learnable)) == 1 else "mixed"


def predicted(*claims: str):
    """The cells of the PREDICTIONS whose claim text is among `claims`, judged."""
    def measure(results):
        result = matrix(results)
        mine = [p for p in verdicts.PREDICTIONS if p.claim in claims]
        absent = sorted({p.task for p in mine} - set(result["cells"]))
        if absent:
            raise NotRun(f"task {', '.join(absent)} not trained ({MATRIX_FLAG})")
        cells = [c for c in verdicts.judge(result) if c["claim"] in claims]
        shown = "; ".join(f"{c['task']} {c['column']} {c['scheme']} ({c['side']}): "
                          f"{c['verdict']}" + (f" vs {c['rival']} {_fmt(c['diff'])}"
                                               if "diff" in c else "") for c in cells)
        return verdict(aggregate(cells), shown, len(result["seeds"]))
    return measure


def no_universal_winner(results) -> Measured:
    """Confirmed when no scheme wins every (task, column) cell; contradicted when one does."""
    result = matrix(results)
    if not any(verdicts.learnable_map(result, t).values() for t in result["cells"]):
        return verdict("not learnable", "no learnable cell", len(result["seeds"]))
    wins = verdicts.winners(result)
    won = [w for w in wins.values() if w]
    one = len(won) == len(wins) and len(set(won)) == 1
    return verdict("contradicted" if one else "confirmed", verdicts.thesis_line(wins),
                   len(result["seeds"]))


def loss_vs_contract(results) -> Measured:
    """Per task: |rho| of in-range loss with extension accuracy against the best |rho| of a
    contract measure (shift consistency, the lab's four). Confirmed (the instrument adds) when
    a contract measure beats the loss by >= NO_EFFECT on every task, contradicted when the
    loss is at least as good on every task, no effect when within NO_EFFECT everywhere."""
    result = matrix(results)
    per, seen = [], []
    for task, rhos in verdicts.correlations(result).items():
        loss = abs(rhos.pop("in-range loss"))
        best_name, best = max(((k, abs(v)) for k, v in rhos.items() if np.isfinite(v)),
                              key=lambda kv: kv[1], default=("none", float("nan")))
        if not (np.isfinite(loss) and np.isfinite(best)):
            per.append("undefined")
        elif best - loss >= verdicts.NO_EFFECT:
            per.append("confirmed")
        elif abs(best - loss) < verdicts.NO_EFFECT:
            per.append("no effect")
        else:
            per.append("contradicted")
        seen.append(f"{task}: |rho| loss {loss:.2f} vs {best_name} {best:.2f} -> {per[-1]}")
    defined = [v for v in per if v != "undefined"]
    value = ("not learnable" if not defined else defined[0] if len(set(defined)) == 1
             else "mixed")
    return verdict(value, "; ".join(seen), len(result["seeds"]))


def _gap(values: dict, schemes: list[str]) -> float:
    means = [float(np.mean(values[s])) for s in schemes]
    return max(means) - min(means)


def matched_loss(results) -> Measured:
    """Per task with matched-loss checkpoints: the gap between the best and the worst learnable
    scheme's extension accuracy at the end and at matched in-range loss. Confirmed (the
    differences are not optimisation speed) when the gap shrinks by < NO_EFFECT on every
    task, contradicted when it shrinks by more on every task."""
    result = matrix(results)
    per, seen = [], []
    for task in result["cells"]:
        at_end = verdicts.column(result, task, "extend")
        at_match = verdicts.column(result, task, "matched_extend")
        both = [s for s in at_match if s in at_end]
        if len(both) < 2:
            continue
        end, match = (_gap(vals, both) for vals in (at_end, at_match))
        per.append("contradicted" if end - match >= verdicts.NO_EFFECT else "confirmed")
        seen.append(f"{task}: gap {end:.3f} at the end, {match:.3f} at matched loss "
                    f"({len(both)} learnable schemes) -> {per[-1]}")
    value = ("not learnable" if not per else per[0] if len(set(per)) == 1 else "mixed")
    return verdict(value, "; ".join(seen) or "fewer than two learnable schemes in every task",
                   len(result["seeds"]))


REGISTRY: dict = {
    **{f"lab.{setting}.{scheme}": lab(setting, scheme) for setting in SETTINGS
       for scheme in SCHEMES},
    "pred.absolute_wins_named_slot": predicted(verdicts.PREDICTIONS[0].claim),
    "pred.relative_resists_origin_shift": predicted(verdicts.PREDICTIONS[1].claim),
    "pred.monotone_bias_local_vs_remote": predicted(verdicts.PREDICTIONS[2].claim,
                                                    verdicts.PREDICTIONS[3].claim),
    "pred.rotary_periodic_confusions": predicted(verdicts.PREDICTIONS[4].claim),
    "pred.no_universal_winner": no_universal_winner,
    "pred.in_range_loss_vs_contract": loss_vs_contract,
    "pred.matched_loss": matched_loss,
}
EXPECTATIONS: list = []  # the predictions are the claims file's
