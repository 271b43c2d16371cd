"""What a run's training cost across the processes that trained it (lgjax.checkpoints.ledger),
and what a reproduction cost from it (lgjax.reproduce.cost)."""

import shutil

import pytest
from conftest import tiny

from lgjax import checkpoints
from lgjax.checkpoints import driver, ledger
from lgjax.harness.study import RunOptions, train_one
from lgjax.reproduce.cost import of_steps

CFG = tiny(steps=6)  # checkpoints at 0, 1, 2, 4, 6


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    path = tmp_path_factory.mktemp("ledger") / "run"
    driver.train_run(CFG, path)
    return path


def test_every_checkpoint_records_the_seconds_from_step_0(finished):
    record = ledger.read(finished)
    assert sorted(record) == checkpoints.step_folders(finished) == [0, 1, 2, 4, 6]
    seconds = [record[s] for s in sorted(record)]
    assert seconds == sorted(seconds) and seconds[0] >= 0


def test_a_finished_run_reloaded_reports_its_training_not_the_reload(finished, tmp_path):
    record = ledger.read(finished)
    again = train_one(CFG, finished, RunOptions(ckpt_root=str(tmp_path), progress=False), "x")
    assert again.trained_seconds == record[6]
    assert ledger.read(finished) == record  # a reload saves nothing, so records nothing


def test_a_resumed_run_adds_to_the_record_of_the_step_it_restored(finished, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    shutil.rmtree(run / "6")  # as if killed after step 4
    ledger.record(run, 4, 1000.0)  # a long first process, to tell the sum from this one's time
    driver.train_run(CFG, run, resume=True)
    assert 1000.0 < ledger.at(run, 6) < 1000.0 + 600


def test_a_run_resumed_from_a_checkpoint_without_a_record_has_none(finished, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    shutil.rmtree(run / "6")
    (run / ledger.FILE).unlink()  # trained before lgjax kept the record
    driver.train_run(CFG, run, resume=True)
    assert ledger.at(run, 6) is None and ledger.at(run, 4) is None


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", '{"4": "soon"}', '{"x": 1.0}'])
def test_an_unreadable_record_is_no_record(tmp_path, text):
    (tmp_path / ledger.FILE).write_text(text)
    assert ledger.read(tmp_path) == {} and ledger.at(tmp_path, 4) is None


def test_a_reproduction_counts_each_run_once_at_its_recorded_seconds(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.symlink_to(a)  # a twin: one run under two names
    walls = {"one": 10.0, "two": 5.0, "report": 2.0, "three": 8.0}
    results = {
        # trained a (recorded 100 s) in 6 s here and measured for 4 s
        "one": {"run_dirs": {"x": str(a)}, "train_seconds": {"x": 6.0},
                "trained_seconds": {"x": 100.0}},
        # read the same run through the link (1 s) and measured for 4 s
        "two": {"run_dirs": {"y": str(b)}, "train_seconds": {"y": 1.0},
                "trained_seconds": {"y": 100.0}},
        "report": None,  # no results file of a harness command: its wall counts whole
        # a run without a record: its 7 s here count
        "three": {"run_dirs": {"z": str(tmp_path / "c")}, "train_seconds": {"z": 7.0},
                  "trained_seconds": {"z": None}},
    }
    spent = of_steps(walls, results)
    assert spent.training_seconds == 100.0 and spent.runs == 2 and spent.unrecorded == 1
    assert spent.seconds == pytest.approx(100.0 + 4 + 4 + 2 + 7 + 1)
    assert "1 more runs have no record" in spent.line() and "lower bound" in spent.line()
