import dataclasses
import json
import os
import shutil
import signal

import chex
import pytest

from lgjax import checkpoints, train
from lgjax.checkpoints import driver, ledger
from lgjax.config import ConfigError
from lgjax.harness.cli import main
from lgjax.runs import open_run
from tests.conftest import start_training, tiny, wait_for_step

TINY = ["multiseed", "--encodings", "rope", "--seeds", "2", "--steps", "12", "--batch", "16",
        "--d", "16", "--vocab", "8", "--train-lengths", "4,8", "--eval-lengths", "8,12",
        "--eval-sequences", "64", "--no-progress"]  # a CLI run every test can afford

CFG = tiny(steps=12)  # checkpoints at 0, 1, 2, 4, 8, 12


@pytest.fixture(scope="module")
def runner():
    return train.make_chunk_runner(CFG)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, runner):
    """An uninterrupted run (never modified) and its final state."""
    path = tmp_path_factory.mktemp("trained") / "run"
    return path, driver.train_run(CFG, path, runner=runner)


@pytest.fixture
def run_copy(trained, tmp_path):
    shutil.copytree(trained[0], tmp_path / "run")
    return tmp_path / "run"


def test_resume_after_outside_kill_equals_uninterrupted(tmp_path, capsys, runner, trained):
    run = tmp_path / "run"
    # a pause at every chunk boundary gives the test time to kill it mid-run
    proc = start_training(run, steps=12, resume=True, sleep=0.2)
    try:
        wait_for_step(proc, run, 4)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert 4 <= checkpoints.step_folders(run)[-1] < 12
    with pytest.raises(ConfigError, match="--resume"):  # without --resume: refused, untouched
        driver.train_run(CFG, run)
    capsys.readouterr()
    restored_from = checkpoints.step_folders(run)[-1]
    before = ledger.at(run, restored_from)
    resumed = driver.train_run(CFG, run, resume=True, runner=runner)
    assert "took over the stale lock" in capsys.readouterr().err  # the killed writer's lock
    chex.assert_trees_all_equal(resumed, trained[1])  # bitwise
    # the killed process paused 0.2 s at steps 0-3 before saving step 4; the resumed one took
    # less than that alone, so its record carries the killed process's seconds on
    assert before >= 0.8 and ledger.at(run, 12) > before
    reader = open_run(run)
    with reader:
        assert [s for s, _ in reader.readable_steps()] == [0, 1, 2, 4, 8, 12]
    assert not [p for p in run.iterdir() if "tmp" in p.name]


def test_different_config_is_refused(run_copy):
    other = CFG.__class__(CFG.task, CFG.model.__class__(**{**CFG.model.__dict__, "d": 32}),
                          CFG.train)
    before = sorted(p.name for p in run_copy.iterdir())
    with pytest.raises(ConfigError, match="model.d: saved 16 vs now 32"):
        driver.train_run(other, run_copy, resume=True)
    assert sorted(p.name for p in run_copy.iterdir()) == before


def test_checkpoints_without_config_are_refused_never_adopted(run_copy):
    (run_copy / "config.json").unlink()
    task = dataclasses.replace(CFG.task, opts=dataclasses.replace(CFG.task.opts, offset=2))
    other = CFG.__class__(task, CFG.model, CFG.train)
    for attempt in (lambda: checkpoints.check_run_dir(run_copy, other, resume=True),
                    lambda: driver.train_run(other, run_copy, resume=True)):
        with pytest.raises(ConfigError, match=r"steps 0\.\.12\) but no config.json"):
            attempt()
    assert not (run_copy / "config.json").exists() and not (run_copy / "lgjax.lock").exists()
    with pytest.raises(checkpoints.CheckpointError, match="config.json is missing"):
        open_run(run_copy)


def test_restore_into_abstract_state_roundtrip(trained):
    run = open_run(trained[0])
    loaded_cfg = run.config
    assert loaded_cfg == CFG and run.steps() == [0, 1, 2, 4, 8, 12]
    chex.assert_trees_all_equal(run.restore(), trained[1])
    run.close()
    assert not (trained[0] / "lgjax.lock").exists()


def test_missing_and_corrupt_config_error_clearly(tmp_path):
    with pytest.raises(checkpoints.CheckpointError, match="does not exist"):
        open_run(tmp_path / "nowhere")
    with pytest.raises(checkpoints.CheckpointError, match="config.json is missing"):
        open_run(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(checkpoints.CheckpointError, match="corrupt"):
        open_run(tmp_path)


def test_check_run_dir_writes_nothing(tmp_path):
    cfg = tiny()
    checkpoints.check_run_dir(tmp_path / "a" / "run", cfg)
    assert not (tmp_path / "a").exists()
    (tmp_path / "file").write_text("")
    for path in (tmp_path / "file", tmp_path / "file" / "run"):
        with pytest.raises(ConfigError, match="file|not a directory"):
            checkpoints.check_run_dir(path, cfg)
        with pytest.raises(ConfigError):
            checkpoints.RunDir(path, cfg)
    assert (tmp_path / "file").read_text() == ""


def test_a_config_rewritten_with_other_formatting_is_the_same_run(run_copy, runner, trained,
                                                                 tmp_path, capsys):
    """A config's identity is its content: the same data, keys in another order, another
    indent and a trailing newline, resumes, restores and analyses as before."""
    cfg_file = run_copy / "config.json"
    data = json.loads(cfg_file.read_text())
    cfg_file.write_text(json.dumps(dict(reversed(data.items())), indent=4) + "\n")
    with open_run(run_copy) as run:
        assert run.config == CFG
        assert [s for s, _ in run.readable_steps()] == [0, 1, 2, 4, 8, 12] and not run.damaged
    chex.assert_trees_all_equal(driver.train_run(CFG, run_copy, resume=True, runner=runner),
                                trained[1])
    assert main(["dynamics", str(run_copy), "--lengths", "8,12", "--eval-sequences", "16",
                 "--out", str(tmp_path / "dyn")]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("section, field, value, name", [
    ("model", "d", "16", "model.d"), ("train", "lr", "fast", "train.lr"),
    ("train", "seeds", [0, "1"], "train.seeds"), ("task", "vocab", 8.5, "task.vocab"),
    ("model", "enc", {"base": "big"}, "model.enc.base"),
    # fields this lgjax does not know: a flat option, as configs before 0.1.0 saved them, ...
    ("model", "base", 10000.0, "model.base"), ("train", "warp", 2, "train.warp"),
    ("model", "enc", {"bse": 500.0}, "model.enc.bse"),
])
def test_a_config_field_of_the_wrong_type_or_unknown_is_one_line_naming_it(
        run_copy, tmp_path, capsys, section, field, value, name):
    cfg_file = run_copy / "config.json"
    data = json.loads(cfg_file.read_text())
    data[section][field] = value
    cfg_file.write_text(json.dumps(data))
    with pytest.raises(checkpoints.CheckpointError, match=f"corrupt \\({name}: "):
        open_run(run_copy)
    with pytest.raises(checkpoints.CheckpointError, match=name):
        driver.train_run(CFG, run_copy, resume=True)
    capsys.readouterr()
    for argv in (["dynamics", str(run_copy), "--out", str(tmp_path / "dyn")],
                 ["contract-lab", "--run-dir", str(run_copy), "--out", str(tmp_path / "lab")]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and name in err[0] and str(cfg_file) in err[0], err
