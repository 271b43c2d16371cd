"""Task registry: a task is a target rule plus a sampler with static shapes.

A positional task is its rule `t(i)`: the key position row i of a length-L sequence must read
(-1: the row is not scored). `Task.targets(length, cfg)` gives it as an int array for the
training-free scores; the sampler builds every label as `tokens[t(i)]` from the same rule, so
labels are correct by construction and the two cannot disagree. Content-dependent tasks
(two_offset, induction) have no positional rule (`rule=None`) and a sampler of their own.

Every sequence is padded to a static length `Lpad`; positions >= `length` are padding (token 0,
never attended, never scored). Tasks that score only the last position ("last") have scalar
targets; the others ("all") a target per row and a mask of scored rows. A batch adds a leading
axis with vmap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from lgjax.config import TaskConfig, require


class Example(NamedTuple):
    tokens: jax.Array  # int32 [Lpad]; positions >= length are padding
    length: jax.Array  # int32 []
    targets: jax.Array  # int32 [] (rows="last") or [Lpad] (rows="all")
    mask: jax.Array  # bool, same shape as targets: which targets are scored


Batch = Example  # the same fields with a leading batch axis (and a seed axis in the trainer)

Rule = Callable  # (pos int[...], length, TaskConfig) -> key position per row, -1 = not scored


@dataclass(frozen=True)
class Task:
    rows: str  # "last": only the query n = L-1 is scored; "all": every row with a target
    min_length: Callable[[TaskConfig], int]  # shortest length with a scored row
    rule: Rule | None = None  # positional target rule; None: the target depends on content
    sample_content: Callable | None = None  # sampler of a content-dependent task
    params: tuple[str, ...] = ()  # the TaskConfig fields this task reads (besides vocab)
    input_vocab: Callable[[TaskConfig], int] = lambda c: c.vocab
    num_classes: Callable[[TaskConfig], int] = lambda c: c.vocab

    def targets(self, length: int, cfg: TaskConfig) -> np.ndarray:
        """int[length]: the key position each row must read, -1 where no row is scored."""
        if self.rule is None:
            return np.full(length, -1, np.int64)
        pos = np.arange(length)
        t = np.broadcast_to(np.asarray(self.rule(pos, length, cfg)), (length,))
        return np.where((t >= 0) & (t <= pos), t, -1)

    def sample(self, key, length, Lpad: int, cfg: TaskConfig) -> Example:
        if self.rule is None:
            return self.sample_content(key, length, Lpad, cfg)
        tokens, pos = _content(key, length, Lpad, cfg.vocab)
        if self.rows == "last":
            return Example(tokens, length, tokens[self.rule(length - 1, length, cfg)],
                           jnp.array(True))
        targets, mask = _rows(tokens, length, self.rule(pos, length, cfg))
        return Example(tokens, length, targets, mask)

    def validate(self, cfg: TaskConfig, lmin: int, lmax: int) -> None:
        for name in self.params:
            require(getattr(cfg, name) >= 0, f"task.{name}", "offsets and slots must be >= 0")
        need = self.min_length(cfg)
        shown = ", ".join(f"{n}={getattr(cfg, n)}" for n in self.params) or "its rule"
        require(lmin >= need, f"task.{'/task.'.join(self.params) or 'name'}/train.lmin",
                f"task {cfg.name!r} with {shown} needs sequences of length >= {need} but the "
                f"shortest length is {lmin}; lower the offset/slot or raise the length")


def _content(key, length, Lpad, vocab):
    pos = jnp.arange(Lpad)
    toks = jax.random.randint(key, (Lpad,), 0, vocab, dtype=jnp.int32)
    return jnp.where(pos < length, toks, 0), pos


def _rows(tokens, length, target_pos):
    """Per-row labels tokens[t(i)] for scored rows (a target, causal, inside the sequence)."""
    pos = jnp.arange(tokens.shape[0])
    scored = (pos < length) & (target_pos >= 0) & (target_pos <= pos)
    labels = jnp.take(tokens, jnp.clip(target_pos, 0, tokens.shape[0] - 1))
    return jnp.where(scored, labels, 0), scored


def _where(cond, value):
    """-1 where the row has no target; numpy for `Task.targets`, jnp inside a trace."""
    return (jnp if isinstance(cond, jax.Array) else np).where(cond, value, -1)


# ---- positional rules: (pos, length, cfg) -> target position or -1 -------------------------

def _last_back(pos, length, cfg):
    return _where(pos == length - 1, pos - cfg.offset)


def _back(pos, length, cfg):
    return _where(pos >= cfg.offset, pos - cfg.offset)


def _prev(pos, length, cfg):
    return _where(pos >= 1, pos - 1)


def _first(pos, length, cfg):
    return _where(pos >= 1, 0 * pos)


def _slot(pos, length, cfg):
    return _where(pos > cfg.slot, 0 * pos + cfg.slot)


def _copy(pos, length, cfg):
    """Second half copies the first: h = L // 2, row i >= h reads i - h."""
    return _where(pos >= length // 2, pos - length // 2)


def _reverse(pos, length, cfg):
    """Mirror: h = L // 2, row i >= h reads L - 1 - i."""
    return _where(pos >= length // 2, length - 1 - pos)


# ---- content-dependent samplers --------------------------------------------------------------

def _two_offset(key, length, Lpad, cfg):
    """The query holds a mode token (vocab or vocab+1) that picks offset or offset2."""
    k_tok, k_mode = jax.random.split(key)
    tokens, pos = _content(k_tok, length, Lpad, cfg.vocab)
    mode = jax.random.bernoulli(k_mode).astype(jnp.int32)
    tokens = jnp.where(pos == length - 1, cfg.vocab + mode, tokens)
    offset = jnp.where(mode == 1, cfg.offset2, cfg.offset)
    return Example(tokens, length, tokens[length - 1 - offset], jnp.array(True))


def _induction(key, length, Lpad, cfg):
    """Row i reads the token after the previous occurrence of tokens[i] (if any)."""
    tokens, pos = _content(key, length, Lpad, cfg.vocab)
    same_PxP = (tokens[:, None] == tokens[None, :]) & (pos[None, :] < pos[:, None])
    prev_occ = jnp.max(jnp.where(same_PxP, pos[None, :], -1), axis=1)
    targets, mask = _rows(tokens, length, jnp.where(prev_occ >= 0, prev_occ + 1, -1))
    return Example(tokens, length, targets, mask)


TASKS: dict[str, Task] = {
    "fixed_offset": Task("last", lambda c: c.offset + 1, _last_back, params=("offset",)),
    "two_offset": Task("last", lambda c: max(c.offset, c.offset2) + 1,
                       sample_content=_two_offset, params=("offset", "offset2"),
                       input_vocab=lambda c: c.vocab + 2),
    "shift": Task("all", lambda c: c.offset + 1, _back, params=("offset",)),
    "skip": Task("all", lambda c: c.offset + 1, _back, params=("offset",)),
    "prev": Task("all", lambda c: 2, _prev),
    "first": Task("all", lambda c: 2, _first),
    "pos": Task("all", lambda c: c.slot + 2, _slot, params=("slot",)),
    "copy": Task("all", lambda c: 2, _copy),
    "reverse": Task("all", lambda c: 2, _reverse),
    "induction": Task("all", lambda c: 2, sample_content=_induction),
}


def sample_batch(cfg: TaskConfig, key, batch: int, lmin: int, lmax: int, Lpad: int) -> Batch:
    """`batch` sequences with lengths uniform in [lmin, lmax], padded to Lpad."""
    k_len, k_seq = jax.random.split(key)
    lengths = jax.random.randint(k_len, (batch,), lmin, lmax + 1, dtype=jnp.int32)
    keys = jax.random.split(k_seq, batch)
    task = TASKS[cfg.name]
    return jax.vmap(lambda k, n: task.sample(k, n, Lpad, cfg))(keys, lengths)
