"""Decoder-only transformer (Flax linen): pre-LayerNorm blocks, causal multi-head attention with
any registered encoding, MLP of width 4d with GELU. Written for one sequence, like the head.

`apply(params, tokens [L], length) -> (logits [L, m_out], attention [layers, H, L, L])`; the
params are the plain nested dict linen returns, so a seed axis stacks on every leaf. A model that
reads only the query row n = length-1 (query="last") may be built with `query_row`:
its last block, whose other rows nothing reads, computes that row alone past its keys and
values, and it returns (logits [m_out], attention [layers, H, L] at that row).
Initialisation is Flax's default (LeCun-normal kernels, N(0, 1) token embedding to match the
head); the encoding's own params live under "encoding" and are shared by every layer, or, for an
encoding marked `per_layer` (FIRE), under "block<i>/encoding", one copy per block.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from lgjax.attention import causal_attention
from lgjax.config import ModelConfig
from lgjax.encodings import ENCODINGS, d_head


class Block(nn.Module):
    cfg: ModelConfig
    query_row: bool = False  # past the keys and values, compute the row n = length-1 alone

    @nn.compact
    def __call__(self, x_LxD, length, enc_params, pos_L=None):
        """(states [Q, d], attention [H, Q, L]): Q = L rows, or the query row alone."""
        cfg, enc = self.cfg, ENCODINGS[self.cfg.encoding]
        if enc.per_layer:
            enc_params = self.param("encoding", lambda key: enc.init(key, cfg))
        h = nn.LayerNorm()(x_LxD)
        proj = lambda name: nn.DenseGeneral((cfg.heads, d_head(cfg)), use_bias=False,
                                            name=name)(h)
        q, k, v = proj("query"), proj("key"), proj("value")
        self.sow("intermediates", "keys", k)  # keys before rotation, for carrier fractions
        pos = jnp.arange(x_LxD.shape[0]) if pos_L is None else pos_L
        q, k = enc.rotate_pair(q, k, pos, length, cfg)
        row = length - 1 if self.query_row else None
        o_QxHxD, att_HxQxL = causal_attention(q, k, v, length, enc_params, cfg, pos_L, h, row)
        x_QxD = x_LxD if row is None else jax.lax.dynamic_slice_in_dim(x_LxD, row, 1)
        x_QxD = x_QxD + nn.DenseGeneral(cfg.d, axis=(-2, -1), use_bias=False, name="out")(o_QxHxD)
        h = nn.LayerNorm()(x_QxD)
        h = nn.Dense(cfg.d, name="mlp_out")(nn.gelu(nn.Dense(4 * cfg.d, name="mlp_in")(h)))
        return x_QxD + h, att_HxQxL


class Transformer(nn.Module):
    cfg: ModelConfig
    m_in: int
    m_out: int
    query_row: bool = False  # read the query row n = length-1 alone (see the module's doc)

    @nn.compact
    def __call__(self, tokens_L, length, pos_L=None):
        """pos_L: the tokens' positions (increasing); None: 0..L-1."""
        cfg, enc = self.cfg, ENCODINGS[self.cfg.encoding]
        enc_params = {} if enc.per_layer else self.param("encoding",
                                                         lambda key: enc.init(key, cfg))
        x_LxD = nn.Embed(self.m_in, cfg.d, embedding_init=nn.initializers.normal(1.0))(tokens_L)
        pos = jnp.arange(tokens_L.shape[0]) if pos_L is None else pos_L
        x_LxD = x_LxD + enc.embed(enc_params, pos, length, cfg)
        atts = []
        for i in range(cfg.layers):
            last_row = self.query_row and i == cfg.layers - 1
            x_LxD, att = Block(cfg, last_row, name=f"block{i}")(x_LxD, length, enc_params, pos_L)
            atts.append(att)
        logits = nn.Dense(self.m_out, use_bias=False, name="readout")(nn.LayerNorm()(x_LxD))
        if self.query_row:  # the last block's one row; the others' attention at that row
            return logits[0], jnp.stack([a[:, length - 1] for a in atts[:-1]] + [atts[-1][:, 0]])
        return logits, jnp.stack(atts)


def encoding_params(params, cfg: ModelConfig, block: int):
    """The encoding's params that block `block` reads: its own (a `per_layer` encoding, FIRE)
    or the ones every block shares."""
    if ENCODINGS[cfg.encoding].per_layer:
        return params[f"block{block}"]["encoding"]
    return params["encoding"]


def init_params(key, cfg: ModelConfig, m_in: int, m_out: int) -> dict:
    model = Transformer(cfg, m_in, m_out)
    return model.init(key, jnp.zeros((8,), jnp.int32), jnp.int32(8))["params"]


def make_apply(cfg: ModelConfig, m_in: int, m_out: int, query_row: bool = False):
    """Batched: (logits [B, L, m_out], attention [B, layers, H, L, L]); query="last": the
    logits [B, m_out] at n = length-1. `query_row` (query="last" only): the last block computed
    at that row alone, and every head's attention there [B, layers x H, L] (layer-major)."""
    return jax.vmap(_one_sequence(cfg, m_in, m_out, query_row), in_axes=(None, 0, 0))


def make_apply_at(cfg: ModelConfig, m_in: int, m_out: int, query_row: bool = False):
    """`make_apply` with every sequence's positions [B, L] (randomized positions in training)."""
    return jax.vmap(_one_sequence(cfg, m_in, m_out, query_row), in_axes=(None, 0, 0, 0))


def _one_sequence(cfg: ModelConfig, m_in: int, m_out: int, query_row: bool):
    if query_row and cfg.query != "last":
        raise ValueError("query_row computes the query row alone: only for query='last'")
    model = Transformer(cfg, m_in, m_out, query_row=query_row)

    def one(p, t, n, pos=None):
        logits, att = model.apply({"params": p}, t, n, pos)
        if query_row:
            return logits, att.reshape(-1, att.shape[-1])
        return (logits[n - 1] if cfg.query == "last" else logits), att

    return one


def apply_with_keys(cfg: ModelConfig, m_in: int, m_out: int):
    """Batched apply that also returns every layer's pre-rotation keys [B, layers, L, H, dh]."""
    model = Transformer(cfg, m_in, m_out)

    def one(p, t, n):
        (logits, att), state = model.apply({"params": p}, t, n, mutable=["intermediates"])
        inter = state["intermediates"]
        keys = jnp.stack([inter[f"block{i}"]["keys"][0] for i in range(cfg.layers)])
        return logits, att, keys

    return jax.vmap(one, in_axes=(None, 0, 0))


def flops_per_step(cfg: ModelConfig, batch: int, L: int, m_in: int, m_out: int) -> float:
    """Forward + backward FLOP (2 per multiply-add, backward = 2x forward) of one step."""
    d, H = cfg.d, cfg.heads
    per_layer = L * (4 * d * d + 8 * d * d) + 2 * H * L * L * d_head(cfg)
    fwd = batch * (cfg.layers * per_layer + L * d * m_out)
    return 3 * 2 * fwd
