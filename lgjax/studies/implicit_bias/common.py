"""Small pieces the implicit-bias experiments share (the harness itself is lgjax.harness.study)."""

from __future__ import annotations

import numpy as np

from lgjax import evaluate
from lgjax.config import ModelConfig
from lgjax.encodings import ApeOptions
from lgjax.harness.study import Trained


def implicit_bias_model(encoding: str, **fields) -> ModelConfig:
    """The implicit-bias study reads the APE table's rows past the trained range as they are
    (what they do is its finding); every other encoding keeps its defaults."""
    enc = ApeOptions(oob="untrained") if encoding == "ape" else None
    return ModelConfig(encoding=encoding, enc=enc, **fields)


def evaluate_run(t: Trained, lengths, run) -> evaluate.LengthEval:
    """Every seed x length of a trained run, with the study's evaluation options."""
    return evaluate.evaluate(t.states.params, t.config, lengths, run.eval_sequences,
                             run.devices or None)


def peak_head(ev: evaluate.LengthEval):
    """Per seed x length: the peak head's height and offset (H = 1: the head itself)."""
    head = np.argmax(ev.peak_height, axis=-1)[..., None]
    pick = lambda a: np.take_along_axis(np.asarray(a), head, axis=-1)[..., 0]
    return pick(ev.peak_height), pick(ev.selected_offset)


def mean_sd(a) -> str:
    a = np.asarray(a, float)
    return f"{a.mean():.3f}+-{a.std():.3f}"
