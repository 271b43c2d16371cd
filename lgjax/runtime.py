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
