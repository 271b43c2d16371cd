"""Process-wide JAX settings the entry points share."""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

import jax

from lgjax.errors import ConfigError


def enable_compile_cache(path: str | None = None) -> None:
    """Persistent compilation cache: reruns skip XLA compilation of identical programs."""
    path = path or os.environ.get("LGJAX_CACHE", str(Path.home() / ".cache" / "lgjax" / "jax"))
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)


CPU_DEVICES = "LGJAX_CPU_DEVICES"
FORCE_COUNT = "--xla_force_host_platform_device_count"


def slurm_task_cpus(env=None) -> int | None:
    """The CPUs Slurm gave this task, where it says: SLURM_CPUS_PER_TASK (`srun -c N`), else the
    job's CPUs on this node over the step's tasks on it; None outside a Slurm job step.

    A cluster whose Slurm binds tasks to cores (task/affinity, task/cgroup) shows that in the
    affinity mask too; one that does not leaves every task the whole node's mask, and a task of
    `srun -n 2` on a 2-core node would split it into 2 devices (4 in the job, each core
    oversubscribed)."""
    env = os.environ if env is None else env
    if "SLURM_STEP_ID" not in env:
        return None
    per_task = env.get("SLURM_CPUS_PER_TASK", "")
    if per_task.isdigit() and int(per_task) > 0:
        return int(per_task)
    node_cpus, tasks = env.get("SLURM_CPUS_ON_NODE", ""), _tasks_on_this_node(env)
    if node_cpus.isdigit() and tasks:
        return max(int(node_cpus) // tasks, 1)
    return None


def _tasks_on_this_node(env) -> int | None:
    """SLURM_STEP_TASKS_PER_NODE (e.g. "2(x3),1": 2 tasks on each of 3 nodes, then 1) at
    SLURM_NODEID."""
    try:
        node = int(env.get("SLURM_NODEID", "0"))
        for part in env["SLURM_STEP_TASKS_PER_NODE"].split(","):
            count, _, repeat = part.partition("(x")
            node -= int(repeat.rstrip(")")) if repeat else 1
            if node < 0:
                return int(count)
    except (KeyError, ValueError):
        pass
    return None


def cpu_device_count() -> int:
    """What split_cpu_into_devices asks for: $LGJAX_CPU_DEVICES, else the cores this process
    may run on (its affinity mask; in a Slurm job step no more than the task's CPUs)."""
    raw = os.environ.get(CPU_DEVICES, "").strip()
    if not raw:
        cores = len(os.sched_getaffinity(0))
        return min(cores, slurm_task_cpus() or cores)
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{CPU_DEVICES}={raw!r}: set it to a whole number of CPU devices >= 1 "
                          "(1: one device for the whole CPU), or unset it (one per core)")
    return int(raw)


def split_cpu_into_devices() -> None:
    """One XLA CPU device per core, so the seed (and grid-cell) axis splits over the cores.

    On a CPU the small ops of these models parallelise badly inside one device, so several
    devices run faster end to end (docs/results/performance.md). Blocks of
    seeds then sum in another order: parameters differ in their last bits, accuracies and
    selected offsets not at all. Only the CPU platform is affected (an accelerator's devices
    are what they are). Left alone: a count set in XLA_FLAGS (`lgjax launch` sets one per
    process), and a process whose JAX backend already started.
    """
    if FORCE_COUNT in os.environ.get("XLA_FLAGS", ""):
        return
    n = cpu_device_count()
    try:
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError:  # the backend already started (a library caller ran JAX first)
        pass


def share_accelerator() -> None:
    """Several processes on one GPU (`reproduce --jobs N`): each takes device memory as it
    needs it instead of XLA's default 75% at start, which would leave the second process none.
    Left alone where XLA_PYTHON_CLIENT_PREALLOCATE is set; no effect once the backend started."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def maybe_initialize_distributed() -> None:
    """Multi-host runs: with LGJAX_DISTRIBUTED=1 join the job before any device is used.

    The coordinator address, process count and id come from JAX_COORDINATOR_ADDRESS,
    JAX_NUM_PROCESSES and JAX_PROCESS_ID where set (what `lgjax launch` sets); anything unset is
    left to jax.distributed.initialize's cluster detection (Slurm, Open MPI, Cloud TPU, k8s).
    Afterwards jax.devices() lists every process's devices. CPU processes exchange data
    through gloo (the CPU backend has no cross-process collectives without it).
    """
    if os.environ.get("LGJAX_DISTRIBUTED") != "1":
        return
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    count, index = os.environ.get("JAX_NUM_PROCESSES"), os.environ.get("JAX_PROCESS_ID")
    if index == "0" and os.environ.get("JAX_COORDINATOR_ADDRESS"):
        check_port_free(os.environ["JAX_COORDINATOR_ADDRESS"])
    jax.distributed.initialize(num_processes=int(count) if count else None,
                               process_id=int(index) if index else None)


def check_port_free(address: str) -> None:
    """Process 0 serves the coordinator on every interface at the address's port; a port in
    use there crashes jax.distributed.initialize (a segfault), so say so first."""
    port = address.rsplit(":", 1)[-1]
    if not port.isdigit():
        raise ConfigError(f"JAX_COORDINATOR_ADDRESS: {address!r} has no port; give HOST:PORT")
    for family, host in ((socket.AF_INET6, "::"), (socket.AF_INET, "")):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC binds
                s.bind((host, int(port)))
            return
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                raise ConfigError(f"JAX_COORDINATOR_ADDRESS: port {port} is already in use "
                                  "here (another job or program holds it); stop that or give "
                                  "another port") from err
            # no IPv6 here: try IPv4
