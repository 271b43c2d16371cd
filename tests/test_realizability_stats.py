import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lgjax.config import ConfigError
from lgjax.studies.realizability import report as rep
from lgjax.studies.realizability import stats


def test_ranks_share_ties():
    np.testing.assert_array_equal(stats.ranks([3, 1, 2, 2]), [4, 1, 2.5, 2.5])


@settings(deadline=None, max_examples=200)
@given(st.one_of(st.lists(st.integers(-3, 3), max_size=40),
                 st.lists(st.sampled_from([-1.5, 0.0, 0.25, 2.0, float("nan"), float("inf")]),
                          max_size=40),
                 st.lists(st.floats(allow_nan=False, width=32), max_size=40)))
def test_ranks_are_scipy_rankdata_bit_for_bit(x):
    """Ties, infinities, NaN (every rank NaN, as scipy propagates it), the empty array."""
    from scipy.stats import rankdata

    got, want = stats.ranks(x), rankdata(x)
    assert got.dtype == want.dtype == np.float64
    np.testing.assert_array_equal(got, want)


def test_spearman_hand_cases():
    # sum d^2 = 4 over n = 5: rho = 1 - 6 * 4 / (5 * 24) = 0.8
    assert stats.spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)
    # ties: ranks (1.5, 1.5, 3) vs (1, 2, 3): 1.5 / sqrt(1.5 * 2)
    assert stats.spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(1.5 / math.sqrt(3.0))
    assert stats.spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    assert math.isnan(stats.spearman([1, 1, 1], [1, 2, 3]))


@settings(deadline=None, max_examples=30)
@given(st.lists(st.integers(-1000, 1000), min_size=3, max_size=20, unique=True))
def test_spearman_is_one_under_an_increasing_map(x):
    x = np.array(x, float)
    assert stats.spearman(x, np.exp(x / 1e3) + x**3) == pytest.approx(1.0)
    assert stats.spearman(x, -x) == pytest.approx(-1.0)


def test_precision_hand_case():
    alpha, lg = [0.9, 0.6, 0.4, 0.5], [0.8, 0.5, 0.9, 0.7]
    # screened rows: alpha 0.9, 0.6, 0.5 -> LG 0.8 (yes), 0.5 (no), 0.7 (yes; >= counts)
    assert stats.precision(alpha, lg, 0.5, 0.7) == pytest.approx(2 / 3)
    assert math.isnan(stats.precision([0.1], [1.0], 0.5, 0.7))


def test_auc_hand_cases():
    # positives 0.35, 0.8 vs negatives 0.1, 0.4: 3 of 4 pairs ordered right
    assert stats.auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == pytest.approx(0.75)
    assert stats.auc([0.5, 0.5], [1, 0]) == pytest.approx(0.5)  # a tie counts one half
    assert math.isnan(stats.auc([0.1, 0.2], [1, 1]))


def test_cluster_bootstrap_resamples_whole_clusters():
    x = np.repeat([0.0, 1.0], 50)  # two clusters of identical rows
    clusters = np.repeat([0, 1], 50)
    # two clusters: resampled means are 0, 1/2, 1 with probabilities 1/4, 1/2, 1/4
    lo, hi = stats.bootstrap_ci(np.mean, (x,), clusters, resamples=2000)
    assert (lo, hi) == (0.0, 1.0)
    # as 100 independent rows the same data give a narrow interval around 1/2
    lo, hi = stats.bootstrap_ci(np.mean, (x,), None, resamples=2000)
    assert 0.35 < lo < 0.5 < hi < 0.65


def test_row_bootstrap_matches_normal_theory():
    x = np.arange(100.0)  # mean 49.5, standard error 28.87 / 10
    lo, hi = stats.bootstrap_ci(np.mean, (x,), resamples=4000)
    assert lo == pytest.approx(49.5 - 1.96 * 2.887, abs=0.7)
    assert hi == pytest.approx(49.5 + 1.96 * 2.887, abs=0.7)


def _program(tier, encoding, tasks, lg, train_acc):
    """A train result with two seeds and two lengths; lg[i] is task i's LG at both lengths."""
    return {"tier": tier, "encoding": encoding, "tasks": tasks, "seeds": [0, 1],
            "lengths": [30, 60], "train_seconds": 1.0,
            "lg": [[[v, v], [v, v]] for v in lg], "acc_all": [[[v, v], [v, v]] for v in lg],
            "train_acc": [[a, a] for a in train_acc]}


def test_report_statistics_on_a_known_table():
    train = {"experiment": "realizability-train", "reduced": True, "programs": [
        _program("1L1H", "rope", ["prev", "copy", "first"], [0.95, 0.1, 0.6], [1.0, 1.0, 0.5]),
        _program("1L1H", "ape", ["prev", "copy", "first"], [0.3, 0.15, 0.9], [1.0, 0.9, 1.0])]}
    table = {("rope", "prev"): 1.0, ("rope", "copy"): 0.0, ("rope", "first"): 0.2,
             ("ape", "prev"): 0.3, ("ape", "copy"): 0.1,
             ("ape", "first"): 0.8}
    alpha = rep.alpha_table({"lengths": [30, 60], "rows": [
        {"encoding": e, "task": k, "selection": sel, "main": main, "alpha": [a + off, a + off]}
        for (e, k), a in table.items()
        for sel, main, off in (("reference", True, 0.0), ("lbfgs", True, 0.5),
                               ("reference", False, 0.5))]})
    assert set(alpha) == {"rope", "ape"}  # the adapter names encodings as the grid does
    rows = rep.measurements(train, alpha)
    assert len(rows) == 2 * 3 * 2 * 2
    s = rep.tier_stats(rows, rep.Config(resamples=200))
    # learnable: every cell but rope/first (train 0.5); there alpha and LG order alike
    assert s["learnable_cells"] == 5 and s["rho"] == pytest.approx(1.0)
    # alpha >= 0.5: rope/prev (LG 0.95) and ape/first (0.9), 2 seeds x 2 lengths each
    assert s["precision"] == pytest.approx(1.0) and s["screened_rows"] == 8
    # labels LG >= 0.7: rope/prev, ape/first; both carry the two highest alphas
    assert s["auc"] == pytest.approx(1.0)
    c = rep.counts(rows)
    assert c["main"] == 24 and c["reduced"] and c["expected_main"] == 2625


def _train(programs, **config):
    return {"experiment": "realizability-train", "reduced": True, "programs": programs,
            "config": {"L0": 20, "rope_scale": 1.0, "d": 64, "vocab": 12, "run": {"seeds": 2},
                       **config}}


def _alpha(L0, lengths, rows):
    return {"config": {"L0": L0, "num": 16, "base": 1e4}, "lengths": lengths, "rows": [
        {"encoding": e, "task": k, "selection": "reference", "main": main, "num": 16,
         "base": 1e4, "scale": scale, "alpha": [a] * len(lengths)}
        for e, k, main, scale, a in rows]}


def test_sensitivity_pairs_each_L0_with_its_own_alpha_at_3_L0(tmp_path):
    main = _train([_program("1L1H", "rope", ["prev", "copy"], [0.9, 0.1], [1.0, 1.0])])
    short = _train([_program("1L1H", "rope", ["prev", "copy"], [0.8, 0.2], [1.0, 1.0])], L0=10)
    (tmp_path / "short.json").write_text(json.dumps(short))
    (tmp_path / "alpha10.json").write_text(json.dumps(_alpha(10, [30], [
        ("rope", "prev", True, 1.0, 0.7), ("rope", "copy", True, 1.0, 0.3)])))
    alpha20 = _alpha(20, [30, 60], [("rope", "prev", True, 1.0, 1.0),
                                    ("rope", "copy", True, 1.0, 0.0)])
    cfg = rep.Config(resamples=50, sensitivity=(str(tmp_path / "short.json"),),
                     sensitivity_alpha=(str(tmp_path / "alpha10.json"),))
    out = rep.sensitivity(main, alpha20, cfg.sensitivity, cfg.sensitivity_alpha, cfg)
    assert list(out) == [10, 20] and out[10]["L"] == 30 and out[20]["L"] == 60
    got = {(k, c["task"]): (c["lg"], c["alpha"]) for k in out for c in out[k]["cells"]}
    assert got == {(10, "prev"): (0.8, 0.7), (10, "copy"): (0.2, 0.3),
                   (20, "prev"): (0.9, 1.0), (20, "copy"): (0.1, 0.0)}
    text = "\n".join(rep.sweep_tables({"sensitivity": out}))
    assert "L0=10 @30" in text and "0.800 / 0.70" in text


def test_rope_scale_rows_take_the_sweep_alpha_of_their_scale(tmp_path):
    prog = lambda lg: _program("1L1H", "rope", ["skip-3"], [lg], [1.0])  # noqa: E731
    main = _train([prog(0.95)])
    (tmp_path / "s.json").write_text(json.dumps(_train([prog(0.4)], rope_scale=0.03)))
    alpha = _alpha(20, [30, 60], [("rope", "skip-3", True, 1.0, 1.0),
                                  ("rope", "skip-3", False, 0.03, 0.0)])
    rows = rep.rope_scale(main, alpha, (str(tmp_path / "s.json"),))
    assert [(r["scale"], r["L"], r["lg"], r["alpha"]) for r in rows] == [
        (1.0, 30, 0.95, 1.0), (1.0, 60, 0.95, 1.0), (0.03, 30, 0.4, 0.0), (0.03, 60, 0.4, 0.0)]


def test_a_missing_sweep_result_names_its_flag(tmp_path):
    main = _train([_program("1L1H", "rope", ["skip-3"], [0.9], [1.0])])
    with pytest.raises(ConfigError, match="--sensitivity: .*nowhere"):
        rep.sensitivity(main, None, (str(tmp_path / "nowhere"),), (), rep.Config())
    with pytest.raises(ConfigError, match="--rope-scale: "):
        rep.rope_scale(main, None, (str(tmp_path / "nowhere"),))
