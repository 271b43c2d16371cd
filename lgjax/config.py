"""Run configuration: frozen dataclasses (one comment per field), JSON round trip, validation.

`lgjax.validation.validate` checks a RunConfig against the registries before anything is traced
or compiled; every error names the field and the fix.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from lgjax.encodings import ENCODINGS
from lgjax.errors import ConfigError, require

__all__ = ["ConfigError", "ModelConfig", "RunConfig", "TaskConfig", "TrainConfig", "require"]

# How configs saved before the encodings owned their options spelled them: flat ModelConfig
# fields, every encoding's on every model. Old name -> (encoding, option); a flat field of
# another encoding than the model's never affected that model and is dropped on reading.
FLAT_OPTIONS = {
    "rope_base": ("rope", "base"), "rope_scale": ("rope", "scale"),
    "alibi_slope": ("alibi", "slope"), "alibi_slopes": ("alibi", "slopes"),
    "t5_buckets": ("t5", "buckets"), "t5_max_distance": ("t5", "max_distance"),
    "rel_clip": ("relclip", "clip"), "sin_base": ("sinusoidal", "base"),
    "ape_size": ("ape", "size"), "ape_oob": ("ape", "oob"), "ape_train_max": ("ape", "train_max"),
}


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
    # the encoding's hyperparameters: an instance of ENCODINGS[encoding].options (None: its
    # defaults), e.g. ModelConfig("rope", enc=RopeOptions(base=1e3))
    enc: Any = None

    def __post_init__(self):
        entry = ENCODINGS.get(self.encoding)  # an unknown name is validate()'s to report
        if entry is None:
            return
        if self.enc is None:
            object.__setattr__(self, "enc", entry.options())
        require(type(self.enc) is entry.options, "model.enc", f"encoding {self.encoding!r} "
                f"takes {entry.options.__name__}, not {type(self.enc).__name__}; pass "
                f"enc={entry.options.__name__}(...) or leave enc out for its defaults")

    @staticmethod
    def from_dict(d: dict) -> ModelConfig:
        """The JSON form, or the flat form of configs saved before (see FLAT_OPTIONS)."""
        name = d["encoding"]
        if name not in ENCODINGS:
            raise ConfigError(f"model.encoding: unknown encoding {name!r} in a saved config; "
                              f"this lgjax knows {sorted(ENCODINGS)}")
        flat = {FLAT_OPTIONS[k][1]: v for k, v in d.items()
                if k in FLAT_OPTIONS and FLAT_OPTIONS[k][0] == name}
        fields = {k: v for k, v in d.items() if k not in FLAT_OPTIONS}
        return ModelConfig(**fields | {"enc": ENCODINGS[name].options(**d.get("enc", flat))})


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
    random_positions: int = 0  # M: train at sorted random positions drawn from [0, M); 0 = off


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
        return RunConfig(TaskConfig(**d["task"]), ModelConfig.from_dict(d["model"]),
                         TrainConfig(**train))

    @staticmethod
    def from_json(text: str) -> RunConfig:
        return RunConfig.from_dict(json.loads(text))
