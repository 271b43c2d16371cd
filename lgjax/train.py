"""The multi-seed trainer: every seed in one compiled program, seeds as the leading axis.

A seed's keys depend only on its id: init from fold_in(key(seed), INIT), the batch of step s
from fold_in(fold_in(key(seed), DATA), s). So seed i trains the same alone or among others.
With `train.random_positions` = M > 0 (Ruoss et al. 2023, randomized positional encodings) the
tokens of each training sequence sit at a sorted draw of distinct positions from [0, M), keyed
off the step's data key (`POSITIONS`); evaluation keeps the positions 0..L-1.
Steps run inside one jitted loop per chunk (a fori_loop whose trip count is an argument, so the
program compiles once for every chunk length); checkpoints fall on chunk boundaries.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from lgjax import models, tasks
from lgjax.config import RunConfig, TrainConfig
from lgjax.devices import first_local, local_devices, place, seed_mesh, shard_seeds, to_host
from lgjax.errors import TrainingDiverged
from lgjax.keys import DATA, INIT, seed_keys, stream
from lgjax.registry import clears_on_change


class TrainState(NamedTuple):
    params: dict
    opt_state: optax.OptState
    step: jax.Array  # int32 []: optimizer steps taken
    key: jax.Array  # uint32 key data of key(seed)
    bad_step: jax.Array  # int32 []: first step whose loss or params were not finite, else -1


def make_optimizer(t: TrainConfig) -> optax.GradientTransformation:
    """Adam; weight decay coupled as L2 (torch Adam style) on every leaf whose path names one of
    `decay_params` at any depth (the head's "ape", the transformer's "encoding/ape")."""
    parts = []
    if t.weight_decay > 0:
        def mask(params):
            return jax.tree_util.tree_map_with_path(
                lambda path, _: any(getattr(k, "key", None) in t.decay_params for k in path),
                params)

        parts.append(optax.add_decayed_weights(t.weight_decay, mask=mask))
    return optax.chain(*parts, optax.scale_by_adam(), optax.scale(-t.lr))


def loss_fn(params, batch: tasks.Batch, apply) -> jax.Array:
    logits, _ = apply(params, batch.tokens, batch.length)
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, batch.targets)
    w = batch.mask.astype(jnp.float32)
    return (ce * w).sum() / jnp.maximum(w.sum(), 1.0)


def init_state(key_data, cfg: RunConfig) -> TrainState:
    params = models.init_params(stream(key_data, INIT), cfg)
    opt_state = make_optimizer(cfg.train).init(params)
    return TrainState(params, opt_state, jnp.int32(0), key_data, jnp.int32(-1))


# fold_in tag of the positions' key off a step's data key. Not 0 or 1: fold_in(key, i) equals
# split(key, n)[i] (threefry, partitionable), and the sampler splits the data key in two.
POSITIONS = 0x706F73


def random_positions(key, lengths_B, L: int, M: int):
    """[B, L] int32: per sequence, its first lengths[b] entries a uniformly drawn set of distinct
    positions in [0, M) in increasing order; the padding after them M - 1 (never attended)."""
    def one(k, n):
        draw_L = jax.random.permutation(k, M)[:L]  # a prefix of a permutation: a uniform subset
        idx = jnp.arange(L)
        return jnp.minimum(jnp.sort(jnp.where(idx < n, draw_L, M + idx)), M - 1)

    return jax.vmap(one)(jax.random.split(key, lengths_B.shape[0]), lengths_B).astype(jnp.int32)


def make_seed_step(cfg: RunConfig, sample: Callable | None = None) -> Callable:
    """One optimizer step for one seed: state -> (state, loss). `sample(state) -> Batch`
    replaces cfg.task's sampler (the grid runner picks a cell's task there)."""
    t = cfg.train
    M = t.random_positions
    apply = models.make_apply_at(cfg) if M else models.make_apply(cfg)
    opt = make_optimizer(t)
    sample = sample or (lambda state: tasks.sample_batch(
        cfg.task, stream(state.key, DATA, state.step), t.batch, t.lmin, t.lmax, t.lmax))

    def step(state: TrainState):
        batch = sample(state)
        apply_batch = apply
        if M:
            key = jax.random.fold_in(stream(state.key, DATA, state.step), POSITIONS)
            pos_BxL = random_positions(key, batch.length, batch.tokens.shape[1], M)
            apply_batch = lambda p, tokens, lengths: apply(p, tokens, lengths, pos_BxL)
        loss, grads = jax.value_and_grad(loss_fn)(state.params, batch, apply_batch)
        updates, opt_state = opt.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        finite = jnp.isfinite(loss) & jnp.all(jnp.array(
            [jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(params)]))
        bad = jnp.where((state.bad_step < 0) & ~finite, state.step + 1, state.bad_step)
        return TrainState(params, opt_state, state.step + 1, state.key, bad), loss

    return step


FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}


@functools.cache
def accepted_fast_compile(backend: str) -> dict:
    """FAST_COMPILE less the options the backend's compiler does not know.

    jax 0.11's XLA has no classic CPU emitters left to choose (its switch is gone, and naming it
    fails every compilation: 'No such compile option'), which is the jax of the lent GPUs' image.
    """
    options = dict(FAST_COMPILE)
    one = jax.device_put(1.0, jax.local_devices(backend=backend)[0])  # (jit's backend=: deprecated)
    for name in list(options):
        try:
            jax.jit(lambda x: x + 1).lower(one).compile({name: options[name]})
        except jax.errors.JaxRuntimeError as e:
            if "No such compile option" not in str(e):
                raise
            del options[name]
    return options


def compiler_options(t: TrainConfig) -> dict | None:
    """XLA's options for the run's programs (TrainConfig.fast_compile)."""
    return dict(accepted_fast_compile(jax.default_backend())) if t.fast_compile else None


SEED_BLOCK = 8  # seeds vmapped together by the "blocks" strategy


def resolve_strategy(cfg: RunConfig) -> str:
    # `lgjax bench` (best of 3, 2-core CPU): vmap was fastest at S = 8, but a 32-wide vmap was
    # slower per seed than a loop for APE; lax.map over blocks of 8 vmapped seeds keeps the
    # S = 8 speed at any S. vmap within a block is also what fills an accelerator.
    return "blocks" if cfg.train.seed_axis == "auto" else cfg.train.seed_axis


def block_size(n_seeds: int) -> int:
    """The largest block of <= SEED_BLOCK seeds that divides n_seeds."""
    return max(k for k in range(1, min(SEED_BLOCK, n_seeds) + 1) if n_seeds % k == 0)


def is_one_vmap(n_seeds: int, strategy: str) -> bool:
    """over_seeds is a single vmap: "vmap", or "blocks" where one block holds every seed."""
    return strategy == "vmap" or (strategy == "blocks" and block_size(n_seeds) == n_seeds)


def seed_blocks(fn: Callable, n_seeds: int) -> Callable:
    """fn(states_S, *rest) as lax.map over blocks of <= SEED_BLOCK seeds, vmapped inside one."""
    b = block_size(n_seeds)
    vfn = jax.vmap(fn, in_axes=(0, None))
    if b == n_seeds:
        return vfn

    def blocked(states_S, *rest):
        grouped = jax.tree.map(lambda x: x.reshape(n_seeds // b, b, *x.shape[1:]), states_S)
        out = jax.lax.map(lambda g: vfn(g, *rest), grouped)
        return jax.tree.map(lambda x: x.reshape(n_seeds, *x.shape[2:]), out)

    return blocked


def over_seeds(fn: Callable, n_seeds: int, strategy: str) -> Callable:
    """fn(state, rest) over a stack of n_seeds states: vmap, blocks of vmaps, or lax.map."""
    if strategy == "vmap":
        return jax.vmap(fn, in_axes=(0, None))
    if strategy == "blocks":
        return seed_blocks(fn, n_seeds)
    return lambda states, rest: jax.lax.map(lambda s: fn(s, rest), states)


def run_steps(step: Callable, state: TrainState, n_steps):
    """`n_steps` (traced) applications of step inside one loop: (state, mean loss)."""
    def body(_, carry):
        state, total = carry
        state, loss = step(state)
        return state, total + loss

    # one per seed when `step` is vmapped; in the loss's dtype (float64 under jax's x64 mode, so
    # a run trained in float64 fits the loop's carry)
    total = jnp.zeros(state.step.shape, jax.dtypes.canonicalize_dtype(jnp.float64))
    state, total = jax.lax.fori_loop(0, n_steps, body, (state, total))
    return state, total / jnp.maximum(n_steps, 1)


def make_chunk_runner(cfg: RunConfig, strategy: str | None = None, wrap: Callable = lambda f: f,
                      devices: int | None = None):
    """jit(states_S, n_steps) -> (states_S, mean loss per seed over the chunk).

    Seeds are split over `devices` devices (None: all that divide the seed count) with
    shard_map; `wrap` decorates the traced function (tests pass chex.assert_max_traces(n=1)).
    """
    mesh = seed_mesh(len(cfg.train.seeds), devices)
    step = make_seed_step(cfg)

    strategy = strategy or resolve_strategy(cfg)

    def run_block(states_S, n_steps):
        n_local = jax.tree.leaves(states_S)[0].shape[0]
        if is_one_vmap(n_local, strategy):
            # the loop around the vmapped step, not a vmap of the loop: batching a loop traces
            # its body again until the batched carry settles (~0.1 s of a program's ~0.35 s
            # trace, measured); the steps compute the same, bit for bit
            return run_steps(jax.vmap(step), states_S, n_steps)
        run_one = lambda state, n: run_steps(step, state, n)
        return over_seeds(run_one, n_local, strategy)(states_S, n_steps)

    @functools.partial(jax.jit, compiler_options=compiler_options(cfg.train))
    @wrap
    def run(states_S, n_steps):
        return shard_seeds(run_block, mesh, n_replicated=1)(states_S, n_steps)

    return lambda states_S, n_steps: run(place(states_S, mesh), n_steps)


def init_states(cfg: RunConfig, repeat: int = 1) -> TrainState:
    """Every seed's initial state, stacked; the whole stack `repeat` times (grid cells)."""
    keys_S = jnp.tile(seed_keys(cfg.train.seeds), (repeat, 1))
    return _initializer(cfg)(keys_S)


@clears_on_change
@functools.lru_cache(maxsize=16)
def _initializer(cfg: RunConfig) -> Callable:
    """One jitted program per config: a process that asks again for a config's initial states
    (a profile's and prop1's statistics at initialisation after training, a resumed run) reuses
    it instead of tracing, lowering and reading it from the compilation cache again."""
    init = jax.vmap(lambda k: init_state(k, cfg))
    return jax.jit(init, compiler_options=compiler_options(cfg.train))


def abstract_states(cfg: RunConfig, n: int | None = None):
    """Restore target: shapes and dtypes of the stacked state (n states; default one per
    seed), whole on the first device this thread may use (so a checkpoint saved on N devices,
    by any number of processes, restores on any other count; the runner re-shards)."""
    keys_S = jax.ShapeDtypeStruct((n or len(cfg.train.seeds), 2), jnp.uint32)
    shapes = jax.eval_shape(_initializer(cfg), keys_S)
    device = jax.sharding.SingleDeviceSharding(local_devices()[0])
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=device), shapes)


def checkpoint_steps(t: TrainConfig) -> list[int]:
    """Step 0, log-spaced 1, 2, 4, ... up to ckpt_early, then every ckpt_every, and the last."""
    early = [2**i for i in range(64) if 2**i <= min(t.ckpt_early, t.steps)]
    regular = list(range(t.ckpt_every, t.steps + 1, t.ckpt_every))
    return sorted({0, *early, *regular, t.steps})


def chunk_boundaries(t: TrainConfig, start: int) -> list[int]:
    marks = set(checkpoint_steps(t)) | set(range(0, t.steps + 1, t.chunk))
    return sorted(s for s in marks if start < s <= t.steps)


def check_finite(states: TrainState, names: list[str]) -> None:
    """TrainingDiverged naming the first state (names[i], e.g. "seed 3") that went non-finite."""
    bad = np.asarray(states.bad_step)
    if (bad >= 0).any():
        i = int(np.argmax(bad >= 0))
        raise TrainingDiverged(f"{names[i]} produced a non-finite loss or parameter at step "
                               f"{int(bad[i])}; lower train.lr or check the config")


def train(cfg: RunConfig, states: TrainState | None = None, on_chunk: Callable | None = None,
          runner: Callable | None = None, devices: int | None = None) -> TrainState:
    """Run to cfg.train.steps; on_chunk(step, states, loss_S) is called at every boundary.

    States live on the seed mesh from the start (so every save, step 0 included, writes each
    process's own block); loss_S reaches on_chunk whole, on every process."""
    states = init_states(cfg) if states is None else states
    states = place(states, seed_mesh(len(cfg.train.seeds), devices))
    runner = runner or make_chunk_runner(cfg, devices=devices)
    start = int(first_local(states.step))
    if on_chunk is not None and start == 0:
        on_chunk(0, states, None)
    for end in chunk_boundaries(cfg.train, start):
        states, loss_S = runner(states, jnp.int32(end - start))
        # one exchange per chunk: every process sees every seed's flag and loss, decides alike
        bad_S, loss_S = to_host((states.bad_step, loss_S))
        check_finite(states._replace(bad_step=bad_S), [f"seed {s}" for s in cfg.train.seeds])
        if on_chunk is not None:
            on_chunk(end, states, loss_S)
        start = end
    return states
