"""Attention weights from logits, shared by the head, its fast forms and the transformer."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from lgjax.config import ModelConfig

NEG = -1e30  # masked logit: exp underflows to exactly 0, unlike -inf it never makes NaN


def attend(logits, valid, cfg: ModelConfig):
    """Softmax over valid keys, or the raw (masked) logits for the linear control."""
    if cfg.attention == "linear":
        return jnp.where(valid, logits, 0.0)
    return jax.nn.softmax(jnp.where(valid, logits, NEG), axis=-1)
