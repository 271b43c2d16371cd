"""The CLI's CPU split: one XLA device per core unless told otherwise (LGJAX_CPU_DEVICES, or a
device count in XLA_FLAGS, which `lgjax launch` sets), a bad value refused in one line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import TEST_XLA_FLAGS

from lgjax.errors import ConfigError
from lgjax.runtime import CPU_DEVICES, cpu_device_count

PROBE = ("from lgjax.runtime import split_cpu_into_devices; split_cpu_into_devices(); "
         "import jax; print(jax.device_count())")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k != CPU_DEVICES}
    return {**env, "XLA_FLAGS": TEST_XLA_FLAGS, **extra}


def _devices(env) -> int:
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                         check=True)
    return int(out.stdout.strip())


def test_count_defaults_to_the_cores_and_reads_the_variable(monkeypatch):
    monkeypatch.delenv(CPU_DEVICES)
    assert cpu_device_count() == len(os.sched_getaffinity(0))
    monkeypatch.setenv(CPU_DEVICES, "3")
    assert cpu_device_count() == 3


@pytest.mark.parametrize("bad", ["0", "two", "-1", "1.5"])
def test_bad_count_names_the_variable(monkeypatch, bad):
    monkeypatch.setenv(CPU_DEVICES, bad)
    with pytest.raises(ConfigError, match=CPU_DEVICES):
        cpu_device_count()


def test_split_sets_the_device_count_before_the_backend_starts():
    assert _devices(_env()) == len(os.sched_getaffinity(0))
    assert _devices(_env(**{CPU_DEVICES: "3"})) == 3
    # a count in XLA_FLAGS (what `lgjax launch` gives each process) is left as it is
    flags = f"{TEST_XLA_FLAGS} --xla_force_host_platform_device_count=2"
    assert _devices(_env(**{CPU_DEVICES: "3", "XLA_FLAGS": flags})) == 2


def test_cli_refuses_a_bad_count_in_one_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "lgjax", "multiseed", "--out",
                          str(tmp_path / "out"), "--ckpt-root", str(tmp_path / "ck")],
                         env=_env(**{CPU_DEVICES: "none"}), capture_output=True, text=True)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and CPU_DEVICES in lines[0], out.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "ck").exists()


@pytest.mark.parametrize("env, cpus", [
    ({}, None),  # not in a Slurm job step
    ({"SLURM_STEP_ID": "0", "SLURM_CPUS_PER_TASK": "3", "SLURM_CPUS_ON_NODE": "8"}, 3),
    # srun -n 2 on a 2-CPU node, no -c: each task's share
    ({"SLURM_STEP_ID": "0", "SLURM_CPUS_ON_NODE": "2", "SLURM_STEP_TASKS_PER_NODE": "2"}, 1),
    ({"SLURM_STEP_ID": "0", "SLURM_CPUS_ON_NODE": "16", "SLURM_STEP_TASKS_PER_NODE": "2(x3),4",
      "SLURM_NODEID": "3"}, 4),
    ({"SLURM_STEP_ID": "0", "SLURM_CPUS_ON_NODE": "16", "SLURM_STEP_TASKS_PER_NODE": "2(x3),4",
      "SLURM_NODEID": "1"}, 8),
    ({"SLURM_STEP_ID": "0", "SLURM_CPUS_ON_NODE": "1", "SLURM_STEP_TASKS_PER_NODE": "2"}, 1),
    ({"SLURM_STEP_ID": "0", "SLURM_STEP_TASKS_PER_NODE": "junk"}, None),
])
def test_a_slurm_task_gets_a_device_per_cpu_it_was_given(env, cpus):
    from lgjax.runtime import slurm_task_cpus

    assert slurm_task_cpus(env) == cpus


def test_a_slurm_task_count_caps_the_affinity_mask(monkeypatch):
    monkeypatch.delenv(CPU_DEVICES)
    monkeypatch.setenv("SLURM_STEP_ID", "0")
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "1")
    assert cpu_device_count() == 1
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "1000")  # never more than the mask
    assert cpu_device_count() == len(os.sched_getaffinity(0))
