"""metrics.jsonl and the TensorBoard scalars as a run trains, across a kill and --resume;
`lgjax.open_run` on a finished and on a live run; `lgjax curves`."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import lgjax
from lgjax import grid, train
from lgjax.checkpoints import CheckpointError, driver, metrics
from lgjax.config import ModelConfig, TrainConfig
from lgjax.harness.cli import main
from lgjax.studies.implicit_bias import dynamics
from tests.conftest import start_training, tiny, wait_for_step
from tests.test_grid import TASKS

CFG = tiny(steps=12)  # boundaries 1, 2, 3, 4, 6, 8, 9, 12; checkpoints 0, 1, 2, 4, 8, 12
BOUNDARIES = [1, 2, 3, 4, 6, 8, 9, 12]


class Killed(Exception):
    pass


@pytest.fixture(scope="module")
def runner():
    return train.make_chunk_runner(CFG)


def recorder(kill_at=None):
    """An on_chunk hook that keeps each boundary's losses; raises Killed at `kill_at` (after
    the driver saved that step, if it is one)."""
    seen = {}

    def hook(step, states, loss_S):
        if loss_S is not None:
            seen[step] = np.asarray(loss_S).tolist()
        if step == kill_at:
            raise Killed

    return seen, hook


def losses(rows, key="seed"):
    """{step: [loss of each seed or cell, in order]}; fails on a duplicate row."""
    out = {}
    for r in rows:
        out.setdefault(r["step"], {})
        assert r[key] not in out[r["step"]], f"duplicate row {r}"
        out[r["step"]][r[key]] = r["loss"]
    return {s: [v[k] for k in sorted(v)] for s, v in out.items()}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, runner):
    path = tmp_path_factory.mktemp("full") / "run"
    seen, hook = recorder()
    driver.train_run(CFG, path, runner=runner, on_chunk=hook)
    return path, seen


def test_rows_are_the_losses_the_trainer_computed(uninterrupted):
    path, seen = uninterrupted
    rows = metrics.read_rows(path)
    assert sorted(seen) == BOUNDARIES
    assert losses(rows) == seen  # the very numbers the progress bar shows
    assert [r["step"] for r in rows] == [s for s in BOUNDARIES for _ in CFG.train.seeds]
    assert all(r["param_norm"] > 0 and r["diverged"] is False for r in rows)


@pytest.fixture(scope="module")
def killed_and_resumed(tmp_path_factory, runner):
    path = tmp_path_factory.mktemp("killed") / "run"
    first, hook = recorder(kill_at=9)  # 9 is no checkpoint: its rows are past the restored 8
    with pytest.raises(Killed):
        driver.train_run(CFG, path, runner=runner, on_chunk=hook)
    assert 9 in losses(metrics.read_rows(path))
    with open(path / metrics.METRICS_FILE, "a") as f:
        f.write('{"step": 12, "seed": 0, "lo')  # a row cut short by a kill
    second, hook = recorder()
    driver.train_run(CFG, path, resume=True, runner=runner, on_chunk=hook)
    assert sorted(second) == [9, 12]  # only what the checkpoints lacked was trained again
    return path, {**{s: v for s, v in first.items() if s <= 8}, **second}


def test_kill_and_resume_leave_one_row_per_boundary_and_seed(killed_and_resumed,
                                                            uninterrupted):
    path, seen = killed_and_resumed
    rows = metrics.read_rows(path)
    assert [(r["step"], r["seed"]) for r in rows] == [(s, k) for s in BOUNDARIES
                                                     for k in CFG.train.seeds]
    assert losses(rows) == seen
    assert losses(rows) == losses(metrics.read_rows(uninterrupted[0]))  # resume is bitwise


def test_grid_rows_per_cell_survive_a_kill(tmp_path):
    t = TrainConfig(steps=12, batch=8, lmin=8, lmax=8, seeds=(0, 1), chunk=3, ckpt_every=6)
    g = grid.Grid(TASKS[:2], ModelConfig(encoding="rope", d=16, query="all"), t)  # saves 6, 12
    first, hook = recorder(kill_at=9)
    with pytest.raises(Killed):
        grid.train_program(g, tmp_path, on_chunk=hook)
    second, hook = recorder()
    grid.train_program(g, tmp_path, resume=True, on_chunk=hook)
    rows = metrics.read_rows(tmp_path)
    assert losses(rows, "cell") == {**{s: v for s, v in first.items() if s <= 6}, **second}
    assert sorted(second) == [9, 12] and sorted(losses(rows, "cell")) == [3, 6, 9, 12]
    assert {(r["cell"], r["task"], r["seed"]) for r in rows} == {
        (c, name.rsplit(" seed ", 1)[0], c % 2) for c, name in enumerate(grid.cell_names(g))}


def scalars(folder, tag):
    acc = EventAccumulator(str(folder))
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def test_tensorboard_reads_each_step_once_after_a_kill(killed_and_resumed):
    path, seen = killed_and_resumed
    assert sorted(p.name for p in (path / "tb").iterdir()) == ["seed-0", "seed-1"]
    for i, seed in enumerate(CFG.train.seeds):
        got = scalars(path / "tb" / f"seed-{seed}", "train/loss")
        # TensorBoard hides what the killed session logged past the restored step
        assert [s for s, _ in got] == BOUNDARIES
        assert [v for _, v in got] == [np.float32(seen[s][i]) for s in BOUNDARIES]


def test_event_flush_hands_the_scalars_to_the_os_without_syncing(tmp_path, monkeypatch):
    """What flush() returns after is readable (a kill keeps it); the per-checkpoint fsync, most
    of the log's cost under IO load, is left to close()."""
    from lgjax.checkpoints import events

    folders = events.EventFolders(tmp_path)
    folders.add("seed-0", "train/loss", 0.5, 3)

    def no_sync(fd):
        raise AssertionError("flush() synced the event file")

    with monkeypatch.context() as m:
        m.setattr(os, "fsync", no_sync)
        folders.flush()
        assert scalars(tmp_path / "seed-0", "train/loss") == [(3, 0.5)]
    folders.close()


def test_open_run_reads_a_live_run_then_the_finished_one(tmp_path, capsys):
    path = tmp_path / "run"
    release = tmp_path / "release"  # the run waits at step 4 until the test has read it live
    proc = start_training(path, steps=12, hold=release)
    try:
        wait_for_step(proc, path, 4)
        assert proc.poll() is None, "the run finished before it could be read live"
        holder = (path / "lgjax.lock").read_text()
        with lgjax.open_run(path) as run:  # no lock taken: the writer keeps its own
            assert run.config == CFG and {0, 1, 2, 4} <= set(run.steps())
            assert int(run.restore(4).step[0]) == 4
            cols = run.metrics()
            assert set(cols["step"]) <= set(BOUNDARIES) and 4 in cols["step"]
        assert (path / "lgjax.lock").read_text() == holder and proc.poll() is None
    finally:
        release.touch()
        proc.wait(timeout=240)
    assert proc.returncode == 0
    run = lgjax.open_run(path)
    assert run.steps() == [0, 1, 2, 4, 8, 12]
    cols = run.metrics()
    assert list(cols["step"]) == [s for s in BOUNDARIES for _ in range(2)]
    assert cols["loss"].dtype == float and list(cols["seed"][:2]) == [0, 1]
    with pytest.raises(CheckpointError, match="lgjax dynamics"):
        run.dynamics()
    run.close()
    dynamics.main(dynamics.Config(str(path), lengths=(8,), eval_sequences=16))
    capsys.readouterr()
    with lgjax.open_run(path) as run:
        dyn = run.dynamics()
    assert set(dyn["step"]) == {0, 1, 2, 4, 8, 12} and "accuracy@8" in set(dyn["metric"])
    acc = dyn["value"][(dyn["metric"] == "accuracy@8") & (dyn["seed"] == 1)]
    assert [v for _, v in scalars(path / "tb" / "seed-1", "dynamics/accuracy/L8")] == \
        [np.float32(v) for v in acc]  # beside the training scalars, in the seed's folder
    dynamics.main(dynamics.Config(str(path), lengths=(8,), eval_sequences=16))  # again:
    assert len(scalars(path / "tb" / "seed-1", "dynamics/accuracy/L8")) == 6  # replaced


def test_curves_draws_runs_and_refuses_a_folder_without_metrics(uninterrupted, tmp_path,
                                                                capsys):
    fig = tmp_path / "fig" / "curves.png"
    assert main(["curves", str(uninterrupted[0].parent), "--out", str(fig)]) == 0
    out = capsys.readouterr().out
    assert "2 curves, steps 1..12" in out and fig.stat().st_size > 10_000
    assert main(["curves", str(tmp_path / "fig"), "--out", str(fig)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds no metrics.jsonl" in err[0]
    assert main(["curves", str(uninterrupted[0]), "--out", str(tmp_path / "c.jpg")]) == 2
    assert "--out" in capsys.readouterr().err


def test_a_damaged_line_is_named_and_only_a_last_line_cut_short_is_skipped(uninterrupted,
                                                                          tmp_path, capsys):
    """A last line cut short is a run still writing (skipped); any other line that is not a
    row is damage: curves (and every reader) names the file and the line instead of drawing a
    curve with a step silently missing."""
    lines = (uninterrupted[0] / metrics.METRICS_FILE).read_text().splitlines()
    run = tmp_path / "run"
    run.mkdir()
    path = run / metrics.METRICS_FILE
    path.write_text("\n".join(lines) + "\n" + lines[-1][:15])
    assert len(metrics.read_rows(run)) == len(lines)
    for damaged in (lines[3][:15], "[1, 2]", '{"seed": 0}'):  # cut, not an object, no step
        path.write_text("\n".join([*lines[:3], damaged, *lines[3:]]) + "\n")
        with pytest.raises(CheckpointError, match=f"{path}: line 4 is not a metrics row"):
            metrics.read_rows(run)
    # a row that parses but lacks a field, or holds one of the wrong type
    row, full = json.loads(lines[3]), tmp_path / "full"
    shutil.copytree(uninterrupted[0], full)
    for field, value, says in (("loss", "0.5", "'loss' is '0.5', not a number"),
                               ("seed", None, "no 'seed'"),
                               ("step", 2.5, "'step' is 2.5, not an integer >= 0"),
                               ("diverged", "no", "'diverged' is 'no', not true or false")):
        bad = {k: v for k, v in row.items() if k != field} | (
            {} if value is None else {field: value})
        path.write_text("\n".join([*lines[:3], json.dumps(bad), *lines[4:]]) + "\n")
        with pytest.raises(CheckpointError, match=f"line 4 is not a metrics row .*{says}"):
            metrics.read_rows(run)
        assert main(["curves", str(run), "--out", str(tmp_path / "c.png")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and says in err[0] and str(path) in err[0], err
        with lgjax.open_run(full) as reader, pytest.raises(CheckpointError, match=says):
            shutil.copy(path, full / metrics.METRICS_FILE)
            reader.metrics()  # the Python API: lgjax's own error, the same line
    path.write_text("\n".join([*lines, "[1, 2]"]) + "\n")  # a whole last line that is no row
    with pytest.raises(CheckpointError, match=f"line {len(lines) + 1} "):
        metrics.read_rows(run)
    assert main(["curves", str(run), "--out", str(tmp_path / "c.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a metrics row" in err[0], err
    assert not (tmp_path / "c.png").exists()


def test_a_run_resumed_within_the_second_of_its_kill_sorts_after_it(tmp_path, monkeypatch):
    """TensorBoard reads a folder's files in name order; tensorboardX stamps a file name with
    whole seconds, and what followed (pid, uuid) sorted the resumed file first half the time:
    the killed file's steps, read second, then hid the resumed steps past them."""
    import types

    import tensorboardX.event_file_writer as efw

    from lgjax.checkpoints import events

    monkeypatch.setattr(efw.time, "time", lambda: 1_800_000_000.5)  # one second for both
    hexes = iter(["ffffff", "000000"])  # the resumed writer's uuid sorts first
    monkeypatch.setattr(events.uuid, "uuid4", lambda: types.SimpleNamespace(hex=next(hexes)))
    killed = events.EventFolders(tmp_path)
    for step in (1, 2, 4, 8, 9):
        killed.add("seed-0", "train/loss", 1.0 / step, step)
    killed.flush()  # killed here: never closed
    resumed = events.EventFolders(tmp_path, purge_step=9)
    for step in (9, 12):
        resumed.add("seed-0", "train/loss", 2.0 / step, step)
    resumed.close()
    monkeypatch.undo()
    assert scalars(tmp_path / "seed-0", "train/loss") == [
        (1, 1.0), (2, 0.5), (4, 0.25), (8, 0.125), (9, np.float32(2 / 9)), (12, np.float32(1 / 6))]


def test_event_files_never_import_torch(tmp_path):
    """tensorboardX's package imports torch when installed (1.4 s: the bench extra has it) only
    to accept torch tensors: a stand-in torch that records its import stays unimported while
    events are written, and importable after."""
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "import os\nopen(os.environ['TORCH_MARK'], 'w').close()\nclass Tensor: pass\n")
    mark = tmp_path / "torch-imported"
    code = ("import sys\nfrom pathlib import Path\nfrom lgjax.checkpoints import events\n"
            f"ev = events.EventFolders(Path({str(tmp_path / 'tb')!r}), purge_step=1)\n"
            "ev.add('seed-0', 'train/loss', 0.5, 1)\nev.close()\n"
            f"assert not Path({str(mark)!r}).exists(), 'events imported torch'\n"
            "assert 'torch' not in sys.modules\n"
            "import torch\n"
            f"assert Path({str(mark)!r}).exists()\n")
    env = {**os.environ, "TORCH_MARK": str(mark),
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), os.getcwd()])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert scalars(tmp_path / "tb" / "seed-0", "train/loss") == [(1, 0.5)]


def test_resume_names_a_damaged_row_it_drops(uninterrupted, runner, tmp_path, capsys):
    """A damaged middle row cannot be kept (its chunk's loss is in no checkpoint): resume drops
    it and says so in one line; the rows before the step it restores from are kept as they
    were, those after it written again."""
    run = tmp_path / "run"
    shutil.copytree(uninterrupted[0], run)
    shutil.rmtree(run / "12")  # resume from step 8
    path = run / metrics.METRICS_FILE
    lines = path.read_text().splitlines()
    lines[3] = lines[3].replace('"loss": ', '"loss": "') .replace(', "param_norm"',
                                                                  '", "param_norm"')
    path.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    driver.train_run(CFG, run, resume=True, runner=runner)
    err = capsys.readouterr().err.strip().splitlines()
    assert [e for e in err if "line 4 is not a metrics row (damaged: 'loss' is" in e
            and "dropped on resume" in e and str(path) in e], err
    want = [json.loads(x) for i, x in enumerate(uninterrupted[0].joinpath(
        metrics.METRICS_FILE).read_text().splitlines()) if i != 3]
    assert metrics.read_rows(run) == want
