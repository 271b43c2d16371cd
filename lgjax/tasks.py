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
from dataclasses import dataclass, replace
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


def _keys_and_lengths(key, batch: int, lmin: int, lmax: int):
    """A key per sequence and lengths uniform in [lmin, lmax]."""
    k_len, k_seq = jax.random.split(key)
    return (jax.random.split(k_seq, batch),
            jax.random.randint(k_len, (batch,), lmin, lmax + 1, dtype=jnp.int32))


def sample_batch(cfg: TaskConfig, key, batch: int, lmin: int, lmax: int, Lpad: int) -> Batch:
    """`batch` sequences with lengths uniform in [lmin, lmax], padded to Lpad."""
    task = TASKS[cfg.name]
    return jax.vmap(lambda k, n: task.sample(k, n, Lpad, cfg))(
        *_keys_and_lengths(key, batch, lmin, lmax))


# ==== contract study tasks (spec: contract.md, part 2) =========================================
# One vocabulary: content tokens 0..vocab-1, then the markers PAD, SET, MARK (input_vocab =
# vocab + 3). Each family is written in its content frame: content index u = 0..m-1, the query at
# u = m-1. The sequence is c = pad_prefix PAD tokens followed by the content (position p = c + u,
# length L = c + m), so the prefix moves the content and every relation the task defines
# together; the anchor slot counts from the content start. Training keeps pad_prefix = 0 (PAD
# never appears); the shift evaluation sets it. The same key, Lpad and content length give the
# same content at every c, which `sample_shift_pair` uses to draw matched pairs.

MAX_WRITES = 4  # ordered_update: 2..MAX_WRITES SET/value pairs (fewer when the content is short)
# ordered_update: a query-to-last-SET distance >= NEAR_FAR is "far". 16 is the clipped relative
# bias's clip (RelClipOptions.clip): past it that scheme cannot order SETs by position, and the
# steepest geometric ALiBi head (slope 1/4 at 4 heads) has already subtracted >= 4 logits; below
# it every scheme sees the distance. Training lengths 19..32 still hold far examples.
NEAR_FAR = 16


def pad_id(cfg: TaskConfig) -> int:
    return cfg.vocab


def set_id(cfg: TaskConfig) -> int:
    return cfg.vocab + 1


def mark_id(cfg: TaskConfig) -> int:
    return cfg.vocab + 2


@dataclass(frozen=True)
class FramedTask(Task):
    """A contract task: drawn in its content frame, then shifted right by `pad_prefix` PADs.

    `rule`, where the target is positional, states it in sequence positions (for `targets`); the
    frame is what the sampler reads. `evidence` locates the token the label depends on.
    """

    # (key, m, Lpad, cfg) -> (content int32 [Lpad], label int32 []), m = content length
    frame: Callable | None = None
    # (tokens [..., Lpad], length [...], cfg) -> the evidence's sequence position [...]
    evidence: Callable | None = None
    check: Callable[[TaskConfig], None] = lambda cfg: None  # family-specific field checks

    def sample(self, key, length, Lpad: int, cfg: TaskConfig) -> Example:
        c = cfg.pad_prefix
        content, label = self.frame(key, length - c, Lpad, cfg)
        pos = jnp.arange(Lpad)
        tokens = jnp.where(pos < c, pad_id(cfg), content[jnp.clip(pos - c, 0, Lpad - 1)])
        return Example(jnp.where(pos < length, tokens, 0).astype(jnp.int32), length,
                       jnp.asarray(label, jnp.int32), jnp.array(True))

    def validate(self, cfg: TaskConfig, lmin: int, lmax: int) -> None:
        super().validate(cfg, lmin, lmax)
        self.check(cfg)


def _noise(key, Lpad, cfg):
    return jax.random.randint(key, (Lpad,), 0, cfg.vocab, dtype=jnp.int32)


def _anchor_frame(key, m, Lpad, cfg):
    content = _noise(key, Lpad, cfg)
    return content, content[cfg.anchor_slot]


def _offset_copy_frame(key, m, Lpad, cfg):
    content = _noise(key, Lpad, cfg)
    return content, content[m - 1 - cfg.copy_offset]


def _update_frame(key, m, Lpad, cfg):
    """w SET/value pairs among noise; the last SET sits `dist` before the query (m - 1).

    w is uniform in 2..4, capped at (m-1)//2 so the pairs fit. dist is near (uniform in
    [2, NEAR_FAR)) or, with probability 1/2 when the content leaves room, far (uniform in
    [NEAR_FAR, d_max], d_max = m + 1 - 2w: the earlier pairs packed at the start). The earlier
    w-1 pairs are uniform over non-overlapping placements before the last SET; the w values are
    distinct, so an answer names the write it read. (One uniform draw feeds every choice: each
    random call compiles its own generator, and this sampler is traced once per run.)
    """
    k_noise, k_u = jax.random.split(key)
    u = jax.random.uniform(k_u, (4 + Lpad + cfg.vocab,))
    (u_w, u_far, u_near, u_dfar), u_place, u_val = u[:4], u[4:4 + Lpad], u[4 + Lpad:]
    w = jnp.minimum(_between(u_w, 2, MAX_WRITES + 1), (m - 1) // 2)
    d_max = m + 1 - 2 * w
    near = _between(u_near, 2, jnp.minimum(NEAR_FAR, d_max + 1))
    dist = jnp.where((u_far < 0.5) & (d_max >= NEAR_FAR), _between(u_dfar, NEAR_FAR, d_max + 1),
                     near)
    last = m - 1 - dist
    # placing w-1 two-token pairs in [0, last) = choosing w-1 of last-(w-1) folded slots; the
    # r-th chosen slot (sorted) unfolds to slot + r. Unused picks go past Lpad and are dropped.
    folded = jnp.where(jnp.arange(Lpad) < last - (w - 1), u_place, 2.0)
    rank = jnp.arange(MAX_WRITES - 1)
    chosen = jnp.sort(jnp.where(rank < w - 1, jnp.argsort(folded)[: MAX_WRITES - 1], 2 * Lpad))
    starts = jnp.append(chosen + rank, last)
    values = jnp.argsort(u_val)[:MAX_WRITES].astype(jnp.int32)  # distinct, uniform
    content = _noise(k_noise, Lpad, cfg).at[starts].set(set_id(cfg), mode="drop")
    return content.at[starts + 1].set(values, mode="drop"), values[-1]


def _between(u, lo, hi):
    """An integer uniform in [lo, hi) from u uniform in [0, 1) (hi > lo, possibly traced)."""
    return jnp.minimum(lo + jnp.floor(u * (hi - lo)).astype(jnp.int32), hi - 1)


def _periodic_frame(key, m, Lpad, cfg):
    """Records of length P from a random phase `start`; only the first begins with MARK."""
    k_noise, k_phase = jax.random.split(key)
    start = jax.random.randint(k_phase, (), 0, cfg.period)
    content = _noise(k_noise, Lpad, cfg).at[start].set(mark_id(cfg))
    return content, (m - 1 - start) % cfg.period


def _last_marker(tokens, length, marker):
    pos = jnp.arange(tokens.shape[-1])
    inside = (tokens == marker) & (pos < jnp.asarray(length)[..., None])
    return jnp.max(jnp.where(inside, pos, -1), axis=-1)


def last_set_distance(tokens, length, cfg: TaskConfig):
    """ordered_update: query position minus the last SET's position ([...] for [..., Lpad])."""
    return jnp.asarray(length) - 1 - _last_marker(tokens, length, set_id(cfg))


def distance_bin(tokens, length, cfg: TaskConfig):
    """ordered_update: 0 = near (distance < NEAR_FAR), 1 = far."""
    return (last_set_distance(tokens, length, cfg) >= NEAR_FAR).astype(jnp.int32)


def _check_update(cfg: TaskConfig) -> None:
    require(cfg.vocab >= MAX_WRITES, "task.vocab", f"ordered_update draws {MAX_WRITES} distinct "
            f"values but vocab={cfg.vocab}; use vocab >= {MAX_WRITES}")


def _check_period(cfg: TaskConfig) -> None:
    require(cfg.period >= 2, "task.period", f"a period of {cfg.period} leaves one phase; use >= 2")


_markers = lambda c: c.vocab + 3  # content tokens, PAD, SET, MARK

CONTRACT_TASKS: dict[str, FramedTask] = {
    "absolute_anchor": FramedTask(
        "last", lambda c: c.pad_prefix + c.anchor_slot + 2,
        rule=lambda pos, L, c: _where(pos == L - 1, 0 * pos + c.pad_prefix + c.anchor_slot),
        params=("anchor_slot", "pad_prefix"), input_vocab=_markers, frame=_anchor_frame,
        evidence=lambda t, L, c: jnp.full(jnp.shape(L), c.pad_prefix + c.anchor_slot)),
    "offset_copy": FramedTask(
        "last", lambda c: c.pad_prefix + c.copy_offset + 1,
        rule=lambda pos, L, c: _where(pos == L - 1, pos - c.copy_offset),
        params=("copy_offset", "pad_prefix"), input_vocab=_markers, frame=_offset_copy_frame,
        evidence=lambda t, L, c: jnp.asarray(L) - 1 - c.copy_offset),
    "ordered_update": FramedTask(
        "last", lambda c: c.pad_prefix + 5, params=("pad_prefix",), input_vocab=_markers,
        frame=_update_frame, check=_check_update,
        evidence=lambda t, L, c: _last_marker(t, L, set_id(c)) + 1),
    "periodic_marker": FramedTask(
        "last", lambda c: c.pad_prefix + c.period + 1, params=("period", "pad_prefix"),
        input_vocab=_markers, num_classes=lambda c: c.period, frame=_periodic_frame,
        check=_check_period, evidence=lambda t, L, c: _last_marker(t, L, mark_id(c))),
}
TASKS.update(CONTRACT_TASKS)


def sample_shift_pair(cfg: TaskConfig, key, batch: int, lmin: int, lmax: int, Lpad: int,
                      shift: int) -> tuple[Batch, Batch]:
    """Matched batches for shift consistency: lengths uniform in [lmin, lmax] under `cfg`, and
    the same sequences (same keys, same content) behind `shift` more PADs, length + shift."""
    task = TASKS[cfg.name]
    require(isinstance(task, FramedTask), "task.name", f"task {cfg.name!r} has no PAD prefix; "
            f"pick one of {sorted(CONTRACT_TASKS)}")
    require(shift >= 0, "shift", f"must be >= 0, got {shift}")
    require(lmax + shift <= Lpad, "shift", f"length {lmax} + shift {shift} exceeds the padded "
            f"length {Lpad}; lower the shift or the length, or raise Lpad")
    task.validate(cfg, lmin, lmax)
    moved = replace(cfg, pad_prefix=cfg.pad_prefix + shift)
    keys, lengths = _keys_and_lengths(key, batch, lmin, lmax)
    plain = jax.vmap(lambda k, n: task.sample(k, n, Lpad, cfg))(keys, lengths)
    return plain, jax.vmap(lambda k, n: task.sample(k, n + shift, Lpad, moved))(keys, lengths)
