"""Identities the studies rely on: the kernel is the head's positional logit, relative encodings
are translation invariant (absolute ones are not), and the every-row head is causal."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lgjax import models, transformer
from lgjax.config import ModelConfig
from lgjax.encodings import ENCODINGS, ApeOptions, logit_scale

RELATIVE = ("rope", "alibi", "t5", "relclip", "nope", "rope_linear", "rope_ntk", "rope_yarn",
            "rope_llama3", "xpos", "kerple_log", "kerple_power", "prope", "rope_partial")
# a content-aware encoding has no positional-only kernel (tests/test_content.py says so)
POSITIONAL = [n for n in sorted(ENCODINGS) if ENCODINGS[n].kind != "content"]
ABSOLUTE = ("ape", "sinusoidal")


def _params(name: str, d: int = 8, seed: int = 0) -> tuple[dict, ModelConfig]:
    """Head params with random projections and a non-trivial encoding table."""
    enc = ApeOptions(oob="untrained") if name == "ape" else None
    cfg = ModelConfig(encoding=name, d=d, heads=2, enc=enc)
    ks = jax.random.split(jax.random.key(seed), 4)
    params = {"wq": jax.random.normal(ks[0], (d, d)), "wk": jax.random.normal(ks[1], (d, d)),
              **ENCODINGS[name].init(ks[2], cfg)}
    if "relbias" in params:
        params["relbias"] = jax.random.normal(ks[3], params["relbias"].shape)
    return params, cfg


def _carrier(name: str, d: int, L: int) -> jax.Array:
    """The content every position carries when content is removed: zero, except for RoPE whose
    positional-only kernel sum_i cos(delta theta_i) is the logit of the unit pair (1, 0) per
    frequency (scaled so that the logit scale cancels)."""
    if ENCODINGS[name].kind != "rotary":
        return jnp.zeros((L, d))
    return jnp.tile(jnp.array([1.0, 0.0]), (L, d // 2))


def _head_logits(params, cfg: ModelConfig, x_LxD) -> jax.Array:
    """The general head's logits [H, L, L] for inputs x (embedding rows), by its own pieces."""
    enc = ENCODINGS[cfg.encoding]
    L = x_LxD.shape[0]
    pos = jnp.arange(L)
    x_LxD = x_LxD + enc.embed(params, pos, jnp.int32(L), cfg)
    split = lambda a: models.heads_split(a, cfg)
    wq, wk = params["wq"], params["wk"]
    if enc.kind == "rotary":  # the kernel is defined for the content itself, unprojected
        wq = wk = jnp.eye(cfg.d) / jnp.sqrt(logit_scale(cfg))
    q, k = enc.rotate_pair(split(x_LxD @ wq), split(x_LxD @ wk), pos, jnp.int32(L), cfg)
    logits = jnp.einsum("qhd,khd->hqk", q, k) * logit_scale(cfg)
    bias = jnp.broadcast_to(enc.logit_bias(params, pos[:, None], pos[None, :], cfg),
                            (L, L, cfg.heads))
    return logits + jnp.moveaxis(bias, -1, 0)


@pytest.mark.parametrize("name", POSITIONAL)
def test_kernel_is_the_heads_logit_with_content_removed(name):
    params, cfg = _params(name)
    L = 12
    i, j = np.tril_indices(L)
    # both sides in one program (op by op, each primitive compiled on its own)
    got, want = jax.jit(lambda p: (
        _head_logits(p, cfg, _carrier(name, cfg.d, L)),  # [H, L, L]
        ENCODINGS[name].kernel(p, jnp.asarray(i), jnp.asarray(j), cfg)))(params)  # [N, H]
    chex.assert_trees_all_close(got[:, i, j].T, want, atol=1e-4, rtol=1e-4)


def _shift_gap(name: str, c: int) -> float:
    params, cfg = _params(name, seed=3)
    i, j = np.tril_indices(20)
    kern = jax.jit(lambda a, b: ENCODINGS[name].kernel(params, a, b, cfg))
    return float(jnp.abs(kern(i + c, j + c) - kern(i, j)).max())


@pytest.mark.parametrize("name", RELATIVE)
@pytest.mark.parametrize("c", [1, 7, 30])
def test_relative_scores_are_translation_invariant(name, c):
    assert _shift_gap(name, c) < 1e-3


@pytest.mark.parametrize("name", ABSOLUTE)
def test_absolute_scores_are_not(name):
    assert _shift_gap(name, 7) > 1e-2


@pytest.mark.parametrize("arch", ["head", "transformer"])
def test_every_row_head_is_causal_through_gradients(arch):
    """d logit[i] / d (position row j) is zero for every j > i and not for j <= i."""
    cfg = ModelConfig(encoding="ape", arch=arch, d=16, heads=2, layers=2, query="all",
                      enc=ApeOptions(size=16))
    L = 10
    tokens = jax.random.randint(jax.random.key(1), (L,), 0, 8)
    if arch == "head":
        from lgjax.config import RunConfig, TaskConfig

        rc = RunConfig(TaskConfig("shift", vocab=8), cfg)
        params = models.init_params(jax.random.key(0), rc)
        apply = lambda p: models.general_apply(p, tokens, jnp.int32(L), cfg)[0]
        table = lambda p: p["ape"]
    else:
        params = transformer.init_params(jax.random.key(0), cfg, 8, 8)
        apply = lambda p: transformer.Transformer(cfg, 8, 8).apply({"params": p}, tokens,
                                                                   jnp.int32(L))[0]
        table = lambda p: p["encoding"]["ape"]
    rows = (0, 4, 9)
    # the three gradients in one program (one compilation, not one per primitive)
    grads = jax.jit(lambda p: [table(jax.grad(lambda q, i=i: apply(q)[i].sum())(p))
                               for i in rows])(params)
    for i, grad in zip(rows, grads, strict=True):
        per_row = np.abs(np.asarray(grad)).sum(-1)[:L]
        assert (per_row[i + 1:] == 0).all(), (arch, i)
        assert (per_row[: i + 1] > 0).all(), (arch, i)
