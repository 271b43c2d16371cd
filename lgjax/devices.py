"""The seed axis across devices: a 1-D mesh named "seed" and shard_map with no communication.

Each device runs its block of seeds with the same one-seed program (vmap or lax.map inside), so
results per seed do not depend on how many devices share the work.
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from lgjax.config import ConfigError

AXIS = "seed"


def seed_mesh(n_seeds: int, devices: int | None = None) -> Mesh | None:
    """Mesh over `devices` devices (None/0: as many as divide the seed count); None if one."""
    available = jax.devices()
    if devices:
        if devices > len(available):
            raise ConfigError(f"--devices: asked for {devices} but only {len(available)} "
                              f"{jax.default_backend()} devices exist")
        if n_seeds % devices:
            raise ConfigError(f"--devices: {n_seeds} seeds do not split evenly over {devices} "
                              "devices; pick a device count that divides the seed count")
        n = devices
    else:
        n = max(k for k in range(1, len(available) + 1) if n_seeds % k == 0)
    return None if n == 1 else Mesh(np.array(available[:n]), (AXIS,))


def shard_seeds(fn, mesh: Mesh | None, n_replicated: int = 0):
    """Run fn(seed-stacked args..., replicated args...) blockwise over the mesh's seed axis."""
    if mesh is None:
        return fn

    def wrapped(*args):
        n_sharded = len(args) - n_replicated
        specs = (P(AXIS),) * n_sharded + (P(),) * n_replicated
        # check_vma off: per-seed loop carries start replicated (no collectives are used)
        return jax.shard_map(fn, mesh=mesh, in_specs=specs, out_specs=P(AXIS),
                             check_vma=False)(*args)

    return wrapped


def place(tree, mesh: Mesh | None):
    """Put a seed-stacked tree on the mesh (seed axis split), or leave it where it is.

    Built with make_array_from_callback from the full host value, which every process holds
    (states derive from seed ids only), so the same call also serves a multi-host mesh.
    """
    if mesh is None:
        return tree
    sharding = NamedSharding(mesh, P(AXIS))

    def put(x):
        if getattr(x, "sharding", None) == sharding:
            return x
        host = np.asarray(x)
        return jax.make_array_from_callback(host.shape, sharding, lambda idx: host[idx])

    return jax.tree.map(put, tree)
