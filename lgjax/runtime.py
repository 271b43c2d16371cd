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
    """Multi-host runs: with LGJAX_DISTRIBUTED=1 join the cluster before any device is used.

    jax.distributed.initialize reads the coordinator address, process count and id from the
    environment (JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID) or a detected
    cluster (Slurm, Cloud TPU); afterwards jax.devices() lists every host's devices.
    """
    if os.environ.get("LGJAX_DISTRIBUTED") == "1":
        jax.distributed.initialize()
