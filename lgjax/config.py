"""Run configuration: frozen dataclasses (one comment per field), JSON round trip, validation.

`lgjax.validation.validate` checks a RunConfig against the registries before anything is traced
or compiled; every error names the field and the fix.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from lgjax.errors import ConfigError, require

__all__ = ["ConfigError", "ModelConfig", "RunConfig", "TaskConfig", "TrainConfig", "require"]


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
