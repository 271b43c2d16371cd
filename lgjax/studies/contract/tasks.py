"""The contract study's four task families (docs/studies/contract.md, the trained matrix),
registered into the core task registry at import, each with its own options."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import jax
import jax.numpy as jnp

from lgjax.config import TaskConfig
from lgjax.errors import require
from lgjax.plugins import register_task
from lgjax.tasks import TASKS, Batch, Example, Task, _keys_and_lengths, where_target

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


@dataclass(frozen=True)
class UpdateOptions:
    pad_prefix: int = 0  # PAD tokens before the content (0 in training; the shift evaluation)


@dataclass(frozen=True)
class AnchorOptions:
    anchor_slot: int = 2  # the label is the content token at this slot (0 = first)
    pad_prefix: int = 0  # PAD tokens before the content (0 in training; the shift evaluation)


@dataclass(frozen=True)
class CopyOptions:
    copy_offset: int = 3  # the label is the token this many positions before the query
    pad_prefix: int = 0  # PAD tokens before the content (0 in training; the shift evaluation)


@dataclass(frozen=True)
class PeriodOptions:
    period: int = 5  # record length P; the label is the query's phase (chance 1/P)
    pad_prefix: int = 0  # PAD tokens before the content (0 in training; the shift evaluation)


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
        c = cfg.opts.pad_prefix
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
    return content, content[cfg.opts.anchor_slot]


def _offset_copy_frame(key, m, Lpad, cfg):
    content = _noise(key, Lpad, cfg)
    return content, content[m - 1 - cfg.opts.copy_offset]


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
    start = jax.random.randint(k_phase, (), 0, cfg.opts.period)
    content = _noise(k_noise, Lpad, cfg).at[start].set(mark_id(cfg))
    return content, (m - 1 - start) % cfg.opts.period


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
    require(cfg.opts.period >= 2, "task.opts.period",
            f"a period of {cfg.opts.period} leaves one phase; use >= 2")


_markers = lambda c: c.vocab + 3  # content tokens, PAD, SET, MARK

CONTRACT_TASKS: dict[str, FramedTask] = {
    "absolute_anchor": FramedTask(
        "last", lambda c: c.opts.pad_prefix + c.opts.anchor_slot + 2,
        rule=lambda pos, L, c: where_target(pos == L - 1,
                                      0 * pos + c.opts.pad_prefix + c.opts.anchor_slot),
        options=AnchorOptions, input_vocab=_markers, frame=_anchor_frame,
        evidence=lambda t, L, c: jnp.full(jnp.shape(L), c.opts.pad_prefix + c.opts.anchor_slot)),
    "offset_copy": FramedTask(
        "last", lambda c: c.opts.pad_prefix + c.opts.copy_offset + 1,
        rule=lambda pos, L, c: where_target(pos == L - 1, pos - c.opts.copy_offset),
        options=CopyOptions, input_vocab=_markers, frame=_offset_copy_frame,
        evidence=lambda t, L, c: jnp.asarray(L) - 1 - c.opts.copy_offset),
    "ordered_update": FramedTask(
        "last", lambda c: c.opts.pad_prefix + 5, options=UpdateOptions, input_vocab=_markers,
        frame=_update_frame, check=_check_update,
        evidence=lambda t, L, c: _last_marker(t, L, set_id(c)) + 1),
    "periodic_marker": FramedTask(
        "last", lambda c: c.opts.pad_prefix + c.opts.period + 1, options=PeriodOptions,
        input_vocab=_markers, num_classes=lambda c: c.opts.period, frame=_periodic_frame,
        check=_check_period, evidence=lambda t, L, c: _last_marker(t, L, mark_id(c))),
}
for _name, _task in CONTRACT_TASKS.items():
    register_task(_name, _task)


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
    moved = replace(cfg, opts=replace(cfg.opts, pad_prefix=cfg.opts.pad_prefix + shift))
    keys, lengths = _keys_and_lengths(key, batch, lmin, lmax)
    plain = jax.vmap(lambda k, n: task.sample(k, n, Lpad, cfg))(keys, lengths)
    return plain, jax.vmap(lambda k, n: task.sample(k, n + shift, Lpad, moved))(keys, lengths)
