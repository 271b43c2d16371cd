"""`--set key=value,...`: an encoding's options from the command line, checked against its
options dataclass, and the variant of the encoding that carries them as its defaults, so that
every study's instrument (each builds its ModelConfig with the encoding's defaults) trains and
scores the options given, never silently the defaults."""

from __future__ import annotations

import contextlib
import dataclasses

from lgjax.config import ConfigError
from lgjax.encodings import ENCODINGS

PARSE = {bool: lambda s: {"true": True, "false": False}[s.lower()], int: int, float: float,
         str: str}


def parse(name: str, pairs: tuple[str, ...]):
    """The options instance of encoding `name` with `pairs` (key=value) over its defaults."""
    enc = ENCODINGS[name]
    defaults = enc.options()
    known = {f.name: type(getattr(defaults, f.name)) for f in dataclasses.fields(defaults)}
    values = {}
    for pair in pairs:
        key, eq, text = pair.partition("=")
        if not eq or key not in known:
            raise ConfigError(f"--set: {pair!r} is not key=value with a key of {name}'s options "
                              f"({', '.join(sorted(known)) or 'it has none'})")
        if key in values:
            raise ConfigError(f"--set {key}: given twice ({key}={values[key]!r} and {pair}); "
                              "give each option once")
        try:
            values[key] = PARSE.get(known[key], known[key])(text)
        except (ValueError, KeyError):
            raise ConfigError(f"--set {key}: {text!r} is not a {known[key].__name__}; give "
                              f"e.g. {key}={getattr(defaults, key)}") from None
    return dataclasses.replace(defaults, **values)


@contextlib.contextmanager
def variant(name: str, options):
    """The encoding's name, or (options other than its defaults) a variant registered in this
    process whose options default to them, `name[key=value,...]`, for the duration of the
    block: a variant left in the registry would be profiled by every later command of the
    process (the contract lab scores every registered encoding)."""
    label = _register(name, options)
    try:
        yield label
    finally:
        if label != name:
            del ENCODINGS[label]


def _register(name: str, options) -> str:
    enc = ENCODINGS[name]
    if options == enc.options():
        return name
    changed = [f.name for f in dataclasses.fields(options)
               if getattr(options, f.name) != getattr(enc.options(), f.name)]
    label = f"{name}[{','.join(f'{k}={getattr(options, k)}' for k in changed)}]"
    cls = dataclasses.make_dataclass(
        enc.options.__name__, [(f.name, f.type, dataclasses.field(default=getattr(options,
                                                                                   f.name)))
                               for f in dataclasses.fields(options)], frozen=True)
    ENCODINGS.register(label, dataclasses.replace(enc, options=cls,
                                                  variant_of=enc.variant_of or name),
                       replace=True, module=ENCODINGS.providers.get(name))
    return label
