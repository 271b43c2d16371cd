"""Rank statistics with bootstrap intervals (numpy): Spearman rho, a
thresholded precision, the ROC AUC, and percentile bootstrap CIs that resample whole clusters
(or single rows).

Pure functions of arrays; nothing here knows about encodings or tasks.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

BOOTSTRAP_SEED = 0  # the numpy generator of every bootstrap: intervals are reproducible


def ranks(x) -> np.ndarray:
    """1-based ranks of a 1-D array; tied values share the mean of their ranks, and a NaN
    anywhere makes every rank NaN: scipy.stats.rankdata's 'average' method and NaN rule, equal
    to it bit for bit (tests/test_realizability_stats.py). In numpy because importing
    scipy.stats for it sat on a profile's start, before its first run trained (the reference
    check ranks); the import's cost: docs/results/performance.md, A command's start."""
    x = np.ravel(np.asarray(x))
    if x.dtype.kind == "f" and np.isnan(x).any():
        return np.full(x.shape, np.nan)
    order = np.argsort(x, kind="stable")
    ordered = x[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])  # each tie group's first
    counts = np.diff(np.r_[starts, len(x)])
    out = np.empty(len(x))
    out[order] = np.repeat(starts + 1 + (counts - 1) / 2, counts)
    return out


def spearman(x, y) -> float:
    """Pearson correlation of the ranks (nan when either side is constant or empty)."""
    if len(x) < 2:
        return float("nan")
    rx, ry = (r - r.mean() for r in (ranks(x), ranks(y)))
    denom = np.sqrt((rx**2).sum() * (ry**2).sum())
    return float((rx * ry).sum() / denom) if denom > 0 else float("nan")


def precision(score, outcome, score_min: float, outcome_min: float) -> float:
    """P[outcome >= outcome_min | score >= score_min] (nan when no row passes the screen)."""
    chosen = np.asarray(score) >= score_min
    if not chosen.any():
        return float("nan")
    return float(np.mean(np.asarray(outcome)[chosen] >= outcome_min))


def auc(score, label) -> float:
    """P[score of a positive > score of a negative], ties counting 1/2 (Mann-Whitney)."""
    score, label = np.asarray(score, float), np.asarray(label, bool)
    n_pos, n_neg = label.sum(), (~label).sum()
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    return float((ranks(score)[label].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def bootstrap_ci(stat: Callable, arrays: tuple, clusters=None, resamples: int = 10_000,
                 level: float = 0.95, seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile interval of stat(*arrays) over resamples that draw whole clusters with
    replacement (clusters None: every row is its own cluster). Resamples where the statistic
    is undefined (nan) are dropped; (nan, nan) when none is defined."""
    arrays = tuple(np.asarray(a) for a in arrays)
    n = len(arrays[0])
    ids = np.arange(n) if clusters is None else np.unique(np.asarray(clusters),
                                                          return_inverse=True)[1]
    members = [np.flatnonzero(ids == c) for c in range(ids.max() + 1)] if n else []
    if not members:
        return float("nan"), float("nan")
    picks = np.random.default_rng(seed).integers(0, len(members), (resamples, len(members)))
    rows = picks if clusters is None else (np.concatenate([members[c] for c in p]) for p in picks)
    values = np.array([stat(*(a[r] for a in arrays)) for r in rows], float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return float("nan"), float("nan")
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return float(lo), float(hi)
