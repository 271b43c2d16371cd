"""A run whose config a finished run under the same --ckpt-root already trained is read from that
run, not trained again (lgjax.checkpoints.twins), and measures the same."""

import dataclasses
import json
import shutil

from conftest import tiny

from lgjax.checkpoints import driver, twins
from lgjax.harness.cli import main

TINY = ["--steps", "3", "--batch", "8", "--seeds", "2", "--eval-sequences", "16",
        "--eval-lengths", "12,16", "--no-progress"]


def test_finished_twin_is_found_only_for_the_same_finished_config(tmp_path):
    rc = tiny(steps=4)
    driver.train_run(rc, tmp_path / "a" / "x")
    own = tmp_path / "b" / "y"
    assert twins.finished_twin(tmp_path, rc, own) == (tmp_path / "a" / "x").absolute()
    assert twins.finished_twin(tmp_path, rc, tmp_path / "a" / "x") is None  # itself
    assert twins.finished_twin(tmp_path, dataclasses.replace(
        rc, train=dataclasses.replace(rc.train, lr=2e-3)), own) is None  # another recipe
    longer = dataclasses.replace(rc, train=dataclasses.replace(rc.train, steps=5))
    assert twins.finished_twin(tmp_path, longer, own) is None
    driver.train_run(longer, tmp_path / "c", resume=False)
    (tmp_path / "c" / "5").rename(tmp_path / "c" / "aside")  # unfinished: not a twin
    assert twins.finished_twin(tmp_path, longer, own) is None
    assert not twins.is_started(own) and twins.is_started(tmp_path / "c")


def test_a_grid_program_is_never_read_through_a_twin(tmp_path):
    from lgjax import grid
    from lgjax.harness.study import RunOptions, own_or_twin

    rc = tiny(steps=2)
    g = grid.Grid((rc.task,), rc.model, rc.train)
    grid.train_program(g, tmp_path / "a")
    opts = RunOptions(ckpt_root=str(tmp_path))
    assert twins.finished_twin(tmp_path, g, tmp_path / "b") == (tmp_path / "a").absolute()
    # its study keeps its measurement in its own folder: a program trains under its name
    assert own_or_twin("b", g, opts) == tmp_path / "b" and not (tmp_path / "b").exists()


def test_a_study_reuses_another_study_s_finished_run_and_measures_the_same(tmp_path, capsys):
    """linear's softmax run is prop1's K = 2 run (rope, fixed offset 2, same recipe). Also the
    two experiments' end-to-end runs (tests/test_experiments.py has the others)."""
    ck, alone = tmp_path / "ck", tmp_path / "alone"
    assert main(["prop1", *TINY, "--Ks", "1,2", "--eval-lengths", "12,16,24", "--out",
                 str(tmp_path / "p"), "--ckpt-root", str(ck)]) == 0
    capsys.readouterr()
    res = json.loads((tmp_path / "p" / "results.json").read_text())
    assert res["reduced"] and len(res["K2"]["fits"]) == 2
    assert 0 < res["K1"]["carrier_key_init"][0] < 1
    assert (tmp_path / "p" / "prop1.png").exists()
    assert main(["linear", *TINY, "--out", str(tmp_path / "l"), "--ckpt-root", str(ck)]) == 0
    assert "linear/softmax: the same config as the finished run" in capsys.readouterr().err
    shared = json.loads((tmp_path / "l" / "results.json").read_text())
    twin = (ck / "prop1" / "K2").absolute()
    assert shared["run_dirs"]["linear/softmax"] == str(twin)
    trained = json.loads((tmp_path / "p" / "results.json").read_text())["trained_seconds"]
    assert shared["trained_seconds"]["linear/softmax"] == trained["prop1/K2"]  # what it cost
    link = ck / "linear" / "softmax"  # the name links to the twin: nothing trained for it
    assert link.is_symlink() and link.resolve() == twin.resolve()
    assert (ck / "linear" / "linear").is_dir() and not (ck / "linear" / "linear").is_symlink()
    assert main(["linear", *TINY, "--out", str(tmp_path / "l2"),
                 "--ckpt-root", str(alone)]) == 0
    own = json.loads((tmp_path / "l2" / "results.json").read_text())
    assert set(own) >= {"softmax", "linear"} and len(own["linear"]["carrier_key"]) == 2
    assert own["softmax"] == shared["softmax"] and own["linear"] == shared["linear"]
    # the twin gone, the link is dropped and the run trains itself, to the same numbers
    shutil.rmtree(ck / "prop1")
    assert main(["linear", *TINY, "--out", str(tmp_path / "l3"), "--ckpt-root", str(ck)]) == 0
    assert link.is_dir() and not link.is_symlink()
    again = json.loads((tmp_path / "l3" / "results.json").read_text())
    assert again["softmax"] == shared["softmax"]
