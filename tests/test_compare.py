"""The profile card's comparison (lgjax.profile.compare): the difference, its 95% interval and the
verdict, against cases worked by hand here (t quantiles from the t table: t_0.975 with 2 df is
4.302653, with 4 df 2.776445)."""

import numpy as np
import pytest
from scipy import stats

from lgjax.profile import card, compare


def test_welch_stratified_by_task_by_hand():
    # two tasks, two seeds each, every group's variance 0.005: standard error
    # sqrt(4 * 0.005 / 2 / 2^2) = 0.05, Welch-Satterthwaite df = 4 (four equal groups of 2)
    a = [[0.9, 1.0], [0.7, 0.8]]
    b = [[0.5, 0.6], [0.2, 0.3]]
    c = compare.interval(a, b)
    # per-task differences 0.95 - 0.55 = 0.40 and 0.75 - 0.25 = 0.50: mean 0.45
    assert c["diff"] == pytest.approx(0.45)
    assert c["df"] == pytest.approx(4.0)
    assert (c["lo"], c["hi"]) == pytest.approx((0.45 - 2.776445 * 0.05, 0.45 + 2.776445 * 0.05),
                                               abs=1e-6)
    assert (c["method"], c["verdict"], c["tasks"], c["seeds"]) == ("welch", "better", 2, [2, 2])
    flipped = compare.interval(b, a)  # the same interval, mirrored
    assert (flipped["lo"], flipped["hi"]) == pytest.approx((-c["hi"], -c["lo"]))
    assert flipped["verdict"] == "worse"


def test_one_task_is_welchs_t_interval():
    a, b = [0.91, 0.7, 0.85], [0.5, 0.93, 0.64, 0.7]
    c = compare.interval([a], [b])
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (c["lo"], c["hi"]) == pytest.approx((ci.low, ci.high))
    assert c["verdict"] == "indistinguishable" and c["seeds"] == [3, 4]


def test_a_single_seed_pairs_the_tasks_by_hand():
    # per-task differences 0.2, -0.1, 0.5: mean 0.2, sd 0.3, standard error 0.3 / sqrt(3), df 2
    c = compare.interval([[1.0], [0.5], [0.9]], [[0.8], [0.6], [0.4]])
    half = 4.302653 * 0.3 / np.sqrt(3)
    assert (c["diff"], c["lo"], c["hi"]) == pytest.approx((0.2, 0.2 - half, 0.2 + half), abs=1e-6)
    assert (c["method"], c["df"], c["verdict"]) == ("tasks", 2, "indistinguishable")


def test_no_interval_and_no_spread():
    none = compare.interval([[0.9]], [[0.1]])  # one task of one seed: nothing to form it from
    assert (none["lo"], none["hi"], none["method"], none["verdict"]) == (
        None, None, "none", "indistinguishable")
    assert compare.cell(none) == "+0.80 indistinguishable"
    flat = compare.interval([[1.0, 1.0]], [[0.5, 0.5]])  # no spread: the difference itself
    assert (flat["lo"], flat["hi"], flat["df"], flat["verdict"]) == (0.5, 0.5, None, "better")
    same = compare.interval([[1.0, 1.0]], [[1.0, 1.0]])
    assert same["verdict"] == "indistinguishable"


def _inst(acc_K1, acc_K2, lg):
    """An instruments dict with the trained numbers compare reads: accuracy [seed, length] at
    K = 1, 2 (lengths 16, 48) and LG [task, seed, length] (lengths 60)."""
    ib = {"lengths": [16, 48], "K1": {"accuracy": [[1.0, a] for a in acc_K1]},
          "K2": {"accuracy": [[1.0, a] for a in acc_K2]}}
    rz = {"1L1H": {"tasks": ["prev", "first"], "lengths": [60],
                   "lg": [[[v] for v in task] for task in lg]}}
    return {"implicit_bias": ib, "realizability": rz}


def test_of_compares_each_trained_instrument_against_each_canonical_encoding():
    mine = _inst([0.9, 1.0], [0.7, 0.8], [[0.9], [0.5]])
    ref = {"rope": _inst([0.5, 0.6], [0.2, 0.3], [[0.8], [0.6]]), "mine": mine}
    got = compare.of(mine, ref, "mine")
    assert set(got) == {"implicit_bias", "realizability_1L1H"}
    assert list(got["implicit_bias"]["vs"]) == ["rope"]  # never against itself
    # the implicit-bias tasks are K = 1, 2: the hand case of the Welch test above
    assert got["implicit_bias"]["vs"]["rope"]["diff"] == pytest.approx(0.45)
    assert got["implicit_bias"]["vs"]["rope"]["verdict"] == "better"
    rz = got["realizability_1L1H"]["vs"]["rope"]  # one seed: paired over the two tasks
    assert (rz["method"], rz["diff"]) == ("tasks", pytest.approx(0.0))
    lines = compare.verdict_lines(got)
    assert lines[0].startswith("Comparison, implicit bias (accuracy at L=48, tasks K=1 and K=2)"
                               ": better than rope.")
    assert lines[1].endswith(": indistinguishable from rope.")
    title, cols, rows = card.comparison_table({"encoding": "mine", "comparison": got})
    assert rows[0][0] == "rope" and rows[0][1].endswith("] better") and len(cols) == 3
