"""The positional contract lab: six stand-in scores over one pinned content pair, four metrics.

The contract study's lab (docs/studies/contract.md). A score is `score(i, j) -> float array` for
query positions i and key positions j (integer arrays that broadcast), NaN where it is undefined (a
position past a learned table). The lab is not causal: the key may come after the query. Everything
is float64 numpy, so the tolerances below separate float rounding (~1e-15) from a real break.

Metrics (`profile` runs them on any score; `kernel_score` makes one of a registered encoding's
positional-only kernel, at init or with a trained checkpoint's parameters):
  shift error       |score(2, 7) - score(2 + shift, 7 + shift)|, NaN where undefined;
  out-of-table      fraction of score(0, d), d = 1..test-1, that is undefined;
  collisions        pairs of defined distances whose scores differ by < COLLIDE;
  monotonic breaks  distances d with score(0, d+1) > score(0, d) + MONO_TOL, both defined.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from lgjax.config import ModelConfig, require

Q = np.array([0.8, -0.3, 0.5, 0.1, -0.4, 0.7, 0.2, -0.6])
K = np.array([-0.2, 0.9, 0.4, -0.5, 0.3, 0.1, -0.8, 0.6])
THETA = 10000.0 ** (-2.0 * np.arange(len(Q) // 2) / len(Q))  # theta_k, k = 0..3
CLIP, REL_SLOPE, ALIBI_SLOPE = 16, 0.12, 0.07
PAIR = (2, 7)  # the (query, key) positions the shift error moves
SHIFT_TOL = 1e-9  # a shift error below this is float rounding, not a break
COLLIDE = 1e-3  # two distances collide when their scores are closer than this
MONO_TOL = 1e-9  # a rise smaller than this is not a monotonic break

Score = Callable[[np.ndarray, np.ndarray], np.ndarray]


# ---- positional vectors [..., 8] ----------------------------------------------------------

def table_row(p) -> np.ndarray:
    """The learned stand-in: r(p)_c = 0.35 (sin((p+1)(c+2) 1.713) + 0.5 cos((p+3)(c+1) 0.917))."""
    p = np.asarray(p, np.float64)[..., None]
    c = np.arange(len(Q))
    return 0.35 * (np.sin((p + 1) * (c + 2) * 1.713) + 0.5 * np.cos((p + 3) * (c + 1) * 0.917))


def sinusoid(p) -> np.ndarray:
    """s(p)_{2k} = sin(p theta_k), s(p)_{2k+1} = cos(p theta_k)."""
    ang = np.asarray(p, np.float64)[..., None] * THETA
    return np.stack([np.sin(ang), np.cos(ang)], axis=-1).reshape(*ang.shape[:-1], len(Q))


def rotate(x, p) -> np.ndarray:
    """Pairs (x_2k, x_2k+1) rotated by the angle p theta_k."""
    ang = np.asarray(p, np.float64)[..., None] * THETA
    x1, x2 = x[0::2], x[1::2]
    out = np.stack([x1 * np.cos(ang) - x2 * np.sin(ang), x1 * np.sin(ang) + x2 * np.cos(ang)], -1)
    return out.reshape(*ang.shape[:-1], len(Q))


# ---- the six schemes: train horizon -> score ------------------------------------------------

def learned(train: int) -> Score:
    def score(i, j):
        i, j = np.broadcast_arrays(np.asarray(i), np.asarray(j))
        s = ((Q + table_row(i)) * (K + table_row(j))).sum(-1)
        inside = (i >= 0) & (i < train) & (j >= 0) & (j < train)
        return np.where(inside, s, np.nan)

    return score


def sinusoidal(i, j):
    return ((Q + sinusoid(i)) * (K + sinusoid(j))).sum(-1)


def relative(i, j):
    return Q @ K - REL_SLOPE * np.minimum(np.abs(np.subtract(j, i)), CLIP)


def rope(i, j):
    # rotated at their absolute positions (not through j - i), so shift invariance is measured
    return (rotate(Q, i) * rotate(K, j)).sum(-1)


def alibi(i, j):
    return Q @ K - ALIBI_SLOPE * np.abs(np.subtract(j, i)).astype(np.float64)


def nope(i, j):
    return np.full(np.broadcast_shapes(np.shape(i), np.shape(j)), Q @ K)


SCHEMES: dict[str, Callable[[int], Score]] = {
    "learned": learned,
    "sinusoidal": lambda train: sinusoidal,
    "relative": lambda train: relative,
    "rope": lambda train: rope,
    "alibi": lambda train: alibi,
    "nope": lambda train: nope,
}


# ---- metrics ------------------------------------------------------------------------------

def shift_error(score: Score, shift: int, pair: tuple[int, int] = PAIR) -> float:
    """|score(pair) - score(pair + shift)|; NaN when either score is undefined."""
    i, j = pair
    s = np.asarray(score(np.array([i, i + shift]), np.array([j, j + shift])), np.float64)
    return float(np.abs(s[0] - s[1]))


def distance_curve(score: Score, test: int) -> np.ndarray:
    """score(0, d) for d = 1..test-1 (entry d-1), NaN where undefined."""
    d = np.arange(1, test)
    return np.asarray(score(np.zeros_like(d), d), np.float64)


def out_of_table(curve: np.ndarray) -> float:
    return float(np.isnan(curve).mean())


def collision_pairs(curve: np.ndarray, tol: float = COLLIDE) -> np.ndarray:
    """[P, 2] distance pairs (d1 < d2, both defined) whose scores differ by less than tol."""
    gap_DxD = np.abs(curve[:, None] - curve[None, :])  # NaN where either is undefined
    d1, d2 = np.nonzero(np.triu(gap_DxD < tol, k=1))
    return np.stack([d1 + 1, d2 + 1], axis=-1)


def collisions(curve: np.ndarray, tol: float = COLLIDE) -> int:
    return len(collision_pairs(curve, tol))


def monotonic_breaks(curve: np.ndarray, tol: float = MONO_TOL) -> int:
    """How often the score rises from d to d+1 (NaN comparisons are False: undefined skipped)."""
    return int((curve[1:] > curve[:-1] + tol).sum())


def profile(score: Score, test: int = 96, shift: int = 17) -> dict:
    """The four metrics of any score (JSON-able: undefined becomes None), plus its curve."""
    err = shift_error(score, shift)
    curve = distance_curve(score, test)
    defined = int((~np.isnan(curve)).sum())
    return {
        "shift_error": None if np.isnan(err) else err,
        "shift_invariant": None if np.isnan(err) else bool(err < SHIFT_TOL),
        "out_of_table": out_of_table(curve),
        "collisions": collisions(curve),
        "defined_pairs": defined * (defined - 1) // 2,
        "monotonic_breaks": monotonic_breaks(curve),
        "curve": [None if np.isnan(s) else float(s) for s in curve],
    }


def check(train: int, test: int, shift: int) -> None:
    require(train >= 1, "train", f"the learned table needs >= 1 row, got {train}; raise it")
    require(test >= 2, "test", f"distances run over 1..test-1, so test must be >= 2, got {test}")
    require(shift >= 0, "shift", f"must be >= 0, got {shift}; positions are non-negative")


def lab(train: int = 32, test: int = 96, shift: int = 17) -> dict[str, dict]:
    """The contract profile of every stand-in scheme."""
    check(train, test, shift)
    return {name: profile(make(train), test, shift) for name, make in SCHEMES.items()}


# ---- registered encodings: a positional-only kernel as a score ------------------------------

@functools.cache
def _compiled(kernel):
    """The kernel as one program per (model, shapes). Called op by op, every primitive of ~25
    kernels compiled on its own: the lab's three settings took 20.5 s, 9.9 s as one program
    each (2-core AVX2). XLA orders some float64 arithmetic differently inside one program:
    FIRE's and xPos's curves moved by <= 3.4e-16 relative; no count, verdict or listing value
    moved."""
    return jax.jit(kernel, static_argnums=3)


def kernel_score(kernel, params, model: ModelConfig, horizon: int | None, head: int = 0) -> Score:
    """One head of an encoding's kernel(params, q_pos, k_pos, model) as a lab score, in float64.

    Every lgjax model is causal, so a kernel is only ever read with the key at or before the
    query (the bias kernels are defined for dist = q - k >= 0 only). The lab reads it at the causal
    mirror of each pair, score(i, j) = kernel(q = max(i, j), k = min(i, j)): the bias at |i - j|
    for bias kinds, nothing changes for rotary (g is even), (W_Q p_max) . (W_K p_min) for additive
    ones. Positions at or past `horizon` (rows never trained) are undefined. The spec's content
    term Q . K would only add a constant, which changes none of the four metrics: left out.
    """

    # once per score, not per call: host float64 copies need no x64 context
    p64 = jax.tree.map(lambda x: np.asarray(x, np.float64)
                       if jnp.issubdtype(x.dtype, jnp.floating) else x, params)

    def score(i, j):
        i, j = np.broadcast_arrays(np.asarray(i), np.asarray(j))
        q, k = np.maximum(i, j), np.minimum(i, j)
        with jax.enable_x64(True):
            s = np.asarray(_compiled(kernel)(p64, q, k, model), np.float64)
        s = s[..., head]
        return s if horizon is None else np.where(q < horizon, s, np.nan)

    return score


def kernel_profiles(kernel, params, model: ModelConfig, horizon: int | None, test: int = 96,
                    shift: int = 17) -> list[dict]:
    """The profile of every head of a kernel (model.heads of them)."""
    return [profile(kernel_score(kernel, params, model, horizon, h), test, shift)
            for h in range(model.heads)]
