"""The range of each numeric option, declared on the option itself and checked before any work.

  learnable: float = option(0.8, ge=0, le=1)  # a cell is learnable when ...
Every option is checked by `check(cfg)` (the cli calls it on each command's Config, the harness
on the shared RunOptions): a float must be finite and an integer must fit the int32 JAX sees,
whatever its range; a declared bound (ge, gt, le, lt) holds for the value or for every item of
a tuple; a list (`tuple[X, ...]`) names nothing twice (a repeat would measure and print a row
twice), a pair (`tuple[int, int]`) may. An error is a ConfigError naming the flag.
"""

from __future__ import annotations

import dataclasses
import math

from lgjax.errors import ConfigError

INT_LIMIT = 2**31  # JAX counts steps, shapes and sizes in int32


def option(default, *, ge=None, gt=None, le=None, lt=None, **metadata):
    """A dataclass field with its default and its range (see the module's docstring)."""
    bounds = {k: v for k, v in (("ge", ge), ("gt", gt), ("le", le), ("lt", lt)) if v is not None}
    return dataclasses.field(default=default, metadata={"bounds": bounds, **metadata})


SYMBOL = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
HOLDS = {"ge": lambda x, b: x >= b, "gt": lambda x, b: x > b, "le": lambda x, b: x <= b,
         "lt": lambda x, b: x < b}


def describe(bounds: dict, is_float: bool) -> str:
    """'a finite number in [0, 1]', 'an integer >= 1', ..."""
    kind = "a finite number" if is_float else "an integer"
    if set(bounds) in ({"ge", "le"}, {"gt", "lt"}, {"ge", "lt"}, {"gt", "le"}):
        lo, hi = (bounds.get("ge", bounds.get("gt")), bounds.get("le", bounds.get("lt")))
        return (f"{kind} in {'[' if 'ge' in bounds else '('}{lo:g}, {hi:g}"
                f"{']' if 'le' in bounds else ')'}")
    return " ".join([kind, *(f"{SYMBOL[k]} {v:g}" for k, v in bounds.items())])


def check_value(flag: str, x, bounds: dict) -> None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return
    is_float = isinstance(x, float)
    ok = math.isfinite(x) if is_float else -INT_LIMIT < x < INT_LIMIT
    if not ok or not all(HOLDS[k](x, b) for k, b in bounds.items()):
        limit = "" if ok or is_float else f" and below {INT_LIMIT:,} (JAX counts in int32)"
        raise ConfigError(f"{flag}: must be {describe(bounds, is_float)}{limit}, got {x!r}")


def check(cfg) -> None:
    """Every option of a Config (and of its `run` options) within its declared range."""
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            check(value)
            continue
        flag = "--" + f.name.replace("_", "-")
        items = value if isinstance(value, tuple) else (value,)
        for x in items:
            check_value(flag, x, f.metadata.get("bounds", {}))
        is_list = str(f.type).endswith(", ...]") and not f.metadata.get("rest")
        if is_list and len(set(items)) < len(items):
            twice = sorted({x for x in items if items.count(x) > 1}, key=str)
            raise ConfigError(f"{flag}: {', '.join(map(str, twice))} given more than once; give "
                              "each once")
