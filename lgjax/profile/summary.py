"""The few numbers per instrument that the card's tables and verdicts show, from a profile's
instruments dict alone (its own or a reference encoding's)."""

from __future__ import annotations

import numpy as np

from lgjax.studies.realizability import stats

FOCUS = 60  # the length alpha_L and LG are shown at (the realizability study's heatmaps)
IB_LONG = 48  # the implicit-bias study's longest evaluation length


CONTRACT = ("shift_error", "out_of_table", "collisions", "monotonic_breaks")
# a content-aware encoding's data-averaged term: the same metrics and its spread over sequences
AVERAGED = (*CONTRACT, "content_sd")


def contract(inst: dict) -> dict:
    if isinstance(inst["contract"], dict):  # {"undefined": why}: a content-aware encoding
        return dict(inst["contract"])
    h = inst["contract"][0]  # head 0 (the lab's model has one head)
    return {k: h[k] for k in CONTRACT}


def contract_learned(inst: dict) -> dict:
    """The lab's metrics of the kernels learned at K = 1, 2 (means over seeds and heads; an
    undefined shift error, a kernel read out of its table, counts as none); a content-aware
    encoding's are of its data-averaged term: "averaged" holds the line that says so, and
    content_sd its spread over sequences. {} when absent."""
    ib = inst["implicit_bias"]
    out = {}
    for K in ("K1", "K2"):
        heads = [h for seed in ib[K].get("contract", []) for h in seed]
        keys = AVERAGED if "contract_averaged" in ib[K] else CONTRACT
        if heads:
            out[K] = {k: float(np.mean([h[k] for h in heads if h[k] is not None]))
                      if any(h[k] is not None for h in heads) else None for k in keys}
            out[K]["kernels"] = len(heads)
            if "contract_averaged" in ib[K]:
                out[K]["averaged"] = ib[K]["contract_averaged"]
    return out


def alpha(inst: dict) -> dict:
    """Per task {acc_L0, alpha at FOCUS}; {"undefined": why} for a content-aware encoding."""
    a = inst["alpha"]
    if "undefined" in a:
        return {"undefined": a["undefined"]}
    i = a["lengths"].index(FOCUS)
    return {t: {"acc_L0": r["acc_L0"], "alpha": r["alpha"][i]} for t, r in a["tasks"].items()}


def implicit_bias(inst: dict) -> dict:
    ib = inst["implicit_bias"]
    i = ib["lengths"].index(IB_LONG)
    out = {}
    for K in ("K1", "K2"):
        acc, off = np.asarray(ib[K]["accuracy"]), np.asarray(ib[K]["selected_offset"])
        out[K] = {"acc_in_range": float(acc[:, ib["lengths"].index(16)].mean()),
                  "acc_long": float(acc[:, i].mean()),
                  "peak_long": float(np.asarray(ib[K]["peak_height"])[:, i].mean()),
                  "offset_ok": f"{int((off[:, i] == -int(K[1])).sum())}/{len(off)}"}
        if "carrier_key" in ib[K]:  # a rotary part: the spec's key carrier fraction
            out[K] |= {k: float(np.mean(ib[K][k])) for k in ("carrier_key", "carrier_key_init")}
    return out


def realizability(inst: dict, tier: str = "1L1H") -> dict:
    """Per task: train accuracy and LG at FOCUS (seed means and spread); rho of alpha_L against
    LG over the (task, L) rows of learnable tasks, and the screen's precision."""
    rz = inst.get("realizability", {}).get(tier)
    if rz is None:
        return {}
    a = inst["alpha"]
    i = rz["lengths"].index(FOCUS)
    tasks, lg = {}, np.asarray(rz["lg"])  # [task, seed, length]
    no_alpha = "undefined" in a  # a content-aware encoding: LG alone, no rho or screen
    x, y = [], []
    for k, t in enumerate(rz["tasks"]):
        train = float(np.mean(rz["train_acc"][k]))
        tasks[t] = {"train_acc": train, "lg": float(lg[k, :, i].mean()),
                    "lg_sd": float(lg[k, :, i].std())}
        if train > 0.8 and not no_alpha:  # learnable (the spec's definition)
            for j, L in enumerate(rz["lengths"]):
                x.append(a["tasks"][t]["alpha"][a["lengths"].index(L)])
                y.append(float(lg[k, :, j].mean()))
    rho = stats.spearman(np.array(x), np.array(y)) if x else float("nan")
    prec = stats.precision(x, y, 0.5, 0.7) if x else float("nan")
    undefined = lambda v: None if np.isnan(v) else v  # JSON has no nan
    return {"tasks": tasks, "rho": undefined(rho), "precision": undefined(prec), "rows": len(x),
            "seeds": int(lg.shape[1])} | ({"alpha_undefined": a["undefined"]} if no_alpha else {})


def contract_matrix(inst: dict) -> dict:
    """Per task family (seed means): accuracy in range, at the longest extension length and
    after the largest PAD shift; learnable as the matrix reads it. {} when not trained."""
    cm = inst.get("contract_matrix")
    if not cm:
        return {}
    L, c = str(max(cm["extend"])), str(max(cm["shifts"]))
    mean = lambda v: float(np.mean(v))
    return {"L": int(L), "shift": int(c), "steps": cm["steps"], "tasks": {
        t: {"in_range": mean(r["in_range"]), "long": mean(r["extend"][L]),
            "shift": mean(r["shift"][c]), "learnable": mean(r["in_range"]) >= cm["learnable"]}
        for t, r in cm["tasks"].items()}}


def of(inst: dict) -> dict:
    restriction = inst["alpha"].get("restriction")
    return {"contract": contract(inst), "contract_learned": contract_learned(inst),
            "alpha": alpha(inst), **({"alpha_restriction": restriction} if restriction else {}),
            "implicit_bias": implicit_bias(inst), "realizability": realizability(inst),
            "contract_matrix": contract_matrix(inst)}
