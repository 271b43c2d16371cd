"""Evaluation vmapped over seeds: accuracy per length and the attention-position metrics.

Every evaluation length's sequences are drawn padded to the longest one; the model reads them at
that size, so that one program serves all lengths, or each length at its own size (`own_size`).
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
    #                            (Lpad: the longest length measured; zero past the row's length)
    selected_offset: jax.Array  # [A] argmax of mean attention minus the query position
    peak_height: jax.Array  # [A] max of the mean attention
# A = heads (H) for a one-layer head; layers x heads, layer-major, for a transformer.


def eval_one_length(params, key_data, length, cfg: RunConfig, n_seqs: int, Lpad: int, apply,
                    new_from: int = 0, sample=None) -> LengthEval:
    """One seed's metrics at one length (traced), its sequences padded to Lpad and the model
    reading them at that size, masking the padding. `sample(key, length) -> Batch` replaces
    cfg.task's sampler (a grid evaluates each cell's task in one program)."""
    sample = sample or (lambda key, n: tasks.sample_batch(cfg.task, key, n_seqs, n, n, Lpad))
    return _metrics(params, sample(stream(key_data, EVAL, length), length), length, Lpad, Lpad,
                    apply, new_from)


def eval_each_at_its_size(params, key_data, lengths: tuple[int, ...], cfg: RunConfig,
                          n_seqs: int, apply, new_from: int = 0, sample=None) -> LengthEval:
    """One seed's metrics at every length of `lengths` in one program: fields with a leading
    [n_lengths] axis. The sequences are drawn as eval_one_length draws them (padded to the
    longest length); the model reads each length at its own size, the padding cut off. That
    saves the model's work on the padding and costs a compilation of the model per length; the
    numbers are the padded model's up to float rounding."""
    Lpad = max(lengths)
    sample = sample or (lambda key, n: tasks.sample_batch(cfg.task, key, n_seqs, n, n, Lpad))
    batches = jax.lax.map(lambda n: sample(stream(key_data, EVAL, n), n),
                          jnp.asarray(lengths, jnp.int32))
    per_length = [_metrics(params, jax.tree.map(lambda x, i=i: x[i], batches), L, L, Lpad,
                           apply, new_from) for i, L in enumerate(lengths)]
    return jax.tree.map(lambda *x: jnp.stack(x), *per_length)


def _metrics(params, batch, length, size: int, Lpad: int, apply, new_from: int) -> LengthEval:
    """The metrics of a batch of sequences of `length` tokens (traced or not) drawn padded to
    Lpad, the model run on the first `size` positions (length <= size <= Lpad); mean_attention
    padded back to Lpad with the zeros the padding's causal mask gives."""
    cut = lambda x: x[:, :size] if x.ndim == 2 else x  # [B, Lpad] fields; [B] stays
    batch = batch._replace(tokens=batch.tokens[:, :size], targets=cut(batch.targets),
                           mask=cut(batch.mask), length=jnp.full_like(batch.length, length))
    logits, att = apply(params, batch.tokens, batch.length)
    correct = (jnp.argmax(logits, -1) == batch.targets) & batch.mask
    acc = correct.sum() / jnp.maximum(batch.mask.sum(), 1)
    row = jnp.arange(size) if batch.mask.ndim == 2 else length - 1  # the scored rows' index
    new = batch.mask & (row >= new_from)
    acc_new = (correct & new).sum() / jnp.maximum(new.sum(), 1)
    if att.ndim >= 4:  # every-row attention [B, (layers,) H, L, L]: the last query row
        att = att.reshape(att.shape[0], -1, size, size)[:, :, length - 1, :]
    mean_AxL = att.mean(0)
    return LengthEval(acc, acc_new, jnp.pad(mean_AxL, ((0, 0), (0, Lpad - size))),
                      jnp.argmax(mean_AxL, -1) - (length - 1), mean_AxL.max(-1))


def program_lengths(lengths: tuple[int, ...], own_size: bool) -> tuple[int, ...]:
    """The lengths an evaluation program is compiled for: every length at its own size, or the
    longest alone (one program, called once per length)."""
    return lengths if own_size else (max(lengths),)


def per_seed(lengths: tuple[int, ...], cfg: RunConfig, n_seqs: int, apply, new_from: int,
             own_size: bool, sample=None):
    """one(params, key_data) -> a seed's LengthEval at every length of `lengths` (`own_size`:
    eval_each_at_its_size), or one(params, key_data, length) -> at that length, padded to the
    longest (eval_one_length)."""
    if own_size:
        return lambda params, key_data: eval_each_at_its_size(params, key_data, lengths, cfg,
                                                              n_seqs, apply, new_from, sample)
    return lambda params, key_data, length: eval_one_length(
        params, key_data, length, cfg, n_seqs, max(lengths), apply, new_from, sample)


def call_every_length(run, args: tuple, n: int, lengths: tuple[int, ...], own_size: bool, mesh):
    """`run`'s LengthEval at every length as host arrays with leading axes [n, n_lengths]: one
    call where its program holds every length (`own_size`), else one call per length, the
    length given to its n seeds or cells as the last argument."""
    if own_size:
        return jax.tree.map(np.asarray, to_host(run(*args)))
    out = [run(*args, place(np.full((n,), L, np.int32), mesh)) for L in lengths]
    return jax.tree.map(lambda *x: np.stack([np.asarray(v) for v in x], axis=1), *to_host(out))


@clears_on_change
@functools.lru_cache(maxsize=32)
def _evaluator(cfg: RunConfig, n_seqs: int, lengths: tuple[int, ...], devices: int | None,
               new_from: int, own_size: bool):
    """One compiled program per (config, sizes): reused for every checkpoint, and for every
    length (called once per length, the length an argument) or, `own_size`, every length in one
    call."""
    one = per_seed(lengths, cfg, n_seqs, models.make_apply(cfg, forward_only=True), new_from,
                   own_size)
    # lax.map: evaluation batches are large, so one seed at a time measured faster than vmap
    # (and holds 1/S of the activations)
    mesh = seed_mesh(len(cfg.train.seeds), devices)
    one_per_seed = lambda *args: jax.lax.map(lambda a: one(*a), args)
    return jax.jit(shard_seeds(one_per_seed, mesh),
                   compiler_options=train.compiler_options(cfg.train)), mesh


def evaluate(params_S, cfg: RunConfig, lengths, n_seqs: int = 4096,
             devices: int | None = None, new_from: int = 0, own_size: bool = False
             ) -> LengthEval:
    """Metrics for every seed x length: fields with leading axes [S, n_lengths], as host
    arrays on every process. `new_from` splits off the rows a shorter training never scored
    (accuracy_new). By default every length is padded to the longest, one program serving all
    lengths; `own_size`: the model reads each length at its own size (eval_each_at_its_size),
    which pays where the evaluation's work outweighs a compilation per length."""
    lengths = tuple(int(x) for x in lengths)
    run, mesh = _evaluator(cfg, n_seqs, program_lengths(lengths, own_size), devices, new_from,
                           own_size)
    params_S, keys_S = place((params_S, seed_keys(cfg.train.seeds)), mesh)
    return call_every_length(run, (params_S, keys_S), len(cfg.train.seeds), lengths, own_size,
                             mesh)
