"""The claims checker and the reproduction report on synthetic results sets.

`faithful()` builds, in the experiments' results layout, a results set whose numbers are the
published ones: every claim must match through its registered measurement (this pins the mapping
of all 69 claims), then single edits make one claim differ or not run.
"""

from __future__ import annotations

import json
import re

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

from lgjax import claims as C
from lgjax.reproduce import claims as RC
from lgjax.reproduce import report as R
from lgjax.studies.implicit_bias import claims as IB

S = 2  # synthetic seeds
LENGTHS = [12, 16, 20, 24, 32, 40, 48]
WORDS = C.words_of(IB)  # the implicit-bias tolerance words


@pytest.fixture(scope="module")
def study() -> C.Claims:
    return RC.load_claims("implicit-bias")


@pytest.fixture(scope="module")
def pub(study) -> dict:
    return {c.id: c.published for c in study.claims}


def per_length(values: dict, lengths, fill: float) -> list[float]:
    return [values.get(str(L), fill) for L in lengths]


def seeds(row):
    return [list(row) for _ in range(S)]


def faithful(pub: dict) -> dict:
    """A results set holding the published numbers, in each experiment's results layout."""
    p = lambda cid: pub[cid]
    multiseed = {"experiment": "multiseed", "reduced": False, "K": 1, "lengths": LENGTHS,
                 "rope": {"accuracy": seeds(per_length(p("t1.rope_acc"), LENGTHS, 1.0)),
                          "selected_offset": seeds([-1] * 7)},
                 "ape": {"accuracy": seeds(per_length(p("t1.ape_acc"), LENGTHS, 0.0))}}
    prop1 = {"experiment": "prop1", "reduced": False}
    for K in (1, 2, 3):
        g = lambda name, K=K: p(f"t2.K{K}.{name}")
        prop1[f"K{K}"] = {
            "carrier_key": [g("key_frac")] * S, "carrier_query": [g("query_frac")] * S,
            "carrier_key_init": [0.05] * S, "carrier_query_init": [0.05] * S,
            "carrier_argmax": [g("carrier_peak")] * S,
            "align_shifted": [p(f"align.K{K}.shifted")] * S,
            "align_plain": [p(f"align.K{K}.plain")] * S,
            "fits": [{"alpha": g("alpha"), "c": g("c"), "r2": g("R2")}] * S}
    lin_lengths = [12, 16, 24, 32, 48]
    linear = {"experiment": "linear", "config": {"K": 2}, "lengths": lin_lengths,
              "linear": {"accuracy": seeds([p("t3.linear_in_range")] * 2 + [0.5, 0.2,
                                                                            p("t3.linear_L48")]),
                         "carrier_key": [p("t3.linear_key_frac")] * S,
                         "align_shifted": [p("t3.linear_cos")] * S},
              "softmax": {"accuracy": seeds([1.0] * 4 + [p("t3.softmax_L48")]),
                          "carrier_key": [p("t3.softmax_key_frac")] * S,
                          "align_shifted": [p("t3.softmax_cos")] * S}}
    sweep = {row: f"t4.{name}" for name, row in IB.SWEEP_ROWS.items()}
    sweep |= {f"tau-temperature{tau:g}": f"t4.tau={tau}" for tau in (0.5, 1.0, 2.0)}
    d = {row: {"carrier_key": p(cid)["carrier_frac"],
               "fit": {"alpha": p(cid)["alpha"], "c": p(cid)["c"], "r2": p(cid)["R2"]}}
         for row, cid in sweep.items()}
    c = {}
    for lam in ("0", "0.0001", "0.01"):
        t6 = p(f"t6.lambda{lam}")
        acc = seeds([t6["ood_acc"]] * 4)
        c[lam] = {"accuracy": acc, "fixes": {"interp": seeds([t6["interp_acc"]] * 4),
                                             "clamp": acc, "rescale": acc},
                  "pin": [[7, 8, 7, 8], [6, 9, 7, 8]], "norm_in_range": [t6["norm_in"]] * S,
                  "norm_beyond": [t6["norm_out"]] * S}
    a = {"rows": [{"length": L, "margin": [p("t7.mu")] * S, "bound": [p("t7.bound")[str(L)]] * S,
                   "observed": [p("t7.observed")[str(L)]] * S} for L in LENGTHS]}
    kf, top = p("dyn.key_frac"), p("dyn.top1")
    b = {"carrier_key/h0": {"steps": [0, 64, 200, 1000, 4000],
                            "mean": [kf["init"], 0.5, kf["step200"], 0.79, kf["plateau"]]},
         "sv_energy/h0": {"steps": [0, 64, 200, 1000, 4000],
                          "mean": [top["init"], 0.35, 0.45, 0.49, top["plateau"]]}}
    mechanics = {"experiment": "mechanics", "reduced": False,
                 "config": {"K": 2, "run": {"seeds": S}},
                 "a": a, "b": b, "c": c, "d": d}
    frequency = {"experiment": "frequency", "reduced": False, "config": {"K": 2},
                 "lengths": [16, 24, 32, 48]}
    for base in (1000, 10000, 100000):
        t5 = p(f"t5.base{base}")
        frequency[f"{base:g}"] = {"g1_over_g0": t5["g1_g0"], "max_far_over_g0": t5["max_g_s4"],
                                  "accuracy": seeds([1.0, 1.0, 1.0, t5["acc48"]]),
                                  "selected_offset": seeds([-2] * 4)}
    h1 = {**p("t8.H1_peak"), "20": 0.83, "40": 0.72}
    h4 = {**p("t8.H4_peak"), "20": 0.5, "40": 0.35}
    t5acc = {"12": 1.0, "16": 1.0, "20": 0.9, "24": 0.8, "32": 0.6, "40": 0.5,
             "48": p("f5.t5")["L48"]}
    variants = {
        "experiment": "variants", "reduced": False, "lengths": LENGTHS,
        "a-alibi-K1": {"accuracy": seeds([1.0, 1.0] + [p("f5.alibi_K1")] * 5)},
        "a-alibi-K2": {"accuracy": seeds([0.11, 0.12, 0.13, 0.12, 0.12, 0.11, 0.11]),
                       "selected_offset": seeds([-1] * 7)},
        "a-rope-K2": {"accuracy": seeds([1.0] * 6 + [p("f5.rope_K2_L48")])},
        "a-t5-K1": {"selected_offset": seeds([-1] * 7)},
        "a-t5-K2": {"accuracy": seeds(per_length(t5acc, LENGTHS, 0)),
                    "selected_offset": seeds([-2] * 7)},
        "b-two_offset-H1": {"accuracy": seeds([1.0, 1.0]), "mode_profile_peaks": [[[0], [-3]]] * S},
        "d-rope-H1": {"peak_height": seeds(per_length(h1, LENGTHS, 0)),
                      "sv_energy_per_head": [[0.5]] * S},
        "d-rope-H4": {"peak_height": seeds(per_length(h4, LENGTHS, 0)),
                      "sv_energy_per_head": [[0.39, 0.45, 0.5, 0.57]] * S},
        **{f"c-rope-K{K}": {"carrier_argmax": [[-K]] * S} for K in (2, 3, 4, 5)}}
    shift = {"experiment": "shift", "lengths": [16, 24, 32, 48],
             "rope": {"spread_relative": 0.01, "spread_absolute": 0.6,
                      "argmax_relative": [-1] * 4, "argmax_absolute": [14, 22, 30, 46]},
             "ape": {"spread_relative": 0.9, "spread_absolute": 0.05,
                     "argmax_relative": [-1, -9, -17, -33], "argmax_absolute": [14] * 4}}
    tl = [12, 16, 24, 32, 48]

    def profiles(L):  # [seeds][layers][heads][L], head (1, 2) peaking at -3
        prof = np.zeros((S, 2, 4, L))
        prof[:, 1, 2, L - 1 - 3] = 1.0
        return prof.tolist()

    f6 = p("f6.key_frac")
    transformer = {"experiment": "transformer", "reduced": False, "K": 3, "lengths": tl,
                   "rope": {"accuracy": seeds([1.0] * 4 + [p("f6.rope_L48")]),
                            "shift_head": [[1, 2]] * S, "profiles": {"16": profiles(16),
                                                                     "48": profiles(48)},
                            "shift_head_key_carrier": [f6["rope"]] * S,
                            "inverse_d_head": f6["baseline"]},
                   "ape": {"accuracy": seeds(per_length(p("f6.ape"), tl, 1.0)),
                           "shift_head_key_carrier": [f6["ape"]] * S}}
    return {"multiseed": multiseed, "prop1": prop1, "linear": linear, "mechanics": mechanics,
            "frequency": frequency, "variants": variants, "shift": shift,
            "transformer": transformer}


def by_label(verdicts) -> dict[str, C.Verdict]:
    return {v.label: v for v in verdicts}


TAU_MULT = IB.TAU_MULTIPLIES


def test_faithful_results_match_every_claim_and_hold_every_expectation(study, pub):
    verdicts = RC.check(study, faithful(pub))
    claims = [v for v in verdicts if v.kind == "claim"]
    # the multiplying reading of tau = 0.5 reads the run at temperature 2 and vice versa
    odd = {f"t4.tau={t} [{TAU_MULT}]" for t in (0.5, 2.0)}
    assert {v.label for v in claims if v.status != C.MATCHES} == odd, \
        [(v.label, v.detail) for v in claims if v.status != C.MATCHES and v.label not in odd]
    assert len(claims) == 69 + 3  # three tau claims under two readings each
    assert all(by_label(claims)[label].status == C.DIFFERS for label in odd)
    assert by_label(claims)[f"t4.tau=1.0 [{TAU_MULT}]"].status == C.MATCHES
    expects = [v for v in verdicts if v.kind == "expect"]
    assert [v.id for v in expects if v.status != C.HOLDS] == []
    assert len(expects) == len(IB.EXPECTATIONS)


def test_registry_covers_exactly_the_shipped_claims(study):
    assert set(IB.REGISTRY) == {c.id for c in study.claims}
    assert len(study.claims) == 69


def test_differs_says_by_how_much(study, pub):
    res = faithful(pub)
    res["prop1"]["K1"]["fits"] = [{"alpha": 0.82 + 0.3, "c": 0.022 * 2.5, "r2": 0.914}] * S
    res["multiseed"]["rope"]["selected_offset"][1][6] = -2
    res["multiseed"]["rope"]["accuracy"][0][4] = 0.5  # L = 32: seed mean 0.73 vs 0.96
    v = by_label(RC.check(study, res))
    alpha, c = v["t2.K1.alpha"], v["t2.K1.c"]
    assert alpha.status == C.DIFFERS and "off by 0.3 (> 0.25)" in alpha.detail
    assert c.status == C.DIFFERS and "ratio 2.5 (outside factor 2)" in c.detail
    assert v["t2.K1.R2"].status == C.MATCHES
    sel = v["t1.rope_selects_minus_K"]
    assert sel.status == C.DIFFERS and "1 of 14 cells differ from -1" in sel.detail
    acc = v["t1.rope_acc"]
    assert acc.status == C.DIFFERS and acc.detail.startswith("32: 0.73 vs 0.96: off by 0.23")
    assert acc.measured["32"]["sd"] == pytest.approx(0.23) and acc.measured["32"]["n"] == S


def test_not_run_says_why(study, pub):
    res = faithful(pub)
    del res["transformer"]
    del res["prop1"]["K1"]["fits"]
    del res["mechanics"]["d"]["tau-temperature2"]
    res["frequency"]["config"]["K"] = 1
    del res["variants"]["d-rope-H4"]["peak_height"]
    res["multiseed"]["lengths"] = LENGTHS[:-1]
    res["multiseed"]["rope"]["accuracy"] = [r[:-1] for r in res["multiseed"]["rope"]["accuracy"]]
    v = by_label(RC.check(study, res))
    for cid in ("f6.rope_L48", "f6.ape", "f6.key_frac"):
        assert (v[cid].status, v[cid].detail) == (C.NOT_RUN, "experiment not run: transformer")
    assert v["transformer.rope_near_1"].status == C.NOT_RUN
    assert v["t2.K1.alpha"].detail == "measurement missing: prop1/K1/fits"
    assert v["t2.K1.key_frac"].status == C.MATCHES
    assert v[f"t4.tau=2.0 [{IB.TAU_DIVIDES}]"].detail == \
        "measurement missing: mechanics/d/tau-temperature2"
    assert v[f"t4.tau=0.5 [{TAU_MULT}]"].status == C.NOT_RUN
    assert v[f"t4.tau=0.5 [{IB.TAU_DIVIDES}]"].status == C.MATCHES
    assert v["t5.base1000"].detail == ("frequency row 1000 ran at K = 1; this check needs "
                                       "K = 2")
    assert v["t8.H4_peak"].detail == "measurement missing: variants/d-rope-H4/peak_height"
    assert v["t1.rope_acc"].status == C.NOT_RUN and "measurement missing" in v["t1.rope_acc"].detail
    assert v["t1.ape_acc"].status == C.NOT_RUN  # its lengths no longer line up either


def test_a_claim_without_a_measurement_is_not_run_not_dropped(study, pub):
    registry = {k: f for k, f in IB.REGISTRY.items() if k != "t7.mu"}
    v = by_label(RC.check(study, faithful(pub), registry=registry, expectations=[]))
    assert v["t7.mu"].status == C.NOT_RUN and "no measurement registered" in v["t7.mu"].detail
    assert len(v) == 72


def test_run_at_the_wrong_setting_is_not_run(study, pub):
    res = faithful(pub)
    res["multiseed"]["K"] = 2
    v = by_label(RC.check(study, res))
    assert v["t1.rope_acc"].detail == "multiseed ran at K = 2; this check needs K = 1"


# ---------------------------------------------------------------- tolerances

TOLERANCES = {  # every tolerance text of the shipped file -> (label, kind, amount) per clause
    "abs 0.10 per length": [(None, "abs", 0.10)],
    "abs 0.06 per length": [(None, "abs", 0.06)],
    "abs 0.08 per length; never below the bound": [(None, "abs", 0.08),
                                                   (None, "not_below_bound", None)],
    "abs 0.05": [(None, "abs", 0.05)], "abs 0.08": [(None, "abs", 0.08)],
    "abs 0.10": [(None, "abs", 0.10)], "abs 0.12": [(None, "abs", 0.12)],
    "abs 0.15": [(None, "abs", 0.15)], "abs 0.25": [(None, "abs", 0.25)],
    "abs 0.3": [(None, "abs", 0.3)],
    "exact, every cell": [(None, "exact", None)], "exact, every seed": [(None, "exact", None)],
    "within a factor of 2": [(None, "factor", 2.0)],
    "carrier abs 0.08; alpha abs 0.25; c factor 2; R^2 abs 0.10": [
        ("carrier", "abs", 0.08), ("alpha", "abs", 0.25), ("c", "factor", 2.0),
        ("R^2", "abs", 0.10)],
    "ratios abs 0.02; accuracy abs 0.05; selection exact": [
        ("ratios", "abs", 0.02), ("accuracy", "abs", 0.05), ("selection", "exact", None)],
    "accuracies abs 0.10 (near chance); norms: same ordering; pin inside the trained range": [
        ("accuracies", "abs", 0.10), ("norms", "ordering", None),
        ("pin", "inside_range", None)],
    "selection exact; accuracy: fails (well below RoPE)": [
        ("selection", "exact", None), ("accuracy", "fails", None)],
    "accuracy abs 0.05; peaks exact": [("accuracy", "abs", 0.05), ("peaks", "exact", None)],
}


def test_every_tolerance_text_of_the_file_is_listed(study):
    assert {c.tolerance for c in study.claims} == set(TOLERANCES)


@pytest.mark.parametrize("text", sorted(TOLERANCES))
def test_tolerance_parses(text):
    assert [(r.label, r.kind, r.amount) for r in C.parse_tolerance(text, WORDS)] == TOLERANCES[text]


def test_every_rule_kind_has_an_implementation():
    assert set(C.PER_COMPONENT) | set(C.JOINT) == set(C.FORMS.values())
    assert set(IB.RULES) == set(IB.FORMS.values())


@pytest.mark.parametrize("text", ["roughly 0.1", "abs 0.1 per seed", "abs", "exact-ish",
                                  "speed abs 0.1", "within a factor of two",
                                  "abs 0.1; close enough"])
def test_unknown_tolerance_is_a_loud_error(text):
    with pytest.raises(C.ToleranceError, match="not a known form"):
        C.parse_tolerance(text, WORDS)


def test_tolerance_must_cover_every_component():
    claim = C.Claim("x", "T", "w", {"alpha": 1.0, "c": 0.1}, "alpha abs 0.25", "e")
    with pytest.raises(C.ToleranceError, match="leaves \\['c'\\] unchecked"):
        C.rules_by_component(claim, WORDS)
    claim = C.Claim("x", "T", "w", 1.0, "alpha abs 0.25", "e")
    with pytest.raises(C.ToleranceError, match="covers none"):
        C.rules_by_component(claim, WORDS)


def test_load_rejects_a_file_with_an_unknown_tolerance(tmp_path):
    entry = {"id": "a", "where": "T1", "what": "w", "published": 1.0, "tolerance": "about 1",
             "experiment": "e"}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"claims": [entry]}))
    with pytest.raises(C.ToleranceError):
        C.load_claims(path)


def one(tolerance: str, published, measured: C.Measured) -> C.Verdict:
    claim = C.Claim("x", "T", "w", published, tolerance, "e")
    return C.check_claim(claim, {"e": {}}, {"x": lambda _: measured}, WORDS)[0]


@given(p=st.floats(-5, 5), m=st.floats(-5, 5), tol=st.sampled_from([0.02, 0.1, 0.25, 0.3]))
def test_abs_matches_iff_within(p, m, tol):
    v = one(f"abs {tol}", p, C.Measured({"": C.over_seeds([m, m])}))
    assert (v.status == C.MATCHES) == (abs(m - p) <= tol + C.EPS)


@pytest.mark.parametrize("m,ok", [(0.011, True), (0.044, True), (0.0109, False),
                                  (0.0441, False), (-0.022, False)])
def test_factor(m, ok):
    v = one("within a factor of 2", 0.022, C.Measured({"": C.over_seeds([m])}))
    assert (v.status == C.MATCHES) == ok


def test_exact_resolves_minus_k_and_checks_every_cell():
    m = C.Measured({"": C.every_cell([[-2, -2], [-2, -2]])}, context={"K": 2})
    assert one("exact, every cell", "-K", m).status == C.MATCHES
    m = C.Measured({"": C.every_cell([[-2, -1], [-2, -2]])}, context={"K": 2})
    assert "1 of 4 cells differ from -2" in one("exact, every cell", "-K", m).detail
    m = C.Measured({"": C.every_cell([-2])})
    assert one("exact", "-K", m).status == C.NOT_RUN  # no K to resolve the symbol with


def test_ordering_inside_range_and_fails():
    tol = "accuracies abs 0.10 (near chance); norms: same ordering; pin inside the trained range"
    pub = {"ood_acc": 0.08, "norm_in": 3.8, "norm_out": 0.2, "pin_mean_sd": [11.7, 1.2]}
    comps = lambda n_in, n_out, pins: C.Measured(
        {"ood_acc": C.over_seeds([0.1]), "norm_in": C.over_seeds([n_in]),
         "norm_out": C.over_seeds([n_out]), "pin_mean_sd": C.summary([0.0, 0.0], 1, pins)},
        context={"trained_range": (0, 15)})
    assert one(tol, pub, comps(1.0, 0.5, [3, 15])).status == C.MATCHES
    v = one(tol, pub, comps(0.5, 1.0, [3, 15]))
    assert v.status == C.DIFFERS and "ordering reversed" in v.detail
    v = one(tol, pub, comps(1.0, 0.5, [3, 16]))
    assert v.status == C.DIFFERS and "1 of 2 cells outside [0, 15]" in v.detail
    fails = "selection exact; accuracy: fails (well below RoPE)"
    pub = {"acc_range": [0.11, 0.13], "selects": -1}
    make = lambda best: C.Measured(
        {"acc_range": C.summary([0.1, best], 1, [0.1, best]), "selects": C.every_cell([-1])},
        context={"reference": C.summary(0.9, 1, [0.9, 1.0])})
    assert one(fails, pub, make(0.45)).status == C.MATCHES
    assert one(fails, pub, make(0.46)).status == C.DIFFERS


def test_bound_never_below():
    pub = {"12": 0.83}
    bound = {"12": C.over_seeds([0.5, 0.8])}
    ok = C.Measured({"12": C.over_seeds([0.8, 0.86])}, context={"bound": bound})
    assert one("abs 0.08 per length; never below the bound", pub, ok).status == C.MATCHES
    low = C.Measured({"12": C.over_seeds([0.9, 0.79])}, context={"bound": bound})
    v = one("abs 0.08 per length; never below the bound", pub, low)
    assert v.status == C.DIFFERS and "below the bound in 1 of 2 seeds" in v.detail
    no_bound = C.Measured({"12": C.over_seeds([0.83])})
    v = one("abs 0.08 per length; never below the bound", pub, no_bound)
    assert v.status == C.NOT_RUN and "context 'bound'" in v.detail


def test_per_length_lists_and_nested_components():
    assert C.components({"12": 1.0, "peaks": {"mode0": 0}}) == {"12": 1.0, "peaks.mode0": 0}
    v = one("abs 0.12", {"H4_range": [0.39, 0.57]},
            C.Measured({"H4_range": C.summary([0.3, 0.6], 2)}))
    assert v.status == C.MATCHES
    v = one("abs 0.12", {"H4_range": [0.39, 0.57]},
            C.Measured({"H4_range": C.summary([0.2, 0.6], 2)}))
    assert v.status == C.DIFFERS and "off by 0.19" in v.detail
    v = one("abs 0.1 per length", {"12": 1.0, "16": 1.0}, C.Measured({"12": C.over_seeds([1])}))
    assert v.status == C.NOT_RUN and v.detail == "measurement missing: e 16"


# ---------------------------------------------------------------- expectations


def test_expectations_fail_with_what_was_seen(study, pub):
    res = faithful(pub)
    res["multiseed"]["ape"]["accuracy"][0][2] = 0.6  # APE at 20: seed mean 0.345
    res["variants"]["d-rope-H4"]["peak_height"] = res["variants"]["d-rope-H1"]["peak_height"]
    v = by_label(RC.check(study, res))
    chance = v["multiseed.ape_chance_from_20"]
    assert chance.status == C.FAILS and "20: 0.345" in chance.detail
    assert v["t1.ape_acc"].status == C.DIFFERS
    assert v["variants.more_heads_dilute"].status == C.FAILS
    assert v["multiseed.rope_slow_decline"].status == C.HOLDS


# ---------------------------------------------------------------- the report


def png(path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 1.5))
    ax.plot([0, 1], [1, 0])
    ax.axhline(0.5, ls="--", label="published")
    fig.savefig(path)
    plt.close(fig)
    return path


def test_report_files_are_written_and_self_contained(study, pub, tmp_path):
    res = faithful(pub)
    res["prop1"]["K1"]["fits"] = [{"alpha": 0.02, "c": 0.8, "r2": 0.9}] * S  # swapped names
    res["multiseed"]["reduced"] = True
    res["shift"]["rope"]["spread_relative"] = 0.9  # an expectation fails, no claim moves
    del res["transformer"]
    verdicts = RC.check(study, res)
    figs = {"multiseed": png(tmp_path / "multiseed.png"),
            "prop1": [png(tmp_path / "prop1.png")], "linear": tmp_path / "absent.png"}
    out = tmp_path / "report"
    text = R.write_report(verdicts, res, figs, out, reduced=True)
    lines = text.splitlines()
    assert lines[0].startswith("implicit-bias: REDUCED RUN") and "multiseed" in lines[0]
    assert re.match(r"65 of 72 claim checks match \(69 claims; t4\.tau=0\.5, t4\.tau=1\.0, "
                    r"t4\.tau=2\.0 checked under each reading\); 4 differ, 3 not run", lines[1])
    assert any(ln.startswith("  t2.K1.alpha: 0.02 vs 0.82: off by 0.8") for ln in lines)
    assert "  experiment not run: transformer: f6.rope_L48, f6.ape, f6.key_frac, " \
        "transformer.rope_near_1" in text
    assert "expectations: 18 of 22 hold, 1 fail, 3 not run" in lines
    assert "expectations that fail (what was seen; report.md has each criterion):" in lines
    assert any(ln.startswith("  shift.rope_relative: max gap relative 0.9") for ln in lines)
    assert len(lines) < 40
    page = (out / "report.html").read_text()
    assert page.count("src=\"data:image/png;base64,") == 2
    assert not re.search(r"(src|href)=\"(?!data:)", page) and "<script" not in page
    assert "figure missing" in page and "REDUCED RUN" in page
    assert "<td class=\"differs\">DIFFERS</td>" in page  # the row is coloured by its verdict
    assert "t2.K1.alpha" in page and "0.82" in page  # published beside measured
    md = (out / "report.md").read_text()
    assert "(figures/multiseed-multiseed.png)" in md
    assert (out / "figures" / "prop1-prop1.png").exists()
    assert "| t1.rope_acc | Table 1 |" in md
    doc = json.loads((out / "report.json").read_text())
    assert doc["reduced"] is True and doc["reduced_experiments"] == ["multiseed"]
    assert doc["counts"]["matches"] == 65 and doc["counts"]["claims"] == 69
    assert len(doc["verdicts"]) == len(verdicts)
    assert doc["experiments"]["transformer"]["ran"] is False


def test_full_scale_summary_says_so(study, pub, tmp_path):
    res = faithful(pub)
    text = R.write_report(RC.check(study, res), res, {}, tmp_path, reduced=False)
    assert text.splitlines()[0] == ("implicit-bias: Scale: every experiment at the published "
                                    "scale")
    assert "70 of 72 claim checks match" in text


def test_shipped_claims_file_is_package_data():
    path = RC.claims_path("implicit-bias")
    assert path.exists() and RC.load_claims(path).study == "implicit-bias"


def test_a_reader_of_an_experiment_that_did_not_run_says_not_run():
    from lgjax.claims import NotRun, get

    with pytest.raises(NotRun, match="realizability-report"):
        get({"realizability-train": {}}, "realizability-report", "rope_scale")
