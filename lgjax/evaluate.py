"""Evaluation vmapped over seeds: accuracy per length and the attention-position metrics.

Every evaluation length is padded to the longest one, so one program serves all lengths.
Eval sequences come from fold_in(fold_in(key(seed), EVAL), length): fresh, and the same for a
seed whichever run it belongs to.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from lgjax import models, tasks
from lgjax.config import RunConfig
from lgjax.devices import place, seed_mesh, shard_seeds
from lgjax.keys import EVAL, seed_keys, stream


class LengthEval(NamedTuple):
    accuracy: jax.Array  # [] fraction of scored targets predicted correctly
    mean_attention: jax.Array  # [H, Lpad] mean over sequences of the query row's attention
    selected_offset: jax.Array  # [H] argmax of mean attention minus the query position
    peak_height: jax.Array  # [H] max of the mean attention


def eval_one_length(params, key_data, length, cfg: RunConfig, n_seqs: int, Lpad: int, apply):
    batch = tasks.sample_batch(cfg.task, stream(key_data, EVAL, length), n_seqs, length, length,
                               Lpad)
    batch = batch._replace(length=jnp.full_like(batch.length, length))
    logits, att = apply(params, batch.tokens, batch.length)
    correct = (jnp.argmax(logits, -1) == batch.targets) & batch.mask
    acc = correct.sum() / jnp.maximum(batch.mask.sum(), 1)
    if att.ndim == 4:  # every-row head [B, H, L, L]: the last query row carries the metrics
        att = att[:, :, length - 1, :]
    mean_HxL = att.mean(0)
    return LengthEval(acc, mean_HxL, jnp.argmax(mean_HxL, -1) - (length - 1), mean_HxL.max(-1))


def evaluate(params_S, cfg: RunConfig, lengths, n_seqs: int = 4096,
             devices: int | None = None) -> LengthEval:
    """Metrics for every seed x length: fields with leading axes [S, n_lengths]."""
    lengths = tuple(int(x) for x in lengths)
    Lpad = max(lengths)
    apply = models.make_apply(cfg)
    keys_S = seed_keys(cfg.train.seeds)
    one = lambda params, key_data, length: eval_one_length(params, key_data, length, cfg,
                                                            n_seqs, Lpad, apply)
    # lax.map: evaluation batches are large, so one seed at a time measured faster than vmap
    # (and holds 1/S of the activations)
    mesh = seed_mesh(len(cfg.train.seeds), devices)
    one_per_seed = lambda *args: jax.lax.map(lambda a: one(*a), args)
    run = jax.jit(shard_seeds(one_per_seed, mesh))
    n_S = len(cfg.train.seeds)
    params_S = place(params_S, mesh)
    out = [run(params_S, keys_S, jnp.full((n_S,), L, jnp.int32)) for L in lengths]
    return jax.tree.map(lambda *x: np.stack([np.asarray(v) for v in x], axis=1), *out)
