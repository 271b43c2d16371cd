"""A job of 2 processes x 2 CPU devices (`lgjax launch`, jax.distributed over localhost).

One job is killed (process 1 dies hard after step 10): the launcher fails with one line, stops
process 0, and the committed checkpoints restore here, in one process, equal to the 1-process
4-device run's. Resumed as a whole, the job finishes equal to that run seed for seed.
"""

import json
import os
import subprocess
import sys

import chex
import jax
import pytest

from lgjax import checkpoints, devices, train
from lgjax.config import ConfigError

TINY = ["multiseed", "--encodings", "rope", "--seeds", "4", "--steps", "12", "--batch", "16",
        "--d", "16", "--vocab", "8", "--train-lengths", "4,8", "--eval-lengths", "8,12",
        "--eval-sequences", "64", "--no-progress"]
LAUNCH = ["launch", "--processes", "2", "--devices-per-process", "2", "--"]
TIMEOUT = 240


def cli(*args, env=None, wait=True):
    cmd = [sys.executable, "-m", "lgjax.cli", *args]
    full_env = {**os.environ, **(env or {})}
    if not wait:
        return subprocess.Popen(cmd, env=full_env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    return subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=TIMEOUT)


def where(tmp_path, name):
    return ["--ckpt-root", str(tmp_path / name / "ck"), "--out", str(tmp_path / name / "out")]


def restore_all(run_dir):
    cfg, run = checkpoints.open_run(run_dir)
    states = {s: run.restore(s) for s in run.steps()}
    run.close()
    return states


def accuracy(tmp_path, name):
    return json.loads((tmp_path / name / "out" / "results.json").read_text())["rope"]["accuracy"]


def test_two_process_job_killed_resumed_equals_one_process(tmp_path):
    four = {"XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
    one = cli(*TINY, *where(tmp_path, "one"), env=four, wait=False)  # runs alongside
    killed = cli(*LAUNCH, *TINY, *where(tmp_path, "two"), env={train.EXIT_ENV: "10@1"})
    out, err = one.communicate(timeout=TIMEOUT)
    assert one.returncode == 0, err[-2000:]
    assert killed.returncode == 1, killed.stderr[-2000:]
    last = killed.stderr.strip().splitlines()[-1]
    assert last.startswith("lgjax launch: process 1 of 2 exited with code 17; stopped the "
                           "others"), last
    run_dir = tmp_path / "two" / "ck" / "multiseed-K1" / "rope"
    reference = restore_all(tmp_path / "one" / "ck" / "multiseed-K1" / "rope")
    committed = restore_all(run_dir)  # in this process: one process, one device
    assert 0 < max(committed) < 12 and set(committed) <= set(reference)
    for step, states in committed.items():
        chex.assert_trees_all_close(states, reference[step], atol=1e-6)

    resumed = cli(*LAUNCH, *TINY, *where(tmp_path, "two"), "--resume")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    finished = restore_all(run_dir)
    assert sorted(finished) == sorted(reference)
    for step, states in finished.items():
        chex.assert_trees_all_close(states, reference[step], atol=1e-6)
    assert accuracy(tmp_path, "two") == accuracy(tmp_path, "one")
    assert "selected offset" in resumed.stdout  # process 0 printed the table, once
    assert resumed.stdout.count("wrote ") == 1
    for f in ("results.csv", "multiseed.png"):
        assert (tmp_path / "two" / "out" / f).stat().st_size > 0


def test_launch_needs_a_command(capsys):
    from lgjax.cli import main

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


def test_one_process_helpers_are_plain():
    assert devices.map_seeds(lambda s: {"seed": s}, 3) == [{"seed": 0}, {"seed": 1}, {"seed": 2}]
    x = jax.numpy.arange(4)
    assert devices.to_host(x) is x and int(devices.first_local(x + 5)) == 5
