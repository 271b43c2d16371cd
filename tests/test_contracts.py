import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lgjax.config import ConfigError
from lgjax.encodings import ENCODINGS
from lgjax.studies.contract import lab as contract_lab
from lgjax.studies.contract import scores as C

Q = [0.8, -0.3, 0.5, 0.1, -0.4, 0.7, 0.2, -0.6]
K = [-0.2, 0.9, 0.4, -0.5, 0.3, 0.1, -0.8, 0.6]
THETA = [10000 ** (-2 * k / 8) for k in range(4)]


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def plain_score(name, i, j, train=32):
    """The spec's formulas, one scalar at a time (independent of the vectorised module)."""
    r = lambda p: [0.35 * (math.sin((p + 1) * (c + 2) * 1.713)
                           + 0.5 * math.cos((p + 3) * (c + 1) * 0.917)) for c in range(8)]
    s = lambda p: [f(p * THETA[c // 2]) for c in range(8) for f in ((math.sin, math.cos)[c % 2],)]

    def rot(x, p):
        out = []
        for k in range(4):
            a, b, ang = x[2 * k], x[2 * k + 1], p * THETA[k]
            out += [a * math.cos(ang) - b * math.sin(ang), a * math.sin(ang) + b * math.cos(ang)]
        return out

    add = lambda u, v: [x + y for x, y in zip(u, v)]
    if name == "learned":
        return dot(add(Q, r(i)), add(K, r(j))) if max(i, j) < train else math.nan
    return {"sinusoidal": lambda: dot(add(Q, s(i)), add(K, s(j))),
            "relative": lambda: dot(Q, K) - 0.12 * min(abs(j - i), 16),
            "rope": lambda: dot(rot(Q, i), rot(K, j)),
            "alibi": lambda: dot(Q, K) - 0.07 * abs(j - i),
            "nope": lambda: dot(Q, K)}[name]()


@pytest.mark.parametrize("name", list(C.SCHEMES))
def test_schemes_match_the_spec_formulas(name):
    i = np.array([0, 2, 19, 5, 40, 31, 0])
    j = np.array([7, 7, 24, 3, 1, 33, 95])
    got = C.SCHEMES[name](32)(i, j)
    want = [plain_score(name, a, b) for a, b in zip(i.tolist(), j.tolist())]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_shift_error_on_a_hand_built_score():
    linear = lambda i, j: 1.0 * np.asarray(i) + 2.0 * np.asarray(j)
    assert C.shift_error(linear, 5) == pytest.approx(3 * 5)
    assert C.shift_error(linear, 0) == 0.0
    partial = lambda i, j: np.where(np.asarray(j) < 10, 1.0, np.nan)
    assert C.shift_error(partial, 2) == 0.0 and np.isnan(C.shift_error(partial, 3))


def test_curve_metrics_on_hand_built_curves():
    nan = np.nan
    assert C.out_of_table(np.array([1.0, nan, 2.0, nan])) == 0.5
    curve = np.array([0.0, 0.0005, 0.5, 0.5009, nan, 0.0, 0.3])
    assert C.collision_pairs(curve).tolist() == [[1, 2], [1, 6], [2, 6], [3, 4]]
    assert C.collisions(curve) == 4
    # rises: 2 -> 2.5 counts; +1e-12 is within tolerance; steps into/out of NaN are skipped
    rising = np.array([3.0, 2.0, 2.5, 2.5 + 1e-12, nan, 5.0, 4.0, 4.5])
    assert C.monotonic_breaks(rising) == 2


def test_profile_of_a_hand_built_score():
    step = lambda i, j: np.where(np.asarray(j) < 9, -1.0 * np.asarray(j), np.nan)
    p = C.profile(step, test=12, shift=1)  # pair (2, 7) -> (3, 8): -7 vs -8
    assert p["shift_error"] == 1.0 and p["shift_invariant"] is False
    assert p["out_of_table"] == 3 / 11 and p["collisions"] == 0 and p["defined_pairs"] == 28
    assert p["monotonic_breaks"] == 0 and p["curve"] == [-1.0 * d for d in range(1, 9)] + [None] * 3


def all_pairs(ds):
    return [[a, b] for k, a in enumerate(ds) for b in ds[k + 1:]]


def test_nope_collides_on_every_pair():
    curve = C.distance_curve(C.nope, 96)
    assert C.collision_pairs(curve).tolist() == all_pairs(list(range(1, 96)))


def test_clipped_bias_collides_exactly_past_the_clip():
    curve = C.distance_curve(C.relative, 96)
    assert C.collision_pairs(curve).tolist() == all_pairs(list(range(C.CLIP, 96)))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 500), st.integers(0, 60), st.integers(0, 60))
def test_rope_shift_error_is_float_rounding(shift, i, j):
    err = C.shift_error(C.rope, shift, (i, j))
    assert err < C.SHIFT_TOL


def test_rope_is_a_function_of_the_offset():
    """rot(Q, i) . rot(K, j) = sum_k (q1 k1 + q2 k2) cos(a) + (q2 k1 - q1 k2) sin(a), a=(j-i)th."""
    i, j = np.array([0, 3, 50]), np.array([9, 1, 77])
    a = (j - i)[:, None] * C.THETA
    q1, q2, k1, k2 = C.Q[0::2], C.Q[1::2], C.K[0::2], C.K[1::2]
    want = ((q1 * k1 + q2 * k2) * np.cos(a) + (q2 * k1 - q1 * k2) * np.sin(a)).sum(-1)
    np.testing.assert_allclose(C.rope(i, j), want, atol=1e-12)


def test_sinusoidal_keeps_shift_at_the_carrier_only():
    p, q = np.array([2, 19]), np.array([7, 24])
    carrier = (C.sinusoid(p) * C.sinusoid(q)).sum(-1)
    np.testing.assert_allclose(carrier[0], carrier[1], atol=1e-12)
    assert C.shift_error(C.sinusoidal, 17) > 0.1  # the content cross-terms break it


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 120), st.integers(2, 150))
def test_learned_out_of_table_fraction(train, test):
    curve = C.distance_curve(C.learned(train), test)
    assert C.out_of_table(curve) == pytest.approx(max(test - train, 0) / (test - 1))


def test_learned_shift_error_undefined_when_a_position_leaves_the_table():
    inside, outside = C.profile(C.learned(32), shift=24), C.profile(C.learned(32), shift=25)
    assert inside["shift_error"] > C.SHIFT_TOL and inside["shift_invariant"] is False
    assert outside["shift_error"] is None and outside["shift_invariant"] is None


def test_lab_at_defaults():
    lab = C.lab()
    assert list(lab) == ["learned", "sinusoidal", "relative", "rope", "alibi", "nope"]
    assert lab["learned"]["out_of_table"] == pytest.approx(64 / 95)
    assert lab["learned"]["defined_pairs"] == 31 * 30 // 2
    for name in ("relative", "rope", "alibi", "nope"):
        assert lab[name]["shift_invariant"] is True, name
    for name in ("learned", "sinusoidal"):
        assert lab[name]["shift_invariant"] is False, name
    assert lab["nope"]["collisions"] == 95 * 94 // 2
    assert lab["relative"]["collisions"] == 80 * 79 // 2
    assert lab["alibi"]["collisions"] == 0
    for name in ("relative", "alibi", "nope"):  # monotone (or flat) in distance
        assert lab[name]["monotonic_breaks"] == 0, name
    assert lab["rope"]["monotonic_breaks"] > 0 and lab["sinusoidal"]["monotonic_breaks"] > 0


@pytest.mark.parametrize("field,kw", [("train", {"train": 0}), ("test", {"test": 1}),
                                      ("shift", {"shift": -1})])
def test_lab_rejects_bad_fields(field, kw):
    with pytest.raises(ConfigError, match=f"^{field}:"):
        C.lab(**kw)


def test_driver_measure_table_figure(tmp_path):
    cfg = contract_lab.Config(train=12, test=24, shift=3)
    assert contract_lab.runs(cfg) == {}
    res = contract_lab.measure(cfg, {})
    res = json.loads(json.dumps(res))  # JSON-able, and the table reads the round trip
    assert res["distances"] == list(range(1, 24))
    assert all(len(p["curve"]) == 23 for p in res["schemes"].values())
    assert set(res["encodings"]) == set(ENCODINGS) and res["trained"] is None
    content = [n for n, e in res["encodings"].items() if e.get("undefined")]
    assert sorted(content) == sorted(n for n, e in ENCODINGS.items() if e.kind == "content")
    assert all(len(e["heads"][0]["curve"]) == 23 for n, e in res["encodings"].items()
               if n not in content)
    lines = contract_lab.table(res).splitlines()
    # the content-aware encodings: a section of one line each, "<name>: undefined for <name>..."
    assert len(lines) == 1 + 3 * 2 + len(C.SCHEMES) + len(ENCODINGS) + 2
    assert sum(line.strip().startswith(f"{n}: undefined for {n}: a content-aware")
               for n in content for line in lines) == len(content)
    row = next(line for line in lines if line.startswith("learned")).split()
    p = res["schemes"]["learned"]
    assert row[1:] == [f"{p['shift_error']:.2e}", "no", f"{12 / 23:.3f}", "0/55",
                       str(p["monotonic_breaks"])]
    row = next(line for line in lines if line.startswith("ape")).split()
    assert row[3:5] == [f"{12 / 23:.3f}", "0/55"]  # rows from the train horizon on: undefined
    contract_lab.figure(res, tmp_path / "lab")
    assert (tmp_path / "lab.png").stat().st_size > 0 and (tmp_path / "lab.pdf").exists()
