"""A stop signal (SIGTERM, SIGUSR1) ends training at the next chunk boundary with a committed
checkpoint and exit code 75; `--resume` then finishes bitwise equal to a run never stopped.

The signal is sent at a chunk boundary off the checkpoint schedule (the stop saves a step the
schedule has not, deleted again once the resumed run commits the next scheduled one) and inside
a save (orbax's commit still in flight); and, through the CLI, from outside mid-training.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import chex
import pytest

from lgjax import checkpoints, preemption, train
from lgjax.checkpoints import driver
from lgjax.config import RunConfig
from lgjax.errors import Preempted
from lgjax.runs import open_run
from tests.conftest import tiny

CFG = tiny(steps=12)  # checkpoints at 0, 1, 2, 4, 8, 12; chunk boundaries also at 3, 6, 9
ROOT = str(Path(__file__).parent.parent)

CHILD = """
import os, signal, sys
sys.path.insert(0, {root!r})
from tests.conftest import tiny
from lgjax import preemption
from lgjax.checkpoints import driver, rundir
from lgjax.errors import Preempted

preemption.install()
when, sig = {when!r}, signal.{sig}
def at(step, *_):
    if when == ("boundary", step):
        os.kill(os.getpid(), sig)
if when[0] == "save":
    save = rundir.RunDir.save
    def signalled_save(self, step, states):
        save(self, step, states)  # orbax commits this step in the background
        if step == when[1]:
            os.kill(os.getpid(), sig)
    rundir.RunDir.save = signalled_save
try:
    driver.train_run(tiny(steps=12), {run!r}, resume=True, on_chunk=at)
except Preempted as err:
    print(err, file=sys.stderr)
    sys.exit(err.exit_code)
"""


@pytest.fixture(scope="module")
def runner():
    return train.make_chunk_runner(CFG)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, runner):
    path = tmp_path_factory.mktemp("uninterrupted") / "run"
    driver.train_run(CFG, path, runner=runner)
    return every_step(path)


def every_step(path) -> dict:
    with open_run(path) as run:
        states = dict(run.readable_steps())
        assert not run.damaged
    return states


def stopped(run, when, sig="SIGTERM") -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-c", CHILD.format(root=ROOT, run=str(run), when=when,
                                                              sig=sig)],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == preemption.EXIT_PREEMPTED, proc.stderr[-2000:]
    return proc


@pytest.mark.parametrize("when, sig, saved", [
    (("boundary", 3), "SIGTERM", 3),  # off the schedule: the stop saves step 3
    (("boundary", 4), "SIGUSR1", 4),  # on it: step 4's own save is the stop's
    (("save", 4), "SIGTERM", 4),  # inside step 4's save: its commit is waited for
], ids=["boundary-unscheduled", "boundary-scheduled-usr1", "in-save"])
def test_stopped_then_resumed_equals_uninterrupted(tmp_path, runner, reference, when, sig,
                                                   saved):
    run = tmp_path / "run"
    proc = stopped(run, when, sig)
    assert proc.stderr.strip().splitlines()[-1] == (
        f"stopped by {sig} at step {saved}, checkpoint saved in {run}; rerun with --resume to "
        "continue"), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert checkpoints.step_folders(run)[-1] == saved
    assert not [p.name for p in run.iterdir() if "tmp" in p.name or p.name == "lgjax.lock"]
    at_stop = every_step(run)
    if saved in reference:
        chex.assert_trees_all_equal(at_stop[saved], reference[saved])
    driver.train_run(CFG, run, resume=True, runner=runner)
    finished = every_step(run)
    assert sorted(finished) == sorted(reference)  # the stop's step 3 went once 4 committed
    for step, states in finished.items():
        chex.assert_trees_all_equal(states, reference[step])  # bitwise


def test_a_signal_outside_training_stops_at_once():
    before = {sig: signal.getsignal(sig) for sig in preemption.STOP_SIGNALS}
    preemption.install()
    try:
        with pytest.raises(Preempted, match="stopped by SIGUSR1 outside training"):
            os.kill(os.getpid(), signal.SIGUSR1)
            for _ in range(1000):  # the handler runs between two bytecodes of this thread
                pass
    finally:
        preemption.reset()
        for sig, handler in before.items():
            signal.signal(sig, handler)


def test_deferred_outside_training_the_next_loop_stops_before_it_starts():
    """A job of several processes (and a reproduce worker) defers: a process stopping on its own
    between two exchanges would leave the others blocked in the next one."""
    before = {sig: signal.getsignal(sig) for sig in preemption.STOP_SIGNALS}
    preemption.install(defer=True)
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):
            pass
        assert preemption.requested() == "SIGTERM"
        with pytest.raises(Preempted, match="stopped by SIGTERM before training"):
            with preemption.stoppable():
                raise AssertionError("the loop ran")
    finally:
        preemption.reset()
        for sig, handler in before.items():
            signal.signal(sig, handler)


TINY = ["multiseed", "--encodings", "rope", "--seeds", "2", "--steps", "300", "--batch", "16",
        "--d", "16", "--vocab", "8", "--train-lengths", "4,8", "--eval-lengths", "8,12",
        "--eval-sequences", "64", "--no-progress"]


def test_the_cli_stopped_mid_training_exits_75_and_resumes_bitwise(tmp_path):
    where = ["--ckpt-root", str(tmp_path / "ck"), "--out", str(tmp_path / "out")]
    run = tmp_path / "ck" / "multiseed-K1" / "rope"
    proc = subprocess.Popen([sys.executable, "-m", "lgjax", *TINY, *where],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not (run / "8").is_dir() and proc.poll() is None:
            time.sleep(0.005)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert proc.returncode == 75, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("lgjax multiseed: stopped by SIGTERM at step ") and \
        last.endswith("rerun with --resume to continue (exit 75)"), err[-2000:]
    assert "Traceback" not in err and not (tmp_path / "out" / "results.json").exists()
    stop = checkpoints.step_folders(run)[-1]
    assert 8 <= stop < 300
    resumed = subprocess.run([sys.executable, "-m", "lgjax", *TINY, *where, "--resume"],
                             capture_output=True, text=True, timeout=240)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    cfg = RunConfig.from_json((run / checkpoints.CONFIG_FILE).read_text())
    driver.train_run(cfg, tmp_path / "reference")  # this process: the CLI's one device
    got, want = every_step(run), every_step(tmp_path / "reference")
    assert sorted(got) == sorted(want)
    for step in want:
        chex.assert_trees_all_equal(got[step], want[step])
