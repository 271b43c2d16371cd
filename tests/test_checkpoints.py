import json
import os
import subprocess
import sys

import chex
import pytest

from lgjax import checkpoints, train
from lgjax.config import ConfigError
from tests.conftest import tiny

TINY = ["multiseed", "--encodings", "rope", "--seeds", "2", "--steps", "12", "--batch", "16",
        "--d", "16", "--vocab", "8", "--train-lengths", "4,8", "--eval-lengths", "8,12",
        "--eval-sequences", "64", "--no-progress"]


def _cli(tmp_path, name, *extra, env=None):
    args = [*TINY, "--ckpt-root", str(tmp_path / "ck"), "--run-name", name,
            "--out", str(tmp_path / name), *extra]
    return subprocess.run([sys.executable, "-m", "lgjax.cli", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=300)


def test_resume_after_kill_equals_uninterrupted(tmp_path):
    full = _cli(tmp_path, "full")
    assert full.returncode == 0, full.stderr
    killed = _cli(tmp_path, "killed", env={train.EXIT_ENV: "10"})
    assert killed.returncode == 17, killed.stderr  # died hard after step 10, before saving it
    cfg, run = checkpoints.open_run(tmp_path / "ck" / "killed" / "rope")
    assert run.latest() < 12
    run.close()
    again = _cli(tmp_path, "killed")  # without --resume: refused, nothing overwritten
    assert again.returncode == 2 and "--resume" in again.stderr
    resumed = _cli(tmp_path, "killed", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    finals = []
    for name in ("full", "killed"):
        cfg, run = checkpoints.open_run(tmp_path / "ck" / name / "rope")
        finals.append(run.restore(12))
        run.close()
    chex.assert_trees_all_close(finals[0], finals[1], atol=1e-6)
    a = json.loads((tmp_path / "full" / "results.json").read_text())["rope"]["accuracy"]
    b = json.loads((tmp_path / "killed" / "results.json").read_text())["rope"]["accuracy"]
    assert a == b


def test_different_config_is_refused(tmp_path):
    cfg = tiny(steps=2)
    checkpoints.train_run(cfg, tmp_path / "run")
    other = cfg.__class__(cfg.task, cfg.model.__class__(**{**cfg.model.__dict__, "d": 32}),
                          cfg.train)
    before = sorted(p.name for p in (tmp_path / "run").iterdir())
    with pytest.raises(ConfigError, match="model.d: saved 16 vs now 32"):
        checkpoints.train_run(other, tmp_path / "run", resume=True)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == before


def test_restore_into_abstract_state_roundtrip(tmp_path):
    cfg = tiny(steps=4)
    states = checkpoints.train_run(cfg, tmp_path / "run")
    loaded_cfg, run = checkpoints.open_run(tmp_path / "run")
    assert loaded_cfg == cfg and run.steps() == [0, 1, 2, 4]
    chex.assert_trees_all_close(run.restore(), states)
    run.close()


def test_missing_and_corrupt_checkpoints_error_clearly(tmp_path):
    with pytest.raises(checkpoints.CheckpointError, match="config.json is missing"):
        checkpoints.open_run(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(checkpoints.CheckpointError, match="corrupt"):
        checkpoints.open_run(tmp_path)
    cfg = tiny(steps=1)
    checkpoints.train_run(cfg, tmp_path / "run")
    for f in (tmp_path / "run" / "1").rglob("*"):
        if f.is_file() and f.stat().st_size > 0 and "manifest" in f.name:
            f.write_bytes(b"garbage")
    _, run = checkpoints.open_run(tmp_path / "run")
    with pytest.raises(checkpoints.CheckpointError, match="cannot be restored"):
        run.restore(1)
    run.close()
