import json

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lgjax import models, tasks, train, transformer
from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig
from lgjax.validation import validate


def tiny_transformer(encoding, steps=4, seeds=(0, 1)):
    return RunConfig(TaskConfig.of("shift", vocab=8, offset=2),
                     ModelConfig(encoding=encoding, arch="transformer", layers=2, heads=2, d=16,
                                 query="all"),
                     TrainConfig(steps=steps, batch=8, lr=3e-4, lmin=6, lmax=10, seeds=seeds))


def test_transformer_trains_through_the_one_trainer():
    # a bias-kind encoding: the rotary and additive kinds train through the transformer
    # experiment's end-to-end test
    cfg = tiny_transformer("t5")
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


@pytest.mark.parametrize("encoding", ["rope", "ape", "t5", "cope"])
def test_the_query_row_model_equals_the_full_model_at_that_row(encoding):
    """The query-row model computes the last block at the query row n = length-1 alone: its logits,
    every layer's attention at that row and the gradients equal the full model's there, for
    each kind of encoding (rotary, additive, bias, content-aware with params per block), with
    padded sequences of several lengths and with randomized positions."""
    import dataclasses

    import lgjax.content  # noqa: F401  (registers the content-aware encodings)

    full_cfg = tiny_transformer(encoding)
    row_cfg = dataclasses.replace(full_cfg, model=dataclasses.replace(full_cfg.model,
                                                                      query="last"))
    p = models.init_params(jax.random.key(0), full_cfg)
    b = tasks.sample_batch(full_cfg.task, jax.random.key(1), 6, 6, 10, 10)
    pos = jnp.sort(jax.vmap(lambda k: jax.random.permutation(k, 16)[:10])(
        jax.random.split(jax.random.key(2), 6)), axis=-1)
    B, n = jnp.arange(6), b.length - 1
    assert len(set(np.asarray(b.length).tolist())) > 1  # padded rows past some queries
    read = lambda out: jnp.sum(jnp.sin(out))  # any function of the query row's logits

    def outputs_and_grads(apply, query_row_of, extra):
        """One compiled program: the model's outputs and the gradient of `read` at the row."""
        def f(q):
            out = apply(q, b.tokens, b.length, *extra)
            return read(query_row_of(out[0])), out
        return jax.jit(jax.value_and_grad(f, has_aux=True))(p)

    def same_at_the_row(full, row, *extra):
        (_, (logits_BxLxM, att_BxNxHxLxL)), g_full = outputs_and_grads(
            full, lambda logits: logits[B, n], extra)
        (_, (logits_BxM, att_BxAxL)), g_row = outputs_and_grads(row, lambda logits: logits, extra)
        np.testing.assert_allclose(logits_BxM, logits_BxLxM[B, n], atol=2e-6)
        np.testing.assert_allclose(att_BxAxL, att_BxNxHxLxL[B, :, :, n].reshape(6, 4, 10),
                                   atol=1e-6)
        chex.assert_trees_all_close(g_row, g_full, atol=2e-6)

    m = (row_cfg.model, *models.vocab_sizes(row_cfg))
    same_at_the_row(models.make_apply(full_cfg), transformer.make_apply(*m, query_row=True))
    same_at_the_row(models.make_apply_at(full_cfg), transformer.make_apply_at(*m, query_row=True),
                    pos)
    # a query="last" model reads its query row alone in training and in evaluation; a
    # query="all" model every row
    for apply in (models.make_apply(row_cfg, forward_only=True), models.make_apply(row_cfg),
                  lambda *a: models.make_apply_at(row_cfg)(*a, pos)):
        assert jax.eval_shape(apply, p, b.tokens, b.length)[1].shape == (6, 4, 10)
    assert jax.eval_shape(models.make_apply(full_cfg), p, b.tokens,
                          b.length)[1].shape == (6, 2, 2, 10, 10)


def _dot_flop(jaxpr) -> int:
    """2 x multiply-adds of every dot_general in the jaxpr and the jaxprs inside it."""
    total = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            (contract, _), _ = eqn.params["dimension_numbers"]
            lhs = eqn.invars[0].aval.shape
            total += 2 * int(np.prod(eqn.outvars[0].aval.shape)) * int(
                np.prod([lhs[d] for d in contract]))
        for v in eqn.params.values():
            for sub in v if isinstance(v, (tuple, list)) else (v,):
                if isinstance(sub, jax.extend.core.ClosedJaxpr):
                    total += _dot_flop(sub.jaxpr)
                elif isinstance(sub, jax.extend.core.Jaxpr):
                    total += _dot_flop(sub)
    return total


def test_flops_per_step_counts_every_matmul_of_the_training_step():
    """flops_per_step (the FLOP `lgjax bench` and the benchmarks rate steps by) equals the
    matmuls of the training step's own jaxpr, forward and backward, at every row (query="all")."""
    rc = RunConfig(TaskConfig.of("copy", vocab=8),
                   ModelConfig(encoding="rope", arch="transformer", layers=2, heads=4, d=16,
                               query="all"),
                   TrainConfig(steps=1, batch=4, lmin=6, lmax=6, seeds=(0,)))
    m_in, m_out = models.vocab_sizes(rc)
    state = jax.tree.map(lambda x: x[0], train.init_states(rc))
    counted = _dot_flop(jax.make_jaxpr(train.make_seed_step(rc))(state).jaxpr)
    assert counted == transformer.flops_per_step(rc.model, 4, 6, m_in, m_out)
