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
                     x_LxD=None):
    """The logits [H, L, L] before the causal mask: q . k scaled (or, for a content-aware
    encoding, what it makes of the causal view of q, k and the states `x_LxD`), plus the
    encoding's logit bias between the rows' positions (`pos_L`, increasing; None: 0..L-1)."""
    enc = ENCODINGS[cfg.encoding]
    idx = jnp.arange(q_LxHxD.shape[0])
    pos = idx if pos_L is None else pos_L
    if enc.content is None:
        logits_HxLxL = jnp.einsum("qhd,khd->hqk", q_LxHxD, k_LxHxD) * logit_scale(cfg)
    else:
        view = content_view(q_LxHxD, k_LxHxD, x_LxD, pos, length, cfg)
        logits_HxLxL = enc.content_logits(enc_params, view, cfg)
    bias_LxLxH = jnp.broadcast_to(enc.logit_bias(enc_params, pos[:, None], pos[None, :], cfg),
                                  (idx.shape[0], idx.shape[0], cfg.heads))
    return logits_HxLxL + jnp.moveaxis(bias_LxLxH, -1, 0)


def causal_attention(q_LxHxD, k_LxHxD, v_LxHxD, length, enc_params, cfg: ModelConfig,
                     pos_L=None, x_LxD=None):
    """Every row attends to keys t <= row (and t < length); q and k come already rotated (for
    rotary encodings), the logits are `attention_logits` (the mask is applied after them).
    Returns (output [L, H, dh], attention [H, L, L])."""
    idx = jnp.arange(q_LxHxD.shape[0])
    logits_HxLxL = attention_logits(q_LxHxD, k_LxHxD, length, enc_params, cfg, pos_L, x_LxD)
    valid_LxL = (idx[None, :] <= idx[:, None]) & (idx[None, :] < length)
    att_HxLxL = attend(logits_HxLxL, valid_LxL, cfg)
    return jnp.einsum("hqk,khd->qhd", att_HxLxL, v_LxHxD), att_HxLxL
