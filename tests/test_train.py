import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lgjax import train
from lgjax.encodings import ENCODINGS
from lgjax.tasks import TASKS
from lgjax.validation import validate
from tests.conftest import tiny


def _run(cfg, strategy="vmap"):
    return train.train(cfg, runner=train.make_chunk_runner(cfg, strategy=strategy))


@pytest.mark.parametrize("strategy", ["vmap", "map", "blocks"])
def test_seed_alone_equals_seed_in_batch(strategy, monkeypatch):
    monkeypatch.setattr(train, "SEED_BLOCK", 2)  # 4 seeds: a map over two 2-wide vmaps
    many = _run(tiny(seeds=(0, 1, 2, 3)), strategy)
    alone = _run(tiny(seeds=(2,)), strategy)
    # vmap reorders float sums (~1e-7 per step); map is bitwise identical
    check = chex.assert_trees_all_equal if strategy == "map" else functools.partial(
        chex.assert_trees_all_close, atol=1e-5)
    check(jax.tree.map(lambda x: x[2], many.params), jax.tree.map(lambda x: x[0], alone.params))


def test_map_and_vmap_agree():
    a, b = _run(tiny(), "vmap"), _run(tiny(), "map")
    chex.assert_trees_all_close(a.params, b.params, atol=1e-5)


def test_the_loop_around_the_vmapped_step_equals_the_vmap_of_the_loop():
    """The chunk runner loops around vmap(step) where the seeds are one vmap (it traces
    faster): the same states and losses, bit for bit, as the vmap of a per-seed loop."""
    cfg = tiny(seeds=(0, 1, 2))
    step, states = train.make_seed_step(cfg), train.init_states(cfg)
    loop_of_vmap = jax.jit(lambda s, n: train.run_steps(jax.vmap(step), s, n))
    vmap_of_loop = jax.jit(jax.vmap(lambda s, n: train.run_steps(step, s, n), in_axes=(0, None)))
    a, b = loop_of_vmap(states, jnp.int32(7)), vmap_of_loop(states, jnp.int32(7))
    assert a[1].shape == (3,)
    chex.assert_trees_all_equal(a, b)


def test_step_compiles_once_across_chunk_lengths():
    cfg = tiny(steps=11)
    runner = train.make_chunk_runner(cfg, wrap=chex.assert_max_traces(n=1))
    states = train.train(cfg, runner=runner)  # chunks of 1, 1, 2, 1, 3, ... steps
    assert int(states.step[0]) == 11
    assert len(set(np.diff([0, *train.chunk_boundaries(cfg.train, 0)]))) > 1


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_every_encoding_trains(encoding):
    """Every registered encoding (the added ones included) passes validation, trains through
    the head without a bad step, and lowers the loss."""
    cfg = tiny(encoding, steps=30, seeds=(0,))
    # past the trained range, except for the learned table (it refuses: tests/test_encodings.py)
    validate(cfg, eval_lengths=(cfg.train.lmax if encoding == "ape" else 16,))
    runner = train.make_chunk_runner(cfg)  # one program for the training and both probes
    states = train.train(cfg, runner=runner)
    _, loss0 = runner(train.init_states(cfg), jnp.int32(5))
    _, loss1 = runner(states, jnp.int32(5))
    assert int(states.bad_step[0]) == -1
    assert np.isfinite(loss1).all() and float(loss1[0]) < float(loss0[0])


@pytest.mark.parametrize("task", sorted(TASKS))
def test_every_task_trains(task):
    cfg = tiny("rope", task=task, steps=4, seeds=(0,))
    states = _run(cfg)
    assert int(states.step[0]) == 4 and int(states.bad_step[0]) == -1


def test_nan_guard_names_seed_and_step():
    cfg = tiny(seeds=(3, 5))
    states = train.init_states(cfg)
    params = dict(states.params)
    params["wq"] = params["wq"].at[1].set(jnp.nan)
    states = states._replace(params=params)
    with pytest.raises(train.TrainingDiverged, match="seed 5 .* step 1"):
        train.train(cfg, states)


@pytest.mark.parametrize("params", [
    {"ape": jnp.ones(3), "wq": jnp.ones(3)},  # the head: top-level names
    {"encoding": {"ape": jnp.ones(3)}, "block0": {"query": {"kernel": jnp.ones(3)}}},  # nested
])
def test_weight_decay_reaches_named_params_wherever_they_are(params):
    import dataclasses

    t = dataclasses.replace(tiny("ape", seeds=(0,)).train, weight_decay=0.5, lr=1.0)
    grads = jax.tree.map(jnp.zeros_like, params)
    chain = train.make_optimizer(t)
    upd, _ = chain.update(grads, chain.init(params), params)
    flat = {jax.tree_util.keystr(k): v for k, v in jax.tree_util.tree_leaves_with_path(upd)}
    for path, u in flat.items():
        if "ape" in path:  # coupled L2 only: -lr * adam(0.5 * p) = -1 at the first step
            chex.assert_trees_all_close(u, -jnp.ones(3), atol=1e-3)
        else:
            assert float(jnp.abs(u).max()) == 0.0, path


def test_checkpoint_schedule_dense_early():
    steps = train.checkpoint_steps(tiny().train.__class__(steps=4000))
    assert len(steps) >= 30 and steps[:8] == [0, 1, 2, 4, 8, 16, 32, 64] and steps[-1] == 4000
