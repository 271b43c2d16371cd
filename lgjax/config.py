"""Run configuration: frozen dataclasses (one comment per field), JSON round trip, validation.

Validation runs before anything is traced or compiled, and every error names the field and the fix.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field


class ConfigError(ValueError):
    """An impossible or inconsistent configuration; the message names the field and the fix."""


@dataclass(frozen=True)
class TaskConfig:
    name: str = "fixed_offset"  # key in lgjax.tasks.TASKS
    vocab: int = 20  # m: number of content tokens (uniform i.i.d.)
    offset: int = 1  # fixed_offset, shift, skip: row i reads i - offset; two_offset: 1st mode
    offset2: int = 3  # two_offset: the offset the second mode token picks
    slot: int = 2  # pos: every row i > slot reads the absolute position `slot`
    anchor_slot: int = 2  # absolute_anchor: the label is the content token at this slot (0 = first)
    copy_offset: int = 3  # offset_copy: the label is the token this many positions before the query
    period: int = 5  # periodic_marker: record length P; the label is the query's phase (chance 1/P)
    pad_prefix: int = 0  # contract tasks: PAD tokens before the content (0 in training)


@dataclass(frozen=True)
class ModelConfig:
    encoding: str = "rope"  # key in lgjax.encodings.ENCODINGS
    arch: str = "head"  # "head": the one-layer head; "transformer": pre-LN decoder blocks
    layers: int = 2  # transformer blocks (arch="transformer" only)
    d: int = 64  # model width
    heads: int = 1  # H; d_head = d / H
    temperature: float = 1.0  # tau: logits are q.k / (sqrt(d_head) * tau)
    attention: str = "softmax"  # "softmax" or "linear" (weights = raw logits, no normalisation)
    query: str = "last"  # "last": query at n = L-1 only; "all": every row, causal mask
    rope_base: float = 1e4  # rotary base: theta_i = base^(-2i/d_head)
    rope_scale: float = 1.0  # rotary frequency scale: angles are pos * theta_i * scale
    alibi_slope: float = 1.0  # ALiBi slope s: bias -s * (n - t) ("fixed" slopes)
    alibi_slopes: str = "fixed"  # "fixed": alibi_slope on every head; "geometric": 2^(-8h/H)
    t5_buckets: int = 32  # T5 bias: number of causal buckets
    t5_max_distance: int = 128  # T5 bias: distance where the log buckets end
    rel_clip: int = 16  # clipped relative bias: offsets beyond this share the last scalar
    ape_size: int = 64  # rows in the learned absolute table (>= max eval length)
    ape_oob: str = "error"  # past the trained range: error|untrained|clamp|interp|rescale
    ape_train_max: int = 0  # trained lmax, required by clamp/interp/rescale
    sin_base: float = 1e4  # sinusoidal encoding base


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 4000  # optimizer steps
    batch: int = 256  # sequences per step per seed
    lr: float = 1e-3  # Adam learning rate
    weight_decay: float = 0.0  # coupled L2 (torch Adam style), added to the gradient before Adam
    decay_params: tuple[str, ...] = ("ape",)  # top-level param names weight decay applies to
    lmin: int = 8  # shortest training length
    lmax: int = 16  # longest training length
    seeds: tuple[int, ...] = tuple(range(8))  # seed ids; seed i's keys depend on i only
    ckpt_every: int = 125  # regular checkpoint interval (after the early log-spaced ones)
    ckpt_early: int = 64  # checkpoints at 1, 2, 4, ... up to this step before the regular ones
    chunk: int = 250  # longest run of steps inside one compiled loop call (progress granularity)
    seed_axis: str = "auto"  # vmap, map, blocks (lax.map of 8-wide vmaps) or auto (= blocks)


@dataclass(frozen=True)
class RunConfig:
    task: TaskConfig = field(default_factory=TaskConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

    @staticmethod
    def from_dict(d: dict) -> RunConfig:
        train = dict(d["train"])
        train["seeds"] = tuple(train["seeds"])
        train["decay_params"] = tuple(train["decay_params"])
        return RunConfig(TaskConfig(**d["task"]), ModelConfig(**d["model"]), TrainConfig(**train))

    @staticmethod
    def from_json(text: str) -> RunConfig:
        return RunConfig.from_dict(json.loads(text))


def require(cond: bool, field_name: str, message: str) -> None:
    if not cond:
        raise ConfigError(f"{field_name}: {message}")


def validate(cfg: RunConfig, eval_lengths: tuple[int, ...] = ()) -> None:
    """Check every field that could fail later inside a trace; raise ConfigError naming it."""
    from lgjax import encodings, tasks  # registries import config; import them lazily

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
    encodings.ENCODINGS[m.encoding].validate(m, t, max((t.lmax, *eval_lengths)))
