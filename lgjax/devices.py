"""The seed axis across devices: a 1-D mesh named "seed" and shard_map with no communication.

Each device runs its block of seeds with the same one-seed program (vmap or lax.map inside), so
results per seed do not depend on how many devices share the work. In a job of several processes
(jax.distributed) the mesh spans every process's devices, each process runs its own block, and
the few host-side values everyone needs (losses, evaluation results) are gathered with
`to_host`; only the leader (process 0) writes files and prints.
"""

from __future__ import annotations

import contextlib
import contextvars
import pickle

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from lgjax.config import ConfigError

AXIS = "seed"

# The devices this thread's runs may use (`share`), else None: every device of the process
_SHARE: contextvars.ContextVar[tuple | None] = contextvars.ContextVar("lgjax_devices", default=None)


def local_devices() -> list:
    """This process's devices that the current thread's runs may use: its share while it trains
    runs beside others (lgjax.harness.side_by_side), else all of them."""
    return list(_SHARE.get() or jax.local_devices())


@contextlib.contextmanager
def share(devices):
    """Inside: the thread's meshes and uncommitted arrays use `devices` alone (the first is its
    default device), so runs in other threads can use the rest. One process only."""
    token = _SHARE.set(tuple(devices))
    try:
        with jax.default_device(devices[0]):
            yield
    finally:
        _SHARE.reset(token)


def is_leader() -> bool:
    """Process 0 of the job (the only process of a one-process run)."""
    return jax.process_index() == 0


def _per_process_count(n_seeds: int, devices: int | None, procs: int, local: int) -> int:
    """Devices per process: every process must hold a block (each runs every program). One
    process: as many as asked for, or as many as divide the seed count."""
    job = f"the job's {procs} processes x {local} devices"
    if devices:
        if procs == 1 and devices > local:
            raise ConfigError(f"--devices: asked for {devices} but only {local} "
                              f"{jax.default_backend()} devices exist")
        if devices % procs or devices > procs * local:
            raise ConfigError(f"--devices: {devices} devices cannot be taken evenly from {job}; "
                              f"give a multiple of {procs} up to {procs * local}, or 0")
        if n_seeds % devices:
            raise ConfigError(f"--devices: {n_seeds} seeds do not split evenly over {devices} "
                              "devices; pick a device count that divides the seed count")
        return devices // procs
    fits = [k for k in range(1, local + 1) if n_seeds % (k * procs) == 0]
    if not fits:
        raise ConfigError(f"--seeds: {n_seeds} seeds cannot be split over {job}; give a seed "
                          f"count that is a multiple of {procs}")
    return max(fits)


def seed_mesh(n_seeds: int, devices: int | None = None) -> Mesh | None:
    """Mesh over `devices` devices (None/0: as many as divide the seed count); None if one.

    With several processes the mesh takes the same number of devices from every process,
    process by process, so process p runs the p-th contiguous block of seeds.
    """
    procs = jax.process_count()
    per = _per_process_count(n_seeds, devices, procs, len(local_devices()))
    if procs == 1:
        return None if per == 1 else Mesh(np.array(local_devices()[:per]), (AXIS,))
    chosen = [d for p in range(procs)
              for d in [d for d in jax.devices() if d.process_index == p][:per]]
    return Mesh(np.array(chosen), (AXIS,))


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


def sync(name: str) -> None:
    """Every process of the job waits here until all have arrived (nothing with one)."""
    if jax.process_count() > 1:
        multihost_utils.sync_global_devices(name)


def _identity(*xs):
    return xs


def to_host(tree):
    """Every leaf as a whole value on this process: arrays spread over several processes are
    gathered, all in one program (a collective: every process must call it); the rest is left
    as it is."""
    leaves, treedef = jax.tree.flatten(tree)
    spread = [i for i, x in enumerate(leaves)
              if isinstance(x, jax.Array) and not x.is_fully_addressable]
    if not spread:
        return tree
    # one exchange for the whole tree: per-leaf gathers cost ~0.1 s each on a loaded CPU
    whole = jax.jit(_identity, out_shardings=tuple(
        NamedSharding(leaves[i].sharding.mesh, P()) for i in spread))(*[leaves[i] for i in spread])
    for i, x in zip(spread, whole):
        leaves[i] = np.asarray(x.addressable_data(0))
    return treedef.unflatten(leaves)


def first_local(x):
    """One element of x read from this process's own data (no communication): for values
    that every seed shares, such as the step count."""
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        x = x.addressable_data(0)
    return np.asarray(x).reshape(-1)[0]


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
        host = np.asarray(to_host(x))
        return jax.make_array_from_callback(host.shape, sharding, lambda idx: host[idx])

    return jax.tree.map(put, tree)


def _gather_bytes(data: bytes) -> list[bytes]:
    """Every process's bytes, in process order (two small all-gathers: lengths, then data)."""
    sizes = multihost_utils.process_allgather(np.array([len(data)], np.int64)).reshape(-1)
    buf = np.zeros(int(sizes.max()), np.uint8)
    buf[:len(data)] = np.frombuffer(data, np.uint8)
    rows = multihost_utils.process_allgather(buf)
    return [rows[p, :int(n)].tobytes() for p, n in enumerate(sizes)]


def map_seeds(fn, n_seeds: int) -> list:
    """[fn(s) for s in range(n_seeds)] with the seeds split over the job's processes: process p
    computes the p-th contiguous block and every process gets all results (plain Python and
    numpy values, passed between the job's own processes with pickle)."""
    procs, me = jax.process_count(), jax.process_index()
    if procs == 1:
        return [fn(s) for s in range(n_seeds)]
    bounds = np.linspace(0, n_seeds, procs + 1).round().astype(int)
    mine = [fn(s) for s in range(bounds[me], bounds[me + 1])]
    blocks = _gather_bytes(pickle.dumps(mine))
    return [r for block in blocks for r in pickle.loads(block)]


def free_bytes() -> int | None:
    """What one program may allocate: the first device's limit on an accelerator, the host's
    available memory on CPU (None when neither is known)."""
    stats = local_devices()[0].memory_stats() or {}
    if "bytes_limit" in stats:
        return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    try:
        with open("/proc/meminfo") as f:
            kib = next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:"))
        return kib * 1024
    except (OSError, StopIteration, ValueError):
        return None


def check_memory(model, sequences: int, length: int, flag: str) -> None:
    """Refuse, before anything compiles, a batch whose one forward pass cannot fit: at least
    the activations [sequences, length, d] and the attention logits [sequences, heads, length,
    length] of every layer, float32, for one seed (measured: --batch 1e8 at length 6, d 8
    asked XLA for 36.8 GB; this bound says 33.6 GB)."""
    layers = 1 if model.arch == "head" else model.layers
    need = 4 * sequences * length * (model.d + model.heads * length) * layers
    have = free_bytes()
    if have is not None and need > have:
        raise ConfigError(f"{flag}: {sequences} sequences of length {length} need at least "
                          f"{need / 2**30:.1f} GiB in one pass (activations and attention "
                          f"logits, one seed), but {have / 2**30:.1f} GiB are free here; lower "
                          f"{flag}")
