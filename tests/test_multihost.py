"""A job of 2 processes x 2 CPU devices (`lgjax launch`, jax.distributed over localhost).

Process 1 of a job is killed from outside (SIGKILL) once step 4 is committed: the launcher
fails with one line and stops process 0, and every committed checkpoint restores here, in one
process, equal to the 1-process 4-device run's. Resumed, then stopped by SIGTERM to the launcher
(every process saves and exits 75), then resumed again, the job finishes equal to that run seed
for seed (params to 1e-6, accuracies identical).
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import chex
import jax
import pytest

from lgjax import devices
from lgjax.config import ConfigError
from lgjax.runs import open_run
from tests.conftest import xla_flags

STEPS = 200  # checkpoints 0, 1, 2, 4, ..., 64, 125, 200: time to kill one mid-run
TINY = ["multiseed", "--encodings", "rope", "--seeds", "4", "--steps", str(STEPS), "--batch",
        "16", "--d", "16", "--vocab", "8", "--train-lengths", "4,8", "--eval-lengths", "8,12",
        "--eval-sequences", "64", "--no-progress"]
LAUNCH = ["launch", "--processes", "2", "--devices-per-process", "2", "--"]
TIMEOUT = 240
SLOW_EXIT_1 = {"PYTHONPATH": os.pathsep.join(filter(None, [
    str(Path(__file__).parent / "data" / "slow_exit"), os.environ.get("PYTHONPATH")]))}


def cli(*args, env=None):
    return subprocess.Popen([sys.executable, "-m", "lgjax", *args],
                            env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc) -> tuple[str, str]:
    out, err = proc.communicate(timeout=TIMEOUT)
    return out, err


def where(tmp_path, name):
    return ["--ckpt-root", str(tmp_path / name / "ck"), "--out", str(tmp_path / name / "out")]


def restore_all(run_dir):
    run = open_run(run_dir)
    with run:
        return dict(run.readable_steps())


def accuracy(tmp_path, name):
    return json.loads((tmp_path / name / "out" / "results.json").read_text())["rope"]["accuracy"]


def kill_process_1_after(job, step_dir) -> str:
    """SIGKILL the job's process 1 once step_dir is committed; the launcher's first line."""
    first = job.stderr.readline()
    while not first.startswith("lgjax launch:"):
        first = job.stderr.readline()
    pids = [int(p) for p in re.search(r"pids ([\d ]+)", first)[1].split()]
    deadline = time.monotonic() + TIMEOUT
    while not step_dir.is_dir() and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert job.poll() is None, f"the job ended before {step_dir} was committed: " + (
        first + job.stderr.read())[-3000:]
    os.kill(pids[1], signal.SIGKILL)
    return first


def test_a_job_whose_command_refuses_its_input_exits_2_naming_the_field(tmp_path):
    """Every process refuses the odd RoPE width before anything starts: the launcher stops
    the job and exits 2, as the command alone would, with the command's line shown."""
    job = cli(*LAUNCH, *TINY, "--d", "15", *where(tmp_path, "bad"))
    _, err = finish(job)
    assert job.returncode == 2, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert "exited with code 2" in last and "model.d" in err, err[-2000:]
    assert not (tmp_path / "bad").exists()


@pytest.mark.jobs
def test_two_process_job_killed_resumed_equals_one_process(tmp_path):
    four = xla_flags(4)
    one = cli(*TINY, *where(tmp_path, "one"), env=four)  # runs alongside
    run_dir = tmp_path / "two" / "ck" / "multiseed-K1" / "rope"
    job = cli(*LAUNCH, *TINY, *where(tmp_path, "two"))
    kill_process_1_after(job, run_dir / "4")
    _, err = finish(job)
    assert job.returncode == 1, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("lgjax launch: process 1 of 2 was killed by SIGKILL; stopped the "
                           "others"), last
    _, err = finish(one)
    assert one.returncode == 0, err[-2000:]
    reference = restore_all(tmp_path / "one" / "ck" / "multiseed-K1" / "rope")
    committed = restore_all(run_dir)  # in this process: one process, one device, verified
    assert 4 <= max(committed) < STEPS and set(committed) <= set(reference)
    for step, states in committed.items():
        chex.assert_trees_all_close(states, reference[step], atol=1e-6)

    # resumed, then stopped: SIGTERM to the launcher reaches every process, which all commit a
    # checkpoint at one chunk boundary and exit 75, as the launcher does; process 1 leaves 1 s
    # after process 0, which hosts the coordination service (it aborted when still connected)
    stopped = cli(*LAUNCH, *TINY, *where(tmp_path, "two"), "--resume", env=SLOW_EXIT_1)
    next_step = min(s for s in reference if s > max(committed))
    deadline = time.monotonic() + TIMEOUT
    while not (run_dir / str(next_step)).is_dir() and stopped.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.005)
    stopped.send_signal(signal.SIGTERM)
    _, err = finish(stopped)
    assert stopped.returncode == 75, err[-2000:]
    assert err.strip().splitlines()[-1] == (
        "lgjax launch: every process stopped on a signal with its checkpoint committed; rerun "
        "with --resume to continue"), err[-2000:]
    assert "lgjax multiseed: stopped by SIGTERM at step " in err and "Traceback" not in err
    assert next_step <= max(restore_all(run_dir)) < STEPS

    resumed = cli(*LAUNCH, *TINY, *where(tmp_path, "two"), "--resume")
    out, err = finish(resumed)
    assert resumed.returncode == 0, err[-2000:]
    finished = restore_all(run_dir)
    assert sorted(finished) == sorted(reference)
    for step, states in finished.items():
        chex.assert_trees_all_close(states, reference[step], atol=1e-6)
    assert accuracy(tmp_path, "two") == accuracy(tmp_path, "one")
    assert "selected offset" in out and out.count("wrote ") == 1  # process 0 printed, once
    for f in ("results.csv", "multiseed.png"):
        assert (tmp_path / "two" / "out" / f).stat().st_size > 0


def test_launch_needs_a_command(capsys):
    from lgjax.harness.cli import main

    assert main(["launch", "--processes", "2"]) == 2
    assert "after --" in capsys.readouterr().err


def test_every_process_must_hold_a_block_of_seeds():
    assert devices._per_process_count(8, None, procs=2, local=2) == 2
    assert devices._per_process_count(6, None, procs=2, local=2) == 1  # 2 devices of 4
    assert devices._per_process_count(8, 4, procs=2, local=4) == 2
    with pytest.raises(ConfigError, match="--seeds: 1 seeds cannot be split"):
        devices._per_process_count(1, None, procs=2, local=2)
    with pytest.raises(ConfigError, match="--devices: 3 devices cannot be taken evenly"):
        devices._per_process_count(6, 3, procs=2, local=2)
    assert devices._per_process_count(6, None, procs=1, local=4) == 3  # one process
    with pytest.raises(ConfigError, match="--devices: asked for 8 but only 4 "):
        devices._per_process_count(8, 8, procs=1, local=4)


def test_one_process_helpers_are_plain():
    assert devices.map_seeds(lambda s: {"seed": s}, 3) == [{"seed": 0}, {"seed": 1}, {"seed": 2}]
    x = jax.numpy.arange(4)
    assert devices.to_host(x) is x and int(devices.first_local(x + 5)) == 5


GRID = ["realizability-train", "--tiers", "1L1H", "--encodings", "rope", "--tasks", "prev,skip-2",
        "--seeds", "2", "--steps", "60", "--chunk", "10", "--ckpt-every", "10", "--d", "8",
        "--vocab", "6", "--L0", "6", "--test-lengths", "8", "--batch", "8",
        "--eval-sequences", "16", "--no-progress"]


@pytest.mark.jobs
def test_grid_program_over_two_processes_killed_resumed_equals_one_process(tmp_path):
    """The grid's 2 tasks x 2 seeds split over 2 processes x 2 devices like seeds: each process
    saves its block; killed and resumed, the program ends as the one-process run does."""
    four = xla_flags(4)
    one = cli(*GRID, *where(tmp_path, "one"), env=four)
    program = ("realizability", "1L1H", "rope")
    run_dir = tmp_path.joinpath("two", "ck", *program)
    job = cli(*LAUNCH, *GRID, *where(tmp_path, "two"))
    kill_process_1_after(job, run_dir / "10")
    _, err = finish(job)
    assert job.returncode == 1, err[-2000:]
    assert not (run_dir / "results.json").exists()
    _, err = finish(one)
    assert one.returncode == 0, err[-2000:]
    resumed = cli(*LAUNCH, *GRID, *where(tmp_path, "two"), "--resume")
    _, err = finish(resumed)
    assert resumed.returncode == 0, err[-2000:]
    reference = restore_all(tmp_path.joinpath("one", "ck", *program))
    finished = restore_all(run_dir)
    assert sorted(finished) == sorted(reference) == [50, 60]  # the last two are kept
    for step, states in finished.items():
        chex.assert_trees_all_close(states, reference[step], atol=1e-6)
    got, want = (json.loads(tmp_path.joinpath(name, "ck", *program, "results.json").read_text())
                 for name in ("two", "one"))
    for field in ("train_acc", "lg", "acc_all", "seeds", "tasks"):
        assert got[field] == want[field], field

