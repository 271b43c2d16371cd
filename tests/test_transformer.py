import chex
import jax
import jax.numpy as jnp
import pytest

from lgjax import models, tasks, train
from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig, validate


def tiny_transformer(encoding, steps=4, seeds=(0, 1)):
    return RunConfig(TaskConfig("shift", vocab=8, K=2),
                     ModelConfig(encoding=encoding, arch="transformer", layers=2, heads=2, d=16,
                                 query="all"),
                     TrainConfig(steps=steps, batch=8, lr=3e-4, lmin=6, lmax=10, seeds=seeds))


@pytest.mark.parametrize("encoding", ["rope", "ape", "t5"])
def test_transformer_trains_through_the_one_trainer(encoding):
    cfg = tiny_transformer(encoding)
    validate(cfg)
    runner = train.make_chunk_runner(cfg, wrap=chex.assert_max_traces(n=1))
    states = train.train(cfg, runner=runner)
    assert int(states.step[0]) == 4 and (states.bad_step == -1).all()
    assert models.head_path(cfg.model) == "transformer"


def test_transformer_is_causal_and_shapes():
    cfg = tiny_transformer("rope")
    p = models.init_params(jax.random.key(0), cfg)
    b = tasks.sample_batch(cfg.task, jax.random.key(1), 4, 10, 10, 10)
    apply = models.make_apply(cfg)
    logits, att = apply(p, b.tokens, b.length)
    chex.assert_shape(logits, (4, 10, 8))
    chex.assert_shape(att, (4, 2, 2, 10, 10))  # batch, layers, heads, query, key
    changed = b.tokens.at[:, -1].set((b.tokens[:, -1] + 1) % 8)
    logits2, _ = apply(p, changed, b.length)
    chex.assert_trees_all_close(logits[:, :-1], logits2[:, :-1], atol=1e-5)
    assert not jnp.allclose(logits[:, -1], logits2[:, -1])
