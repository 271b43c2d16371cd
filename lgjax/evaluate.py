"""Evaluation vmapped over seeds: accuracy per length and the attention-position metrics.

Every evaluation length is padded to the longest one, so one program serves all lengths.
Eval sequences come from fold_in(fold_in(key(seed), EVAL), length): fresh, and the same for a
seed whichever run it belongs to.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from lgjax import models, tasks, train
from lgjax.config import RunConfig
from lgjax.devices import place, seed_mesh, shard_seeds, to_host
from lgjax.keys import EVAL, seed_keys, stream
from lgjax.registry import clears_on_change


class LengthEval(NamedTuple):
    accuracy: jax.Array  # [] fraction of scored targets predicted correctly
    accuracy_new: jax.Array  # [] the same over scored rows i >= new_from (the new rows)
    mean_attention: jax.Array  # [A, Lpad] mean over sequences of the query row's attention
    selected_offset: jax.Array  # [A] argmax of mean attention minus the query position
    peak_height: jax.Array  # [A] max of the mean attention
# A = heads (H) for a one-layer head; layers x heads, layer-major, for a transformer.


def eval_one_length(params, key_data, length, cfg: RunConfig, n_seqs: int, Lpad: int, apply,
                    new_from: int = 0, sample=None):
    """One seed's metrics at one length; `sample(key, length) -> Batch` replaces cfg.task's
    sampler (a grid evaluates each cell's task in one program)."""
    sample = sample or (lambda key, n: tasks.sample_batch(cfg.task, key, n_seqs, n, n, Lpad))
    batch = sample(stream(key_data, EVAL, length), length)
    batch = batch._replace(length=jnp.full_like(batch.length, length))
    logits, att = apply(params, batch.tokens, batch.length)
    correct = (jnp.argmax(logits, -1) == batch.targets) & batch.mask
    acc = correct.sum() / jnp.maximum(batch.mask.sum(), 1)
    row = jnp.arange(Lpad) if batch.mask.ndim == 2 else length - 1  # the scored rows' index
    new = batch.mask & (row >= new_from)
    acc_new = (correct & new).sum() / jnp.maximum(new.sum(), 1)
    if att.ndim >= 4:  # every-row attention [B, (layers,) H, L, L]: the last query row
        att = att.reshape(att.shape[0], -1, Lpad, Lpad)[:, :, length - 1, :]
    mean_AxL = att.mean(0)
    return LengthEval(acc, acc_new, mean_AxL, jnp.argmax(mean_AxL, -1) - (length - 1),
                      mean_AxL.max(-1))


@clears_on_change
@functools.lru_cache(maxsize=32)
def _evaluator(cfg: RunConfig, n_seqs: int, Lpad: int, devices: int | None, new_from: int):
    """One compiled program per (config, sizes): reused for every checkpoint and length."""
    apply = models.make_apply(cfg, forward_only=True)
    one = lambda params, key_data, length: eval_one_length(params, key_data, length, cfg,
                                                            n_seqs, Lpad, apply, new_from)
    # lax.map: evaluation batches are large, so one seed at a time measured faster than vmap
    # (and holds 1/S of the activations)
    mesh = seed_mesh(len(cfg.train.seeds), devices)
    one_per_seed = lambda *args: jax.lax.map(lambda a: one(*a), args)
    return jax.jit(shard_seeds(one_per_seed, mesh),
                   compiler_options=train.compiler_options(cfg.train)), mesh


def evaluate(params_S, cfg: RunConfig, lengths, n_seqs: int = 4096,
             devices: int | None = None, new_from: int = 0) -> LengthEval:
    """Metrics for every seed x length: fields with leading axes [S, n_lengths], as host
    arrays on every process. `new_from` splits off the rows a shorter training never scored
    (accuracy_new)."""
    lengths = tuple(int(x) for x in lengths)
    run, mesh = _evaluator(cfg, n_seqs, max(lengths), devices, new_from)
    n_S = len(cfg.train.seeds)
    params_S, keys_S = place((params_S, seed_keys(cfg.train.seeds)), mesh)
    out = [run(params_S, keys_S, place(jnp.full((n_S,), L, jnp.int32), mesh)) for L in lengths]
    return jax.tree.map(lambda *x: np.stack([np.asarray(v) for v in x], axis=1), *to_host(out))
