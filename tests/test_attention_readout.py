"""experiments/attention_readout.py: its four shares on a hand-computed case, and the script end
to end on a run directory."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from lgjax import train
from lgjax.checkpoints import RunDir
from tests.conftest import task_config, tiny

spec = importlib.util.spec_from_file_location(
    "attention_readout", Path(__file__).parents[1] / "experiments" / "attention_readout.py")
readout = importlib.util.module_from_spec(spec)
spec.loader.exec_module(readout)


def test_shares_by_hand():
    """Offset 1 on tokens 5 6 7 8, rows 1..3 scored (targets 5 6 7). Row 1 puts all its mass on
    key 0 (right key, right token); row 2 0.6 on itself and 0.4 on key 1 (wrong key, token 7 for
    6); row 3 0.3 on key 1 and 0.7 on key 2 (right). The model gets rows 1 and 2 right."""
    att = np.zeros((1, 4, 4))
    att[0, 0, 0] = 1.0
    att[0, 1, 0] = 1.0
    att[0, 2, [1, 2]] = 0.4, 0.6
    att[0, 3, [1, 2]] = 0.3, 0.7
    tokens = np.array([[5, 6, 7, 8]])
    targets = np.array([[-1, 5, 6, 7]])
    mask = np.array([[0, 1, 1, 1]])
    logits = np.zeros((1, 4, 9))
    logits[0, np.arange(4), [0, 5, 6, 8]] = 1.0  # row 3 predicts 8, not 7
    r = readout.readout(att, tokens, targets, mask, logits, offset=1)
    assert r == pytest.approx({"model": 2 / 3, "readout": 2 / 3, "top_is_offset": 2 / 3,
                               "mass_at_offset": (1.0 + 0.4 + 0.7) / 3})
    of = lambda name, **knobs: readout.offset_of(task_config(name, **knobs))
    assert of("skip", offset=3) == 3 and of("shift", offset=2) == 2 and of("prev") == 1
    assert of("copy") is None and of("fixed_offset", offset=1) is None  # last row only


def test_script_on_a_run_directory(tmp_path, monkeypatch, capsys):
    cfg = tiny("rope", task="skip", seeds=(0, 1))
    with RunDir(tmp_path / "run", cfg) as run:  # its initial parameters: the script reads any
        run.save(0, train.init_states(cfg))
    monkeypatch.setattr(sys, "argv", ["attention_readout.py", str(tmp_path / "run"),
                                      "--length", "12", "--sequences", "8"])
    readout.main()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("skip K=1 (rope")  # tiny: offset 1
    assert [line.split(":")[0].strip() for line in lines[1:]] == ["seed 0", "seed 1"]
    shares = [float(x) for x in lines[1].split(":")[1].split("|")]
    assert len(shares) == 4 and all(0.0 <= x <= 1.0 for x in shares)
