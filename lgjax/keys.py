"""Random keys: one leaf module every consumer derives its keys from (nothing here imports lgjax).

A seed's keys depend on its id only: `stream(seed_key(s), TAG[, index])` = fold_in(fold_in(
key(s), TAG), index). One tag per consumer, so no two consumers ever share a key:
  INIT   parameter initialisation
  DATA   the training batch of step s (index = s)
  EVAL   the evaluation sequences of length L (index = L)
  PROBE  analysis batches that are not a seed's (index = the probe's number, see `probe`)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

INIT, DATA, EVAL, PROBE = 0, 1, 2, 3
PROBE_ROOT = 12345  # the key id of probe batches (the max-margin constraint sample)


def seed_key(seed: int) -> jax.Array:
    """uint32 key data of key(seed): what the saved training state carries."""
    return jax.random.key_data(jax.random.key(seed))


def seed_keys(seeds) -> jax.Array:
    """Stacked key data [S, 2] for a tuple of seed ids."""
    return jnp.stack([seed_key(s) for s in seeds])


def stream(key_data, tag: int, index=None) -> jax.Array:
    key = jax.random.fold_in(jax.random.wrap_key_data(key_data), tag)
    return key if index is None else jax.random.fold_in(key, index)


def probe(index: int | None = None) -> jax.Array:
    """A fixed key for analysis batches shared by every seed (index None: the root itself)."""
    key = jax.random.key(PROBE_ROOT)
    return key if index is None else stream(jax.random.key_data(key), PROBE, index)
