"""Task registry: pure samplers `key, length -> Example` with static shapes.

Every task is written for one sequence padded to a static length `Lpad`; positions >= `length`
are padding (token 0, never attended, never scored). A batch adds a leading axis with vmap.
Tasks that score only the last position ("last") have scalar targets; the others ("all") have a
target per row and a mask of scored rows. Every label is `tokens[t(i)]` for the task's target
position t(i), so labels are correct by construction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp

from lgjax.config import TaskConfig, require


class Example(NamedTuple):
    tokens: jax.Array  # int32 [Lpad]; positions >= length are padding
    length: jax.Array  # int32 []
    targets: jax.Array  # int32 [] (rows="last") or [Lpad] (rows="all")
    mask: jax.Array  # bool, same shape as targets: which targets are scored


Batch = Example  # the same fields with a leading batch axis (and a seed axis in the trainer)


@dataclass(frozen=True)
class Task:
    sample: Callable[[jax.Array, jax.Array, int, TaskConfig], Example]
    rows: str  # "last" or "all"
    min_length: Callable[[TaskConfig], int]  # shortest length where every scored row has a target
    input_vocab: Callable[[TaskConfig], int] = lambda c: c.vocab
    num_classes: Callable[[TaskConfig], int] = lambda c: c.vocab

    def validate(self, cfg: TaskConfig, lmin: int, lmax: int) -> None:
        need = self.min_length(cfg)
        require(cfg.K >= 0, "task.K", "offsets and slots must be >= 0")
        require(lmin >= need, "task.K/train.lmin", f"task {cfg.name!r} with K={cfg.K}, "
                f"K1={cfg.K1} needs sequences of length >= {need} but train.lmin={lmin}; "
                "lower K or raise lmin")


def _content(key, length, Lpad, vocab):
    pos = jnp.arange(Lpad)
    toks = jax.random.randint(key, (Lpad,), 0, vocab, dtype=jnp.int32)
    return jnp.where(pos < length, toks, 0), pos


def _rows(tokens, length, target_pos, valid):
    """Per-row labels tokens[target_pos[i]] for scored rows (valid and inside the sequence)."""
    pos = jnp.arange(tokens.shape[0])
    scored = valid & (pos < length) & (target_pos >= 0) & (target_pos <= pos)
    labels = jnp.take(tokens, jnp.clip(target_pos, 0, tokens.shape[0] - 1))
    return jnp.where(scored, labels, 0), scored


def fixed_offset(key, length, Lpad, cfg):
    tokens, _ = _content(key, length, Lpad, cfg.vocab)
    return Example(tokens, length, tokens[length - 1 - cfg.K], jnp.array(True))


def two_offset(key, length, Lpad, cfg):
    """The query holds a mode token (vocab or vocab+1) that picks offset K or K1."""
    k_tok, k_mode = jax.random.split(key)
    tokens, pos = _content(k_tok, length, Lpad, cfg.vocab)
    mode = jax.random.bernoulli(k_mode).astype(jnp.int32)
    tokens = jnp.where(pos == length - 1, cfg.vocab + mode, tokens)
    offset = jnp.where(mode == 1, cfg.K1, cfg.K)
    return Example(tokens, length, tokens[length - 1 - offset], jnp.array(True))


def _per_row(target_fn):
    """Build a sampler from a target-position rule t(i) (returns position array, scored mask)."""

    def sample(key, length, Lpad, cfg):
        tokens, pos = _content(key, length, Lpad, cfg.vocab)
        target_pos, valid = target_fn(tokens, length, pos, cfg)
        targets, mask = _rows(tokens, length, target_pos, valid)
        return Example(tokens, length, targets, mask)

    return sample


def _back_k(tokens, length, pos, cfg):
    return pos - cfg.K, pos >= cfg.K


def _prev(tokens, length, pos, cfg):
    return pos - 1, pos >= 1


def _first(tokens, length, pos, cfg):
    return jnp.zeros_like(pos), pos >= 0


def _slot_k(tokens, length, pos, cfg):
    return jnp.full_like(pos, cfg.K), pos >= cfg.K


def _copy(tokens, length, pos, cfg):
    """Second half copies the first: row i >= h = ceil(L/2) attends to i - h."""
    half = (length + 1) // 2
    return pos - half, pos >= half


def _reverse(tokens, length, pos, cfg):
    """Mirrored layout: row i in the second half attends to L-1-i."""
    return length - 1 - pos, pos >= length // 2 + length % 2


def _induction(tokens, length, pos, cfg):
    """Row i attends to the token after the previous occurrence of tokens[i] (if any)."""
    same_PxP = (tokens[:, None] == tokens[None, :]) & (pos[None, :] < pos[:, None])
    prev_occ = jnp.max(jnp.where(same_PxP, pos[None, :], -1), axis=1)
    return prev_occ + 1, prev_occ >= 0


TASKS: dict[str, Task] = {
    "fixed_offset": Task(fixed_offset, "last", lambda c: c.K + 1),
    "two_offset": Task(two_offset, "last", lambda c: max(c.K, c.K1) + 1,
                       input_vocab=lambda c: c.vocab + 2),
    "shift": Task(_per_row(_back_k), "all", lambda c: c.K + 1),
    "skip": Task(_per_row(_back_k), "all", lambda c: c.K + 1),
    "prev": Task(_per_row(_prev), "all", lambda c: 2),
    "first": Task(_per_row(_first), "all", lambda c: 1),
    "pos": Task(_per_row(_slot_k), "all", lambda c: c.K + 1),
    "copy": Task(_per_row(_copy), "all", lambda c: 2),
    "reverse": Task(_per_row(_reverse), "all", lambda c: 2),
    "induction": Task(_per_row(_induction), "all", lambda c: 2),
}


def sample_batch(cfg: TaskConfig, key, batch: int, lmin: int, lmax: int, Lpad: int) -> Batch:
    """`batch` sequences with lengths uniform in [lmin, lmax], padded to Lpad."""
    k_len, k_seq = jax.random.split(key)
    lengths = jax.random.randint(k_len, (batch,), lmin, lmax + 1, dtype=jnp.int32)
    keys = jax.random.split(k_seq, batch)
    sample = TASKS[cfg.name].sample
    return jax.vmap(lambda k, n: sample(k, n, Lpad, cfg))(keys, lengths)
