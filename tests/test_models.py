import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lgjax import models, tasks
from lgjax.encodings import ENCODINGS
from tests.conftest import tiny


def _batch(cfg, n=32, L=12):
    return tasks.sample_batch(cfg.task, jax.random.key(1), n, 2, L, L)


def _params(cfg):
    p = models.init_params(jax.random.key(0), cfg)
    if "relbias" in p:  # non-zero biases so the bias path is exercised
        p["relbias"] = jax.random.normal(jax.random.key(5), p["relbias"].shape)
    return p


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@pytest.mark.parametrize("heads", [1, 4])
@pytest.mark.parametrize("attention", ["softmax", "linear"])
def test_fast_head_equals_general(encoding, heads, attention):
    cfg = tiny(encoding, heads=heads, attention=attention)
    # a length-dependent encoding (dynamic NTK) has no fast form: the general head serves it
    # nor has a content-aware one (its logits read q, k or the states)
    fast_form = (ENCODINGS[encoding].length_free(cfg.model)
                 and ENCODINGS[encoding].kind in models.fast.FAST_HEADS)
    assert models.head_path(cfg.model) == ("fast:" + ENCODINGS[encoding].kind if fast_form
                                           else "general")
    if not fast_form:  # make_apply's default is then the general head itself: nothing to compare
        return
    p, b = _params(cfg), _batch(cfg)

    # both paths and their gradients in one program: one compilation per case instead of the
    # general path's ops one by one (the suite's cost here is compilation, not arithmetic)
    def both(path, params, tokens, length):
        apply = models.make_apply(cfg, path)
        return apply(params, tokens, length), jax.grad(
            lambda q: apply(q, tokens, length)[0].sum())(params)

    (fast, grad_fast), (ref, grad_ref) = jax.jit(
        lambda *a: (both(None, *a), both("general", *a)))(p, b.tokens, b.length)
    chex.assert_trees_all_close(fast, ref, atol=2e-5, rtol=1e-4)
    chex.assert_trees_all_close(grad_fast, grad_ref, atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("encoding", ["ape", "sinusoidal", "rope"])
def test_forward_only_form_equals_the_training_form(encoding):
    """Evaluation's form (gathers for the additive kind): the attention bitwise the same (the
    same two table entries added), the output logits to float rounding."""
    cfg = tiny(encoding, heads=2)
    p, b = _params(cfg), _batch(cfg, L=16)
    logits, att = jax.jit(models.make_apply(cfg))(p, b.tokens, b.length)
    logits_f, att_f = jax.jit(models.make_apply(cfg, forward_only=True))(p, b.tokens, b.length)
    np.testing.assert_array_equal(np.asarray(att_f), np.asarray(att))
    chex.assert_trees_all_close(logits_f, logits, atol=1e-5, rtol=1e-5)
    assert float(jnp.abs(logits).max()) > 1e-2  # not trivially equal


@pytest.mark.parametrize("path", [None, "general"])
@pytest.mark.parametrize("encoding", ["rope", "ape", "t5"])
def test_padding_never_receives_attention(encoding, path):
    cfg = tiny(encoding)
    p, b = _params(cfg), _batch(cfg)
    apply = models.make_apply(cfg, path)
    logits, att = apply(p, b.tokens, b.length)
    pad = jnp.arange(b.tokens.shape[1])[None, :] >= b.length[:, None]
    assert float(jnp.abs(jnp.where(pad[:, None, :], att, 0.0)).max()) == 0.0
    chex.assert_trees_all_close(att.sum(-1), jnp.ones_like(att.sum(-1)), atol=1e-5)
    # changing what sits in the padding changes nothing
    noisy = jnp.where(pad, (b.tokens + 3) % cfg.task.vocab, b.tokens)
    chex.assert_trees_all_close(apply(p, noisy, b.length), (logits, att), atol=1e-6)


def test_every_row_head_is_causal():
    cfg = tiny("rope", task="prev")
    p, b = _params(cfg), _batch(cfg)
    logits, att = models.make_apply(cfg)(p, b.tokens, b.length)
    chex.assert_shape(att, (32, 1, 12, 12))
    upper = jnp.triu(jnp.ones((12, 12), bool), 1)
    assert float(jnp.abs(jnp.where(upper, att, 0)).max()) == 0.0
    # output at row i ignores tokens after i
    changed = b.tokens.at[:, -1].set((b.tokens[:, -1] + 1) % cfg.task.vocab)
    logits2, _ = models.make_apply(cfg)(p, changed, b.length)
    chex.assert_trees_all_close(logits[:, :-1], logits2[:, :-1], atol=1e-6)


def test_linear_attention_weights_are_the_logits():
    cfg = tiny("rope", attention="linear")
    p, b = _params(cfg), _batch(cfg, n=4)
    q, k, _ = models.project(p, b.tokens[0], b.length[0], cfg.model)
    n = int(b.length[0]) - 1
    scale = 1 / np.sqrt(16)
    want = np.where(np.arange(12) <= n, np.asarray(k[:, 0] @ q[n, 0]) * scale, 0.0)
    for path in (None, "general"):
        _, att = jax.jit(models.make_apply(cfg, path))(p, b.tokens, b.length)
        np.testing.assert_allclose(att[0, 0], want, atol=1e-5)


def test_init_matches_pytorch_defaults():
    cfg = tiny("ape", d=64)
    p = models.init_params(jax.random.key(0), cfg)
    assert abs(float(p["embed"].std()) - 1) < 0.2 and abs(float(p["ape"].std()) - 1) < 0.05
    assert float(jnp.abs(p["wq"]).max()) <= 1 / 8 and float(jnp.abs(p["wq"]).max()) > 0.12
