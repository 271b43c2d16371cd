"""Jobs under a real Slurm (`.ci/slurm.sh start`: one node, its CPUs, task/affinity binding).

Each task joins the job through JAX's Slurm detection (LGJAX_DISTRIBUTED=1 and nothing else)
and makes one CPU device per CPU it was given. A 2-task `multiseed` with one task SIGKILLed,
then submitted with experiments/slurm/cpu.sbatch and sent SIGUSR1 (stopped, saved, requeued by
the script), ends bitwise equal to one process with the same 2 devices; a grid program runs over
2 tasks; `profile` refuses a job of several processes in one line.

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
    """Bound to its core (task/affinity, `-c 1`) or not (--cpu-bind=none: every task sees the
    node's CPUs; its share is SLURM_CPUS_ON_NODE over the tasks), a task of `srun -n 2` on this
    2-CPU node makes one CPU device."""
    probe = ("from lgjax.runtime import split_cpu_into_devices, maybe_initialize_distributed; "
             "split_cpu_into_devices(); maybe_initialize_distributed(); import jax; "
             "print(jax.process_index(), jax.local_device_count(), jax.device_count())")
    for extra in (["-c", "1"], ["--cpu-bind=none"]):
        out = subprocess.run(["srun", "-n", "2", *extra, sys.executable, "-c", probe],
                             env=task_env(), capture_output=True, text=True, timeout=TIMEOUT)
        assert out.returncode == 0, out.stderr[-2000:]
        assert sorted(out.stdout.split("\n")[:2]) == ["0 1 2", "1 1 2"], (extra, out.stdout)


TINY = ["multiseed", "--encodings", "rope", "--seeds", "4", "--steps", "600", "--batch", "16",
        "--d", "16", "--vocab", "8", "--train-lengths", "4,8", "--eval-lengths", "8,12",
        "--eval-sequences", "64", "--no-progress"]  # checkpoints 0, 1, 2, 4, ..., 64, 125, ...


def task_pid(tmp_path, rank: int) -> int | None:
    """The pid of the job's task `rank` (an lgjax process whose command names tmp_path)."""
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes()
            env = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        args = cmd.split(b"\0")  # `python -m lgjax ...` or the `lgjax` script
        if proc.name.isdigit() and str(tmp_path).encode() in cmd \
                and any(a == b"lgjax" or a.endswith(b"/lgjax") for a in args) \
                and f"SLURM_PROCID={rank}".encode() in env and b"srun" not in args[0]:
            return int(proc.name)
    return None


def signal_task_when(tmp_path, rank: int, step_dir: Path, sig, job) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not step_dir.is_dir() and time.monotonic() < deadline and (job is None or
                                                                      job.poll() is None):
        time.sleep(0.005)
    pid = task_pid(tmp_path, rank)
    assert step_dir.is_dir() and pid is not None, f"task {rank} not found running"
    os.kill(pid, sig)


def job_state(job_id: str) -> dict:
    out = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True,
                         text=True, timeout=30)
    return dict(re.findall(r"(\w+)=(\S*)", out.stdout))


def wait_for_job(job_id: str) -> dict:
    deadline, state = time.monotonic() + TIMEOUT, {}
    while time.monotonic() < deadline:
        state = job_state(job_id)
        if state.get("JobState") in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
                                     "OUT_OF_MEMORY", "PREEMPTED"):
            return state
        time.sleep(0.2)
    subprocess.run(["scancel", job_id], timeout=30)
    return state


def test_two_tasks_killed_rerun_stopped_requeued_equal_one_process(tmp_path):
    """A 2-task multiseed (JAX's Slurm detection; one CPU device per task) has task 1 SIGKILLed
    once step 4 is committed: srun takes the step down. Submitted again with
    experiments/slurm/cpu.sbatch (which passes --resume), it gets SIGUSR1 at task 1 alone (what
    `--signal=USR1@N` sends before the time limit, and a `kill` by hand): both tasks stop at one
    chunk boundary with its checkpoint and exit 75, the script requeues the job, and the
    requeued run finishes. Every checkpoint is bitwise equal to one process with 2 devices."""
    one = subprocess.Popen([*LGJAX, *TINY, *where(tmp_path, "one")], env=xla_flags(2),
                           stderr=subprocess.PIPE, text=True)
    run_dir = tmp_path / "two" / "ck" / "multiseed-K1" / "rope"
    job = subprocess.Popen(["srun", "-n", "2", "-c", "1", "--kill-on-bad-exit=1", *LGJAX, *TINY,
                            *where(tmp_path, "two")],
                           env=task_env(), stderr=subprocess.PIPE, text=True)
    signal_task_when(tmp_path / "two", 1, run_dir / "4", signal.SIGKILL, job)
    _, err = job.communicate(timeout=TIMEOUT)
    assert job.returncode != 0 and "task 1: Killed" in err, err[-2000:]
    assert one.wait(TIMEOUT) == 0, one.stderr.read()[-2000:]
    reference = every_step(tmp_path / "one" / "ck" / "multiseed-K1" / "rope")
    committed = every_step(run_dir)
    assert 4 <= max(committed) < 600
    assert_bitwise(committed, {s: reference[s] for s in committed})

    log = tmp_path / "job.log"
    submitted = subprocess.run(
        ["sbatch", "--parsable", "--nodes=1", "--ntasks-per-node=2", "--cpus-per-task=1",
         "--time=10", f"--output={log}", f"--chdir={ROOT}",
         str(ROOT / "experiments" / "slurm" / "cpu.sbatch"), *TINY, *where(tmp_path, "two")],
        env=task_env(), capture_output=True, text=True, timeout=30)
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip().split(";")[0]
    try:
        signal_task_when(tmp_path / "two", 1, run_dir / "64", signal.SIGUSR1, None)
    finally:
        state = wait_for_job(job_id)
    text = log.read_text()
    assert state.get("JobState") == "COMPLETED" and state.get("Restarts") == "1", (state,
                                                                                  text[-3000:])
    assert "stopped by SIGUSR1 at step " in text and "tasks 0-1: Exited with exit code 75" in \
        text and "requeueing job" in text and "Traceback" not in text, text[-3000:]
    assert_bitwise(every_step(run_dir), reference)
    got, want = (json.loads((tmp_path / name / "out" / "results.json").read_text())["rope"]
                 for name in ("two", "one"))
    assert got["accuracy"] == want["accuracy"]


GRID = ["realizability-train", "--tiers", "1L1H", "--encodings", "rope", "--tasks", "prev,skip-2",
        "--seeds", "2", "--steps", "60", "--chunk", "10", "--ckpt-every", "20", "--d", "8",
        "--vocab", "6", "--L0", "6", "--test-lengths", "8", "--batch", "8",
        "--eval-sequences", "16", "--no-progress"]


def test_grid_program_over_two_tasks_equals_one_process(tmp_path):
    """The grid's 2 tasks x 2 seeds split over the job's 2 tasks like seeds; equal to one
    process with 2 devices to 1e-6 (XLA's CPU devices in one process share its threads: the
    last bit of some sums moves)."""
    from lgjax import grid, train

    one = subprocess.Popen([*LGJAX, *GRID, *where(tmp_path, "one")], env=xla_flags(2),
                           stderr=subprocess.PIPE, text=True)
    job = subprocess.run(["srun", "-n", "2", "-c", "1", "--kill-on-bad-exit=1", *LGJAX, *GRID,
                          *where(tmp_path, "two")],
                         env=task_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert job.returncode == 0, job.stderr[-2000:]
    assert one.wait(TIMEOUT) == 0, one.stderr.read()[-2000:]

    def states(run_dir):
        g = checkpoints.read_config(run_dir, grid.Grid)
        return every_step(run_dir, checkpoints.RunDir(
            run_dir, g, readonly=True,
            template=train.abstract_states(g.cell_config(0), int(np.prod(g.shape)))))

    program = ("realizability", "1L1H", "rope")
    got, want = (states(tmp_path.joinpath(name, "ck", *program)) for name in ("two", "one"))
    assert sorted(got) == sorted(want) == [40, 60]  # the last two are kept
    for step in want:
        chex.assert_trees_all_close(got[step], want[step], atol=1e-6)
    got, want = (json.loads(tmp_path.joinpath(name, "ck", *program, "results.json").read_text())
                 for name in ("two", "one"))
    for field in ("train_acc", "lg", "acc_all", "seeds", "tasks"):
        assert got[field] == want[field], field


def test_profile_under_srun_refuses_in_one_line_before_any_work(tmp_path):
    out = subprocess.run(["srun", "-n", "2", *LGJAX, "profile", "rope", "--quick", "--out",
                          str(tmp_path / "p")], env=task_env(), capture_output=True, text=True,
                         timeout=TIMEOUT)
    assert out.returncode != 0
    lines = [x for x in out.stderr.splitlines() if x.startswith("lgjax profile:")]
    assert len(lines) == 2 and "profile runs in one process, not a job of 2" in lines[0], \
        out.stderr[-2000:]  # one line per task
    assert "Traceback" not in out.stderr and not (tmp_path / "p").exists()
