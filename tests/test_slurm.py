"""Jobs under a real Slurm (`.ci/slurm.sh start`: one node, its CPUs, task/affinity binding).

Each task joins the job through JAX's Slurm detection (LGJAX_DISTRIBUTED=1 and nothing else)
and makes one CPU device per CPU it was given. A 2-task `multiseed` with one task SIGKILLed
and the job rerun with `--resume` ends bitwise equal to one process with the same 2 devices; a
grid program submitted with experiments/slurm/cpu.sbatch and sent SIGUSR1 (what
`--signal=USR1@N` sends before the time limit) stops with its checkpoint, is requeued by the
script and finishes equal to one process; `reproduce` runs under `srun -n 2`.

Run by .ci/run in a pass of their own (`-m slurm`). Without srun they are skipped, except under
CI, where a missing Slurm fails.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import chex
import numpy as np
import pytest

from lgjax import checkpoints
from tests.conftest import xla_flags

pytestmark = [pytest.mark.slurm]
if shutil.which("srun") is None and not os.environ.get("CI"):
    pytestmark.append(pytest.mark.skip(reason="no srun here (`.ci/slurm.sh start` sets up a "
                                              "one-node Slurm)"))

TIMEOUT = 240
ROOT = Path(__file__).parent.parent
LGJAX = [sys.executable, "-m", "lgjax"]


def task_env() -> dict:
    """The tasks' environment: the job from Slurm's variables, devices from each task's CPUs."""
    env = {k: v for k, v in os.environ.items() if k != "LGJAX_CPU_DEVICES"}
    return {**env, "LGJAX_DISTRIBUTED": "1",
            "PATH": f"{Path(sys.executable).parent}:{env.get('PATH', '')}"}


@pytest.fixture(scope="module", autouse=True)
def scheduler():
    """Slurm answers (under CI: must)."""
    assert shutil.which("srun"), "CI=true but srun is missing: .ci/slurm.sh start did not run"
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%T %c"], capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 0 and out.stdout.split()[:1] == ["idle"], (
        f"Slurm's node is not idle (is SLURM_CONF={os.environ.get('SLURM_CONF')} the config of "
        f"a running .ci/slurm.sh?): {out.stdout} {out.stderr}")
    return int(out.stdout.split()[1])


def where(tmp_path, name):
    return ["--ckpt-root", str(tmp_path / name / "ck"), "--out", str(tmp_path / name / "out")]


def every_step(run_dir, reader=None) -> dict:
    from lgjax.runs import open_run

    with (reader or open_run(run_dir)) as run:
        states = dict(run.readable_steps())
        assert not run.damaged, run.damaged
    return states


def assert_bitwise(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    for step in want:
        chex.assert_trees_all_equal(got[step], want[step])


def test_each_task_gets_one_device_per_cpu_it_was_given():
    """Bound to its core (task/affinity) or not (--cpu-bind=none: every task sees the node's
    CPUs), a task of `srun -n 2 [-c 1]` on this node makes one CPU device."""
    probe = ("from lgjax.runtime import split_cpu_into_devices, maybe_initialize_distributed; "
             "split_cpu_into_devices(); maybe_initialize_distributed(); import jax; "
             "print(jax.process_index(), jax.local_device_count(), jax.device_count())")
    for extra in ([], ["-c", "1"], ["--cpu-bind=none"], ["--cpu-bind=none", "-c", "1"]):
        out = subprocess.run(["srun", "-n", "2", *extra, sys.executable, "-c", probe],
                             env=task_env(), capture_output=True, text=True, timeout=TIMEOUT)
        assert out.returncode == 0, out.stderr[-2000:]
        assert sorted(out.stdout.split("\n")[:2]) == ["0 1 2", "1 1 2"], (extra, out.stdout)


TINY = ["multiseed", "--encodings", "rope", "--seeds", "4", "--steps", "100", "--batch", "16",
        "--d", "16", "--vocab", "8", "--train-lengths", "4,8", "--eval-lengths", "8,12",
        "--eval-sequences", "64", "--no-progress"]


def task_pid(tmp_path, rank: int) -> int | None:
    """The pid of the job's task `rank` (an lgjax process whose command names tmp_path)."""
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes()
            env = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if proc.name.isdigit() and str(tmp_path).encode() in cmd and b"lgjax" in cmd \
                and f"SLURM_PROCID={rank}".encode() in env:
            return int(proc.name)
    return None


def test_two_tasks_one_killed_resumed_equal_one_process(tmp_path):
    one = subprocess.Popen([*LGJAX, *TINY, *where(tmp_path, "one")], env=xla_flags(2),
                           stderr=subprocess.PIPE, text=True)
    run_dir = tmp_path / "two" / "ck" / "multiseed-K1" / "rope"
    job = subprocess.Popen(["srun", "-n", "2", "-c", "1", "--kill-on-bad-exit=1", *LGJAX, *TINY,
                            *where(tmp_path, "two")],
                           env=task_env(), stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + TIMEOUT
    while not (run_dir / "4").is_dir() and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    pid = task_pid(tmp_path / "two", 1)
    assert pid is not None and job.poll() is None, "task 1 not found running"
    os.kill(pid, signal.SIGKILL)
    _, err = job.communicate(timeout=TIMEOUT)
    assert job.returncode != 0 and "task 1" in err, err[-2000:]
    assert one.wait(TIMEOUT) == 0, one.stderr.read()[-2000:]
    reference = every_step(tmp_path / "one" / "ck" / "multiseed-K1" / "rope")
    committed = every_step(run_dir)
    assert 4 <= max(committed) < 100
    assert_bitwise(committed, {s: reference[s] for s in committed})

    resumed = subprocess.run(["srun", "-n", "2", "-c", "1", *LGJAX, *TINY,
                              *where(tmp_path, "two"), "--resume"],
                             env=task_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert_bitwise(every_step(run_dir), reference)
    got, want = (json.loads((tmp_path / name / "out" / "results.json").read_text())["rope"]
                 for name in ("two", "one"))
    assert got["accuracy"] == want["accuracy"]
    assert resumed.stdout.count("wrote ") == 1  # task 0 alone printed


GRID = ["realizability-train", "--tiers", "1L1H", "--encodings", "rope", "--tasks", "prev,skip-2",
        "--seeds", "2", "--steps", "80", "--chunk", "10", "--ckpt-every", "20", "--d", "8",
        "--vocab", "6", "--L0", "6", "--test-lengths", "8", "--batch", "8",
        "--eval-sequences", "16", "--no-progress"]


def job_state(job_id: str) -> dict:
    out = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True,
                         text=True, timeout=30)
    return dict(re.findall(r"(\w+)=(\S*)", out.stdout))


def test_sbatch_recipe_stopped_by_usr1_requeues_and_finishes_equal_uninterrupted(tmp_path):
    """The reference is the same 2-task job never stopped: one process with 2 devices differs
    from it in the last bit (~1e-7: XLA's CPU devices in one process share its threads), which
    tests/test_multihost.py bounds."""
    from lgjax import grid, train

    one = subprocess.run(["srun", "-n", "2", "-c", "1", "--kill-on-bad-exit=1", *LGJAX, *GRID,
                          *where(tmp_path, "one")],
                         env=task_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert one.returncode == 0, one.stderr[-2000:]
    log = tmp_path / "job.log"
    submitted = subprocess.run(
        ["sbatch", "--parsable", "--nodes=1", "--ntasks-per-node=2", "--cpus-per-task=1",
         "--time=10", f"--output={log}", f"--chdir={ROOT}",
         str(ROOT / "experiments" / "slurm" / "cpu.sbatch"), *GRID, *where(tmp_path, "two")],
        env=task_env(), capture_output=True, text=True, timeout=30)
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip().split(";")[0]
    program = tmp_path.joinpath("two", "ck", "realizability", "1L1H", "rope")
    deadline = time.monotonic() + TIMEOUT
    state = {}
    try:
        while not (program / "20").is_dir() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert (program / "20").is_dir(), log.read_text()[-2000:] if log.exists() else job_state(
            job_id)
        # what --signal=USR1@N sends before the time limit: the tasks, not the batch script
        subprocess.run(["scancel", "--signal=USR1", job_id], check=True, timeout=30)
        while time.monotonic() < deadline:
            state = job_state(job_id)
            if state.get("JobState") in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                                         "NODE_FAIL", "OUT_OF_MEMORY"):
                break
            time.sleep(0.2)
    finally:
        if state.get("JobState") not in ("COMPLETED", "FAILED", "CANCELLED"):
            subprocess.run(["scancel", job_id], timeout=30)
    text = log.read_text()
    assert state.get("JobState") == "COMPLETED" and state.get("Restarts") == "1", (state,
                                                                                  text[-3000:])
    assert "stopped by SIGUSR1 at step " in text and "exit code 75" in text \
        and "requeueing job" in text and "Traceback" not in text, text[-3000:]

    def states(run_dir):
        g = checkpoints.read_config(run_dir, grid.Grid)
        return every_step(run_dir, checkpoints.RunDir(
            run_dir, g, readonly=True,
            template=train.abstract_states(g.cell_config(0), int(np.prod(g.shape)))))

    reference = tmp_path.joinpath("one", "ck", "realizability", "1L1H", "rope")
    assert_bitwise(states(program), states(reference))  # the last two steps: 60, 80
    got, want = (json.loads((p / "results.json").read_text()) for p in (program, reference))
    for field in ("train_acc", "lg", "acc_all", "seeds", "tasks"):
        assert got[field] == want[field], field


def test_reproduce_runs_as_a_two_task_job(tmp_path):
    """`reproduce` under srun: one report, written by task 0, the lab's claims measured."""
    out = subprocess.run(["srun", "-n", "2", *LGJAX, "reproduce", "contract", "--quick",
                          "--only", "contract-lab", *where(tmp_path, "r")],
                         env=task_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("wrote ") == 1, out.stdout[-2000:]
    report = json.loads((tmp_path / "r" / "out" / "report.json").read_text())
    assert report, "empty report"


def test_profile_under_srun_refuses_in_one_line_before_any_work(tmp_path):
    out = subprocess.run(["srun", "-n", "2", *LGJAX, "profile", "rope", "--quick", "--out",
                          str(tmp_path / "p")], env=task_env(), capture_output=True, text=True,
                         timeout=TIMEOUT)
    assert out.returncode != 0
    lines = [x for x in out.stderr.splitlines() if x.startswith("lgjax profile:")]
    assert len(lines) == 2 and "profile runs in one process, not a job of 2" in lines[0], \
        out.stderr[-2000:]  # one line per task
    assert "Traceback" not in out.stderr and not (tmp_path / "p").exists()
