"""Validation of a whole RunConfig against the registries, before anything traces or compiles.

Every error is a ConfigError naming the field and the fix (the CLI prints it as one line)."""

from __future__ import annotations

import math

from lgjax import encodings, tasks
from lgjax.config import RunConfig, require

MAX_CHECKPOINTS = 100_000  # a run's step folders (each a state on disk; the list is in memory)

RANDOM_POSITIONS = "train.random_positions (--random-positions)"


def validate(cfg: RunConfig, eval_lengths: tuple[int, ...] = ()) -> None:
    """Check every field that could fail later inside a trace; raise ConfigError naming it."""
    m, t, k = cfg.model, cfg.train, cfg.task
    require(k.name in tasks.TASKS, "task.name", f"unknown task {k.name!r}; choose one of "
            f"{sorted(tasks.TASKS)}")
    require(m.encoding in encodings.ENCODINGS, "model.encoding", f"unknown encoding "
            f"{m.encoding!r}; choose one of {sorted(encodings.ENCODINGS)}")
    require(m.d > 0 and m.heads > 0, "model.d/model.heads", "must be positive")
    require(m.d % m.heads == 0, "model.d", f"width d={m.d} is not divisible by heads={m.heads}; "
            "pick d a multiple of heads")
    require(m.arch in ("head", "transformer"), "model.arch", "use 'head' or 'transformer'")
    require(m.arch == "head" or m.layers >= 1, "model.layers", "must be >= 1")
    require(m.attention in ("softmax", "linear"), "model.attention", "use 'softmax' or 'linear'")
    require(m.query in ("last", "all"), "model.query", "use 'last' or 'all'")
    require(m.temperature > 0, "model.temperature", "must be > 0")
    require(t.lmin >= 1 and t.lmax >= t.lmin, "train.lmin/train.lmax",
            f"need 1 <= lmin <= lmax, got [{t.lmin}, {t.lmax}]")
    require(t.steps >= 1 and t.batch >= 1, "train.steps/train.batch", "must be >= 1")
    require(math.isfinite(t.lr) and t.lr > 0, "train.lr", f"must be a finite number > 0, got "
            f"{t.lr} (a negative rate trains uphill)")
    require(math.isfinite(t.weight_decay) and t.weight_decay >= 0, "train.weight_decay",
            f"must be a finite number >= 0, got {t.weight_decay}")
    require(len(t.seeds) >= 1, "train.seeds", "give at least one seed")
    require(len(set(t.seeds)) == len(t.seeds), "train.seeds", "seed ids must be distinct")
    require(t.seed_axis in ("auto", "vmap", "map", "blocks"), "train.seed_axis",
            "use auto, vmap, map or blocks")
    require(t.ckpt_every >= 1 and t.chunk >= 1, "train.ckpt_every/train.chunk", "must be >= 1")
    require(t.steps < 2**31, "train.steps", f"{t.steps} does not fit the int32 step counter; "
            "give fewer steps")
    saves = t.steps // t.ckpt_every
    require(saves <= MAX_CHECKPOINTS, "train.steps", f"{t.steps} steps save a checkpoint "
            f"every {t.ckpt_every}: {saves} checkpoints, more than {MAX_CHECKPOINTS}; give fewer "
            "steps or raise train.ckpt_every")
    require(k.vocab >= 2, "task.vocab", "need at least 2 content tokens")
    tasks.TASKS[k.name].validate(k, t.lmin, t.lmax)
    need = tasks.TASKS[k.name].min_length(k)
    short = [L for L in eval_lengths if L < need]
    require(not short, "eval lengths", f"{short} too short: task {k.name!r} scores no row "
            f"below length {need}; evaluate at lengths >= {need}")
    rows_needed = tasks.TASKS[k.name].rows
    require(rows_needed == "all" or m.query == "last", "model.query",
            f"task {k.name!r} scores the last position; set query='last'")
    require(rows_needed == "last" or m.query == "all", "model.query",
            f"task {k.name!r} scores every position; set query='all'")
    M = t.random_positions
    require(isinstance(M, int) and not isinstance(M, bool) and M >= 0, RANDOM_POSITIONS,
            f"must be an integer >= 0 (M; 0 = off), got {M!r}")
    if M:
        longest = max((t.lmax, *eval_lengths))
        require(M >= longest, RANDOM_POSITIONS, f"M = {M} is below the longest "
                f"{'evaluation' if longest > t.lmax else 'training'} length {longest}: positions "
                f"0..{longest - 1} must lie in the trained range [0, M); raise M to >= {longest}")
        size = getattr(m.enc, "size", None)  # a learned table (APE) is read at the positions
        require(size is None or M <= size, RANDOM_POSITIONS, f"M = {M} reads table "
                f"rows up to {M - 1} but model.enc.size = {size}; raise the size or lower M")
    encodings.ENCODINGS[m.encoding].validate(m, t, max((t.lmax, *eval_lengths)))
