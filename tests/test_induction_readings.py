"""experiments/induction_readings.py's 'first occurrence' reading, labels by construction against
lgjax's 'most recent occurrence' task on the same hand-checked sequence."""

import importlib.util
from pathlib import Path

import jax
import numpy as np

from lgjax import tasks
from lgjax.config import TaskConfig

spec = importlib.util.spec_from_file_location(
    "induction_readings", Path(__file__).parents[1] / "experiments" / "induction_readings.py")
readings = importlib.util.module_from_spec(spec)
spec.loader.exec_module(readings)


def _labels(tokens, first: bool):
    """By hand: the token after the first (or last) earlier occurrence, -1 where none."""
    out = []
    for i, t in enumerate(tokens):
        earlier = [j for j in range(i) if tokens[j] == t]
        out.append(tokens[(earlier[0] if first else earlier[-1]) + 1] if earlier else -1)
    return out


def test_first_and_most_recent_occurrence_labels():
    cfg = TaskConfig.of("induction", vocab=4)
    for seed in range(5):
        first = readings.induction_first(jax.random.key(seed), 12, 12, cfg)
        recent = tasks.TASKS["induction"].sample_content(jax.random.key(seed), 12, 12, cfg)
        toks = np.asarray(first.tokens).tolist()
        assert toks == np.asarray(recent.tokens).tolist()  # the same content
        for ex, is_first in ((first, True), (recent, False)):
            want = _labels(toks, is_first)
            mask = np.asarray(ex.mask)
            assert mask.tolist() == [w >= 0 for w in want]
            assert np.asarray(ex.targets)[mask].tolist() == [w for w in want if w >= 0]
    # the readings differ where a token occurs three times or more (seed 3: rows 6, 7, 9, 10, 11)
    first = readings.induction_first(jax.random.key(3), 12, 12, cfg)
    recent = tasks.TASKS["induction"].sample_content(jax.random.key(3), 12, 12, cfg)
    assert (np.asarray(first.targets) != np.asarray(recent.targets)).any()
