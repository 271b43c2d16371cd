"""Run configuration: frozen dataclasses (one comment per field), JSON round trip, validation.

`lgjax.validation.validate` checks a RunConfig against the registries before anything is traced
or compiled; every error names the field and the fix.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from lgjax import content, learned_bias, rope_scaling  # noqa: F401 -- their encodings register
from lgjax.encodings import ENCODINGS
from lgjax.errors import ConfigError, require
from lgjax.tasks import TASKS

__all__ = ["ConfigError", "ModelConfig", "RunConfig", "TaskConfig", "TrainConfig", "require"]

def _options(kind: str, registry: dict, name: str, given, field: str):
    """The entry's options: `given` if it is of the entry's options type, its defaults if None.
    An unknown name is validate()'s to report (None stays)."""
    entry = registry.get(name)
    if entry is None or given is not None and type(given) is entry.options:
        return given
    require(given is None, field, f"{kind} {name!r} takes {entry.options.__name__}, not "
            f"{type(given).__name__}; pass {field.split('.')[-1]}={entry.options.__name__}(...) "
            "or leave it out for its defaults")
    return entry.options()


# the modules whose entries every lgjax process has (config imports them all)
CORE_PROVIDERS = ("lgjax.encodings", "lgjax.rope_scaling", "lgjax.learned_bias", "lgjax.content",
                  "lgjax.tasks", "__main__")


def plugin_modules(encodings, tasks) -> list[str]:
    """The modules outside the core that registered these encodings and tasks: a run records
    them with its config (lgjax.plugins) so that reading it later imports them first."""
    mods = {ENCODINGS.providers.get(e) for e in encodings} | {TASKS.providers.get(t) for t in tasks}
    return sorted(m for m in mods if m and m not in CORE_PROVIDERS)


def canonical_json(data) -> str:
    """The one form lgjax writes a config in (sorted keys, indent 2): a config's identity is its
    content, so a file rewritten with other formatting digests as this form of its data."""
    return json.dumps(data, indent=2, sort_keys=True)


def _kind(default) -> str:
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string",
            tuple: "a list"}.get(type(default), type(default).__name__)


def _is_like(value, default) -> bool:
    """`value` read from JSON has the type of the field's `default` (an integer is a number)."""
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    if isinstance(default, tuple):
        return isinstance(value, (list, tuple)) and (
            not default or all(_is_like(v, default[0]) for v in value))
    return isinstance(value, type(default))


def check_types(defaults, given: dict, where: str) -> None:
    """Every value of a saved config's section `given` of the type of the field's default in
    `defaults` (a dataclass instance; options, and None defaults, are checked on their own): a
    hand-edited `"d": "16"` is named here, not a TypeError inside a trace."""
    if not isinstance(given, dict):
        raise ConfigError(f"{where}: {given!r} is not an object of fields")
    names = [f.name for f in dataclasses.fields(defaults)]
    for key in given:
        if key not in names:  # e.g. the flat option fields of configs saved before 0.1.0
            raise ConfigError(f"{where}.{key}: not a field of this lgjax's config (its fields: "
                              f"{', '.join(names)}); remove it, or retrain with this lgjax")
    for f in dataclasses.fields(defaults):
        want = getattr(defaults, f.name)
        if f.type in (float, "float") and isinstance(want, int) and not isinstance(want, bool):
            want = float(want)  # `x: float = 1`: a number, whatever its default's type
        if f.name in given and want is not None and not dataclasses.is_dataclass(want) \
                and not _is_like(given[f.name], want):
            raise ConfigError(f"{where}.{f.name}: {given[f.name]!r} is not {_kind(want)} (its "
                              f"default is {want!r}); correct that field")


def _from_saved(cls, d: dict, where: str, registry: dict, name: str, options: str):
    """A config section `where` of a saved config (its JSON form), whose entry of `registry` is
    named by its field `name` and whose entry's options are under `options`; every value's type
    checked first."""
    check_types(cls(), d, where)
    entry = _known(registry.kind, registry, d[name], f"{where}.{name}")
    opts = d.get(options, {})
    check_types(entry.options(), opts, f"{where}.{options}")
    return cls(**d | {options: entry.options(**opts)})


def _known(kind: str, registry: dict, name: str, field: str):
    if name not in registry:
        raise ConfigError(f"{field}: unknown {kind} {name!r} in a saved config; this lgjax knows "
                          f"{sorted(registry)} (a plugin's {kind}: pass --plugin with its module)")
    return registry[name]


@dataclass(frozen=True)
class TaskConfig:
    """Which task a run trains on, with its knobs (`TaskConfig.of("skip", offset=3)`)."""

    name: str = "fixed_offset"  # key in lgjax.tasks.TASKS
    vocab: int = 20  # m: number of content tokens (uniform i.i.d.)
    # the task's knobs: an instance of TASKS[name].options (None: its defaults), e.g.
    # TaskConfig("skip", opts=OffsetOptions(offset=3))
    opts: Any = None

    def __post_init__(self):
        object.__setattr__(self, "opts", _options("task", TASKS, self.name, self.opts,
                                                  "task.opts"))

    @staticmethod
    def of(name: str, vocab: int = 20, **knobs) -> TaskConfig:
        """TaskConfig(name, vocab, TASKS[name].options(**knobs)): the knobs by keyword."""
        entry = TASKS.get(name)
        if entry is None:
            return TaskConfig(name, vocab)
        known = {f.name for f in dataclasses.fields(entry.options)}
        require(set(knobs) <= known, "task.opts", f"task {name!r} takes "
                f"{sorted(known) or 'no knobs'}, not {sorted(set(knobs) - known)}")
        return TaskConfig(name, vocab, entry.options(**knobs))

    @staticmethod
    def from_dict(d: dict) -> TaskConfig:
        """The JSON form (`saved`): the task's knobs under "opts"."""
        return _from_saved(TaskConfig, d, "task", TASKS, "name", "opts")


@dataclass(frozen=True)
class ModelConfig:
    """The model: its positional encoding (and that encoding's options), its shape and its
    attention (`ModelConfig("rope", enc=RopeOptions(base=1e3))`)."""

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
        object.__setattr__(self, "enc", _options("encoding", ENCODINGS, self.encoding, self.enc,
                                                 "model.enc"))

    @staticmethod
    def from_dict(d: dict) -> ModelConfig:
        """The JSON form (`saved`): the encoding's options under "enc"."""
        return _from_saved(ModelConfig, d, "model", ENCODINGS, "encoding", "enc")


@dataclass(frozen=True)
class TrainConfig:
    """How a run trains: optimizer, lengths, seeds and the checkpoint schedule."""

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
    # XLA at -O0 with the classic CPU emitters: compiles ~4x faster, runs ~3x slower; for runs
    # whose compilation outlasts their training (reproduce --quick). Moves numbers in the last
    # bits, so it is part of the run's config (a run resumes as it was compiled)
    fast_compile: bool = False


def saved(cfg) -> dict:
    """The JSON form of a config with a model (a RunConfig, a Grid): a variant encoding
    (`Encoding.variant_of`) is saved as the encoding it varies, its options beside it."""
    d = dataclasses.asdict(cfg)
    entry = ENCODINGS.get(cfg.model.encoding)
    if entry is not None and entry.variant_of:
        d["model"]["encoding"] = entry.variant_of
    return d


@dataclass(frozen=True)
class RunConfig:
    """One run: a task, a model and its training, for every seed of `train.seeds`. A run
    directory holds one, saved as `config.json` (`to_json`)."""

    task: TaskConfig = field(default_factory=TaskConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def to_json(self) -> str:
        plugins = plugin_modules([self.model.encoding], [self.task.name])
        return canonical_json(saved(self) | ({"plugins": plugins} if plugins else {}))

    @staticmethod
    def from_dict(d: dict) -> RunConfig:
        check_types(TrainConfig(), d["train"], "train")
        train = dict(d["train"])
        train["seeds"] = tuple(train["seeds"])
        train["decay_params"] = tuple(train["decay_params"])
        return RunConfig(TaskConfig.from_dict(d["task"]), ModelConfig.from_dict(d["model"]),
                         TrainConfig(**train))

    @staticmethod
    def from_json(text: str) -> RunConfig:
        return RunConfig.from_dict(json.loads(text))
