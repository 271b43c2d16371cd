import json

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lgjax import models, tasks, train
from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig
from lgjax.validation import validate


def tiny_transformer(encoding, steps=4, seeds=(0, 1)):
    return RunConfig(TaskConfig.of("shift", vocab=8, offset=2),
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
    apply = jax.jit(models.make_apply(cfg))  # one compilation for both calls
    logits, att = apply(p, b.tokens, b.length)
    chex.assert_shape(logits, (4, 10, 8))
    chex.assert_shape(att, (4, 2, 2, 10, 10))  # batch, layers, heads, query, key
    changed = b.tokens.at[:, -1].set((b.tokens[:, -1] + 1) % 8)
    logits2, _ = apply(p, changed, b.length)
    chex.assert_trees_all_close(logits[:, :-1], logits2[:, :-1], atol=1e-5)
    assert not jnp.allclose(logits[:, -1], logits2[:, -1])


def test_offset_profile_hand_computed():
    from lgjax.studies.implicit_bias.transformer import carrier_fraction, offset_profile

    att = np.tril(np.ones((4, 4)))
    att[3] = [0.1, 0.7, 0.2, 0.0]  # row 3 puts 0.7 at offset -2
    att[2] = [0.0, 0.0, 1.0, 0.0]
    prof = offset_profile(att, K=2)  # rows 2 and 3 are scored
    np.testing.assert_allclose(prof, [0.1, (0.0 + 0.7) / 2, (0.0 + 0.2) / 2, (1.0 + 0.0) / 2])
    assert carrier_fraction(np.ones((5, 3))) == pytest.approx(1.0)
    assert carrier_fraction(np.array([[1.0, 0], [-1.0, 0]])) == pytest.approx(0.0)


def test_transformer_experiment_end_to_end(tmp_path, capsys):
    from lgjax.harness.cli import main

    rc = main(["transformer", "--steps", "3", "--batch", "8", "--d", "16", "--heads", "2",
               "--vocab", "8", "--train-lengths", "6,8", "--eval-lengths", "8,12",
               "--profile-lengths", "8,12", "--eval-sequences", "16", "--no-progress",
               "--out", str(tmp_path / "out"), "--ckpt-root", str(tmp_path / "ck")])
    assert rc == 0
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert res["reduced"] and len(res["rope"]["accuracy"][0]) == 2
    assert res["ape"]["accuracy_beyond"][0][0] is None  # L=8: no row beyond the range
    assert (tmp_path / "out" / "transformer.png").stat().st_size > 0
    assert "shift head" in capsys.readouterr().out


def test_evaluate_reports_attention_per_layer_and_head():
    """The transformer's attention [B, layers, H, L, L]: metrics for every (layer, head)."""
    from lgjax import evaluate

    cfg = tiny_transformer("rope")
    states = train.init_states(cfg)
    ev = evaluate.evaluate(states.params, cfg, (8, 10), 16)
    layers, heads = cfg.model.layers, cfg.model.heads
    S = len(cfg.train.seeds)
    assert ev.mean_attention.shape == (S, 2, layers * heads, 10)
    assert ev.selected_offset.shape == ev.peak_height.shape == (S, 2, layers * heads)
    # each (layer, head) row is a distribution over the L keys of the last query row
    np.testing.assert_allclose(ev.mean_attention[:, 0, :, :8].sum(-1), 1.0, atol=1e-5)
