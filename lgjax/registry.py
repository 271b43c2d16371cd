"""A registry of named entries (encodings, tasks) that refuses silent replacement.

Each entry remembers the module that registered it; a run whose encoding or task came from
outside the core records that module with its config (`plugins`), so later commands import it
again before reading the run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from lgjax.errors import ConfigError

# the clears of the caches that keep compiled programs by config (lru caches of runners,
# initializers, evaluators): a config names its encoding and task by name, so a program built
# with an entry that was replaced or removed must not serve the name again
_PROGRAM_CACHES: list[Callable[[], None]] = []


def clears_on_change(cache):
    """Decorator: the lru-cached function `cache` is cleared whenever a registered entry is
    replaced or removed."""
    _PROGRAM_CACHES.append(cache.cache_clear)
    return cache


def _entries_changed() -> None:
    for clear in _PROGRAM_CACHES:
        clear()


def caller_module(depth: int) -> str:
    """The module `depth` frames above the caller of this function (1: the caller's caller)."""
    return sys._getframe(depth + 1).f_globals.get("__name__", "?")


class Registry(dict):
    """name -> entry, a dict whose new names may be set by item as before, but whose existing
    names are replaced only by `register(..., replace=True)`."""

    def __init__(self, kind: str, entries: dict):
        super().__init__(entries)
        self.kind = kind
        self.providers = dict.fromkeys(entries, caller_module(1))

    def register(self, name: str, entry, replace: bool = False, module: str | None = None):
        if name in self and not replace:
            raise ConfigError(f"{self.kind} {name!r} is already registered (by "
                              f"{self.providers.get(name, '?')}); choose another name or pass "
                              "replace=True to override it")
        if name in self:
            _entries_changed()
        dict.__setitem__(self, name, entry)
        self.providers[name] = module or caller_module(1)
        return entry

    def __setitem__(self, name: str, entry):
        self.register(name, entry, module=caller_module(1))

    def __delitem__(self, name: str):
        dict.__delitem__(self, name)
        _entries_changed()
        self.providers.pop(name, None)
