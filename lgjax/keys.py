"""Random keys: one leaf module every consumer derives its keys from (nothing here imports lgjax).

A seed's keys depend on its id only: `stream(seed_key(s), TAG[, index])` = fold_in(fold_in(
key(s), TAG), index). One tag per consumer, so no two consumers ever share a key:
  INIT   parameter initialisation
  DATA   the training batch of step s (index = s)
  EVAL   the evaluation sequences of length L (index = L)
  PROBE  analysis batches that are not a seed's (index = the probe's number, see `probe`)
Importing this module has JAX compute threefry unrolled on a CPU, for the whole process (the
same bits; `_unroll_threefry_on_cpu`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.extend.random import threefry2x32_p
from jax.interpreters import mlir


def _unroll_threefry_on_cpu() -> None:
    """Compute threefry's 20 rounds straight through on a CPU, as JAX does on a GPU.

    JAX lowers the hash on a CPU as a loop of 5 iterations, which XLA's CPU runtime runs as
    dozens of small ops per draw, and a sampled training step draws several times: at the
    grid's sizes those were most of a step's ops. Unrolled, XLA fuses each draw into a few
    kernels. The arithmetic is the same uint32 adds, rotations and xors in the same order, so
    every key and random number is the same bits (tests/test_keys.py); only the time moves
    (docs/results/performance.md, Random draws on a CPU). A JAX without this private rule keeps
    its own lowering: slower, the same numbers.
    """
    try:
        from jax._src.random.threefry2x32 import _threefry2x32_lowering_rule as unrolled
    except ImportError:
        return
    mlir.register_lowering(threefry2x32_p, unrolled, platform="cpu")


_unroll_threefry_on_cpu()  # here: every key and random draw of lgjax derives from this module

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
