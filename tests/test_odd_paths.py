"""Run directories under any path the file system takes: a folder whose name holds glob
characters (`[`, `]`, `*`, `?`; every `profile --set` names its runs `<encoding>[key=value]`)
trains, resumes, opens and analyses like any other (a --ckpt-root so named:
tests/test_cli.py; a profile's runs: tests/test_profile.py)."""

import chex

from lgjax.checkpoints import driver
from lgjax.runs import open_run
from tests.conftest import tiny


def test_a_run_named_with_brackets_restores_what_it_saved(tmp_path):
    cfg = tiny(steps=4)
    final = driver.train_run(cfg, tmp_path / "ms[x]")
    with open_run(tmp_path / "ms[x]") as run:
        chex.assert_trees_all_equal(run.restore(), final)
        assert [s for s, _ in run.readable_steps()] == [0, 1, 2, 4]
