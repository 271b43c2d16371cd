"""Attention weights from logits, shared by the head, its fast forms and the transformer."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from lgjax.config import ModelConfig
from lgjax.encodings import ENCODINGS, content_view, logit_scale

NEG = -1e30  # masked logit: exp underflows to exactly 0, unlike -inf it never makes NaN


def attend(logits, valid, cfg: ModelConfig):
    """Softmax over valid keys, or the raw (masked) logits for the linear control."""
    if cfg.attention == "linear":
        return jnp.where(valid, logits, 0.0)
    return jax.nn.softmax(jnp.where(valid, logits, NEG), axis=-1)


def attention_logits(q_LxHxD, k_LxHxD, length, enc_params, cfg: ModelConfig, pos_L=None,
                     x_LxD=None, row=None):
    """The logits [H, Q, L] before the causal mask: q . k scaled (or, for a content-aware
    encoding, what it makes of the causal view of q, k and the states `x_LxD`), plus the
    encoding's logit bias between the rows' positions (`pos_L`, increasing; None: 0..L-1).
    Q = L query rows, or the one row `row` (a traced index) alone."""
    enc = ENCODINGS[cfg.encoding]
    idx = jnp.arange(q_LxHxD.shape[0])
    pos = idx if pos_L is None else pos_L
    rows = (lambda a: a) if row is None else (lambda a: jax.lax.dynamic_slice_in_dim(a, row, 1))
    if enc.content is None:
        logits_HxQxL = jnp.einsum("qhd,khd->hqk", rows(q_LxHxD), k_LxHxD) * logit_scale(cfg)
    else:  # the view reads every row's q; its logits are cut to the query rows after
        view = content_view(q_LxHxD, k_LxHxD, x_LxD, pos, length, cfg)
        logits_HxQxL = jax.vmap(rows)(enc.content_logits(enc_params, view, cfg))
    qpos = rows(pos)
    bias_QxLxH = jnp.broadcast_to(enc.logit_bias(enc_params, qpos[:, None], pos[None, :], cfg),
                                  (qpos.shape[0], idx.shape[0], cfg.heads))
    return logits_HxQxL + jnp.moveaxis(bias_QxLxH, -1, 0)


def causal_attention(q_LxHxD, k_LxHxD, v_LxHxD, length, enc_params, cfg: ModelConfig,
                     pos_L=None, x_LxD=None, row=None):
    """Every row attends to keys t <= row (and t < length); q and k come already rotated (for
    rotary encodings), the logits are `attention_logits` (the mask is applied after them).
    Returns (output [Q, H, dh], attention [H, Q, L]): Q = L rows, or the one row `row` alone
    (a model that reads only the query row computes its last block there)."""
    idx = jnp.arange(q_LxHxD.shape[0])
    qidx = idx if row is None else jnp.reshape(row, (1,))
    logits_HxQxL = attention_logits(q_LxHxD, k_LxHxD, length, enc_params, cfg, pos_L, x_LxD, row)
    valid_QxL = (idx[None, :] <= qidx[:, None]) & (idx[None, :] < length)
    att_HxQxL = attend(logits_HxQxL, valid_QxL, cfg)
    return jnp.einsum("hqk,khd->qhd", att_HxQxL, v_LxHxD), att_HxQxL
