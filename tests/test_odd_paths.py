"""Run directories under any path the file system takes: a folder whose name holds glob
characters (`[`, `]`, `*`, `?`; every `profile --set` names its runs `<encoding>[key=value]`)
trains, resumes, opens and analyses like any other."""

import dataclasses
import json

import chex

from lgjax.checkpoints import driver
from lgjax.harness.cli import main
from lgjax.profile import recipes
from lgjax.runs import open_run
from tests.conftest import tiny

TINY = ["multiseed", "--encodings", "rope", "--seeds", "2", "--steps", "8", "--batch", "16",
        "--d", "16", "--vocab", "8", "--train-lengths", "4,8", "--eval-lengths", "8,12",
        "--eval-sequences", "32", "--no-progress"]


def test_a_bracketed_ckpt_root_trains_resumes_opens_and_analyses(tmp_path, capsys):
    root = tmp_path / "ck[a=1]*?"
    argv = [*TINY, "--ckpt-root", str(root), "--out", str(tmp_path / "out")]
    assert main(argv) == 0, capsys.readouterr().err
    assert main([*argv, "--resume"]) == 0, capsys.readouterr().err
    run_dir = root / "multiseed-K1" / "rope"
    with open_run(run_dir) as run:
        assert run.steps()[-1] == 8
        run.restore()
    assert main(["dynamics", str(run_dir), "--lengths", "8,12", "--eval-sequences", "32",
                 "--out", str(tmp_path / "dyn")]) == 0, capsys.readouterr().err


def test_a_run_named_with_brackets_restores_what_it_saved(tmp_path):
    cfg = tiny(steps=4)
    final = driver.train_run(cfg, tmp_path / "ms[x]")
    with open_run(tmp_path / "ms[x]") as run:
        chex.assert_trees_all_equal(run.restore(), final)
        assert [s for s, _ in run.readable_steps()] == [0, 1, 2, 4]


def test_a_profile_with_set_options_trains_resumes_and_its_runs_open(tmp_path, monkeypatch,
                                                                     capsys):
    tiny_recipe = dataclasses.replace(recipes.RECIPES["tiny"], name="quick", rz_tasks=("prev",),
                                      ib_eval=32, rz_eval=32, ib_steps=5, rz_steps=5)
    monkeypatch.setitem(recipes.RECIPES, "quick", tiny_recipe)
    out = tmp_path / "p"
    argv = ["profile", "rope", "--quick", "--set", "base=500", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    first = json.loads((out / "profile.json").read_text())["instruments"]
    assert main(argv) == 0, capsys.readouterr().err  # every run resumed from its final step
    assert json.loads((out / "profile.json").read_text())["instruments"] == first
    run_dir = out / "checkpoints" / "quick" / "multiseed-K1" / "rope[base=500.0]"
    # read where the variant is not registered: config.json says rope, its options beside it
    with open_run(run_dir) as run:
        assert (run.config.model.encoding, run.config.model.enc.base) == ("rope", 500.0)
        run.restore()
    assert main(["dynamics", str(run_dir), "--lengths", "8,12", "--eval-sequences", "32",
                 "--out", str(tmp_path / "dyn")]) == 0, capsys.readouterr().err
    program = out / "checkpoints" / "quick" / "realizability" / "1L1H" / "rope[base=500.0]"
    with open_run(program) as run:  # the realizability grid program, the same way
        assert (run.config.model.encoding, run.config.model.enc.base) == ("rope", 500.0)
        assert int(run.restore().step.reshape(-1)[0]) == tiny_recipe.rz_steps
