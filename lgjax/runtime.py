"""Process-wide JAX settings the entry points share."""

from __future__ import annotations

import os
from pathlib import Path

import jax


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
    jax.distributed.initialize(num_processes=int(count) if count else None,
                               process_id=int(index) if index else None)
