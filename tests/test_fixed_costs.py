"""The fixed-cost measurement's timers: they count what they wrap and leave nothing patched."""

from __future__ import annotations

import collections
import types

import jax.numpy as jnp
import pytest

from lgjax.bench import fixed_costs


def test_timer_counts_and_restores_even_on_error():
    owner = types.SimpleNamespace(work=lambda x: x + 1)
    original = owner.work
    seconds = collections.defaultdict(float)
    with pytest.raises(RuntimeError):
        with fixed_costs._wrapped(owner, "work", fixed_costs._timer(seconds, "work")):
            assert owner.work(1) == 2
            assert owner.work is not original
            raise RuntimeError("stop")
    assert owner.work is original
    assert set(seconds) == {"work"} and seconds["work"] >= 0.0


def test_chunk_timer_keeps_a_runs_first_call_apart():
    first, later = [], []
    make = fixed_costs._chunk_timer(first, later)(
        lambda: (lambda states, n: (states, jnp.zeros(2))))
    run_a, run_b = make(), make()
    run_a(None, 1)
    run_a(None, 250)
    run_a(None, 250)
    run_b(None, 1)
    assert [n for n, _ in first] == [1, 1]
    assert [n for n, _ in later] == [250, 250]

