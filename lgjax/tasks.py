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

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from lgjax.errors import require
from lgjax.registry import Registry


class Example(NamedTuple):
    tokens: jax.Array  # int32 [Lpad]; positions >= length are padding
    length: jax.Array  # int32 []
    targets: jax.Array  # int32 [] (rows="last") or [Lpad] (rows="all")
    mask: jax.Array  # bool, same shape as targets: which targets are scored


Batch = Example  # the same fields with a leading batch axis (and a seed axis in the trainer)

Rule = Callable  # (pos int[...], length, TaskConfig) -> key position per row, -1 = not scored


@dataclass(frozen=True)
class NoOptions:
    """A task without knobs."""


@dataclass(frozen=True)
class OffsetOptions:
    offset: int = 1  # row i reads i - offset (fixed_offset: the query only)


@dataclass(frozen=True)
class TwoOffsetOptions:
    offset: int = 1  # the offset the first mode token picks
    offset2: int = 3  # the offset the second mode token picks


@dataclass(frozen=True)
class SlotOptions:
    slot: int = 2  # every row i > slot reads the absolute position `slot`


@dataclass(frozen=True)
class Task:
    """A task: which rows are scored and the key position each must read (a positional
    `rule(pos, length, cfg)`, written with `where_target`), or a sampler of its own for a
    content-dependent task; its knobs are its `options`, read as `cfg.opts.<knob>`."""

    rows: str  # "last": only the query n = L-1 is scored; "all": every row with a target
    min_length: Callable  # shortest length with a scored row
    rule: Rule | None = None  # positional target rule; None: the target depends on content
    sample_content: Callable | None = None  # sampler of a content-dependent task
    options: type = NoOptions  # its knobs: a frozen dataclass with defaults (TaskConfig.opts)
    input_vocab: Callable = lambda c: c.vocab
    num_classes: Callable = lambda c: c.vocab

    def targets(self, length: int, cfg) -> np.ndarray:
        """int[length]: the key position each row must read, -1 where no row is scored."""
        if self.rule is None:
            return np.full(length, -1, np.int64)
        pos = np.arange(length)
        t = np.broadcast_to(np.asarray(self.rule(pos, length, cfg)), (length,))
        return np.where((t >= 0) & (t <= pos), t, -1)

    def sample(self, key, length, Lpad: int, cfg) -> Example:
        if self.rule is None:
            return self.sample_content(key, length, Lpad, cfg)
        tokens, pos = _content(key, length, Lpad, cfg.vocab)
        if self.rows == "last":
            return Example(tokens, length, tokens[self.rule(length - 1, length, cfg)],
                           jnp.array(True))
        targets, mask = _rows(tokens, length, self.rule(pos, length, cfg))
        return Example(tokens, length, targets, mask)

    def validate(self, cfg, lmin: int, lmax: int) -> None:
        knobs = [f.name for f in dataclasses.fields(cfg.opts)]
        for name in knobs:
            require(getattr(cfg.opts, name) >= 0, f"task.opts.{name}",
                    "offsets and slots must be >= 0")
        need = self.min_length(cfg)
        shown = ", ".join(f"{n}={getattr(cfg.opts, n)}" for n in knobs) or "its rule"
        require(lmin >= need, f"task.opts.{'/task.opts.'.join(knobs) or 'name'}/train.lmin",
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


def where_target(cond, value):
    """-1 where the row has no target; numpy for `Task.targets`, jnp inside a trace."""
    return (jnp if isinstance(cond, jax.Array) else np).where(cond, value, -1)


# ---- positional rules: (pos, length, cfg) -> target position or -1 -------------------------

def _last_back(pos, length, cfg):
    return where_target(pos == length - 1, pos - cfg.opts.offset)


def _back(pos, length, cfg):
    return where_target(pos >= cfg.opts.offset, pos - cfg.opts.offset)


def _prev(pos, length, cfg):
    return where_target(pos >= 1, pos - 1)


def _first(pos, length, cfg):
    return where_target(pos >= 1, 0 * pos)


def _slot(pos, length, cfg):
    return where_target(pos > cfg.opts.slot, 0 * pos + cfg.opts.slot)


def _copy(pos, length, cfg):
    """Second half copies the first: h = L // 2, row i >= h reads i - h."""
    return where_target(pos >= length // 2, pos - length // 2)


def _reverse(pos, length, cfg):
    """Mirror: h = L // 2, row i >= h reads L - 1 - i."""
    return where_target(pos >= length // 2, length - 1 - pos)


# ---- content-dependent samplers --------------------------------------------------------------

def _two_offset(key, length, Lpad, cfg):
    """The query holds a mode token (vocab or vocab+1) that picks offset or offset2."""
    k_tok, k_mode = jax.random.split(key)
    tokens, pos = _content(k_tok, length, Lpad, cfg.vocab)
    mode = jax.random.bernoulli(k_mode).astype(jnp.int32)
    tokens = jnp.where(pos == length - 1, cfg.vocab + mode, tokens)
    offset = jnp.where(mode == 1, cfg.opts.offset2, cfg.opts.offset)
    return Example(tokens, length, tokens[length - 1 - offset], jnp.array(True))


def _induction(key, length, Lpad, cfg):
    """Row i reads the token after the previous occurrence of tokens[i] (if any)."""
    tokens, pos = _content(key, length, Lpad, cfg.vocab)
    same_PxP = (tokens[:, None] == tokens[None, :]) & (pos[None, :] < pos[:, None])
    prev_occ = jnp.max(jnp.where(same_PxP, pos[None, :], -1), axis=1)
    targets, mask = _rows(tokens, length, jnp.where(prev_occ >= 0, prev_occ + 1, -1))
    return Example(tokens, length, targets, mask)


TASKS: Registry = Registry("task", {
    "fixed_offset": Task("last", lambda c: c.opts.offset + 1, _last_back, options=OffsetOptions),
    "two_offset": Task("last", lambda c: max(c.opts.offset, c.opts.offset2) + 1,
                       sample_content=_two_offset, options=TwoOffsetOptions,
                       input_vocab=lambda c: c.vocab + 2),
    "shift": Task("all", lambda c: c.opts.offset + 1, _back, options=OffsetOptions),
    "skip": Task("all", lambda c: c.opts.offset + 1, _back, options=OffsetOptions),
    "prev": Task("all", lambda c: 2, _prev),
    "first": Task("all", lambda c: 2, _first),
    "pos": Task("all", lambda c: c.opts.slot + 2, _slot, options=SlotOptions),
    "copy": Task("all", lambda c: 2, _copy),
    "reverse": Task("all", lambda c: 2, _reverse),
    "induction": Task("all", lambda c: 2, sample_content=_induction),
})


def _keys_and_lengths(key, batch: int, lmin: int, lmax: int):
    """A key per sequence and lengths uniform in [lmin, lmax]."""
    k_len, k_seq = jax.random.split(key)
    return (jax.random.split(k_seq, batch),
            jax.random.randint(k_len, (batch,), lmin, lmax + 1, dtype=jnp.int32))


def sample_batch(cfg, key, batch: int, lmin: int, lmax: int, Lpad: int) -> Batch:
    """`batch` sequences with lengths uniform in [lmin, lmax], padded to Lpad."""
    task = TASKS[cfg.name]
    return jax.vmap(lambda k, n: task.sample(k, n, Lpad, cfg))(
        *_keys_and_lengths(key, batch, lmin, lmax))
