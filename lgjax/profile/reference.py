"""The canonical encodings' profiles, measured by the project at each recipe and shipped with
the package (reference.json), so that a profile trains only the new encoding.

Regenerate (each recipe's canonical encodings, runs under --out):
  nice python -m lgjax.profile.reference --recipe quick --out /tmp/profile-reference
It rewrites lgjax/profile/reference.json's entry for that recipe, with the command and the
versions and backend it ran with (what can move its numbers; a date cannot say which).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lgjax.errors import ConfigError
from lgjax.profile import instruments, recipes, summary

FILE = Path(__file__).with_name("reference.json")
CANONICAL = ("ape", "nope", "alibi", "sinusoidal", "rope")  # the realizability study's five
COMMAND = "nice python -m lgjax.profile.reference --recipe {recipe} --out DIR"


def load(path: Path = FILE) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"recipes": {}}


def checked(path: Path, recipe: recipes.Recipe) -> dict | None:
    """The entry of `recipe` in the reference file `path` (None where it has none), read and
    checked as the card will read it, before anything trains: a missing, unreadable, truncated
    or foreign file, or an entry made at another recipe than today's (its numbers would not
    compare with the profile's), is a ConfigError naming --reference."""
    fix = ("give the reference.json that `python -m lgjax.profile.reference` writes, or "
           "leave --reference out for the packaged one")
    if not path.is_file():
        raise ConfigError(f"--reference: {path} is not a file; {fix}")
    try:
        ref = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise ConfigError(f"--reference: {path} is not readable JSON ({err}); {fix}") from None
    entries = ref.get("recipes") if isinstance(ref, dict) else None
    if not isinstance(entries, dict):
        raise ConfigError(f"--reference: {path} holds no 'recipes' object (not a profile "
                          f"reference); {fix}")
    entry, name = entries.get(recipe.name), None
    if entry is None:
        return None
    try:
        if not isinstance(entry["command"], str):
            raise TypeError(STRINGS)
        made_with(entry)
        for name in entry["encodings"]:
            summary.of(entry["encodings"][name])
            list(entry["encodings"][name]["contract"][0]["curve"])  # the figure reads it too
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as err:
        what = f"encoding {name!r} of its " if name else "its "
        raise ConfigError(f"--reference: {path}: {what}{recipe.name!r} entry is damaged "
                          f"({type(err).__name__}: {err}); {fix}") from None
    moved = differing(entry, recipe)
    if moved:
        raise ConfigError(f"--reference: {path}: its {recipe.name!r} entry was made at another "
                          f"{recipe.name!r} recipe than today's (differing: {', '.join(moved)}), "
                          "so its numbers would not compare with this profile's; regenerate it "
                          f"with `{COMMAND.format(recipe=recipe.name)}`")
    return entry


def differing(entry: dict, recipe: recipes.Recipe) -> list[str]:
    """The fields in which the recipe `entry` was made at differs from `recipe` (as the file
    holds it: JSON's lists for tuples); none where the entry was made at it."""
    made_at, today = entry.get("recipe") or {}, json.loads(json.dumps(recipe.as_dict()))
    return sorted(k for k in today.keys() | made_at.keys() if made_at.get(k) != today.get(k))


STRINGS = "'command' and 'made_with' must be strings"


def made_with(entry: dict) -> str:
    """What made `entry`, as the card names it: its versions and backend; a file written before
    entries recorded them names the day it was made (`made`) instead. KeyError where it names
    neither, TypeError where it is not a string."""
    new = "made_with" in entry
    made = entry["made_with" if new else "made"]
    if not isinstance(made, str):
        raise TypeError(STRINGS)
    return made if new else f"on {made}"


def versions() -> str:
    """lgjax's version, the libraries that compute the numbers, and the backend they ran on."""
    import jax

    from lgjax.harness.provenance import LIBRARIES, version

    libs = ", ".join(f"{lib} {version(lib)}" for lib in ("lgjax", *LIBRARIES))
    return f"{libs}; {jax.default_backend()}"


def entry(recipe: recipes.Recipe, out: Path, encodings=CANONICAL) -> dict:
    """Every canonical encoding through every instrument at `recipe` (their walls are the
    command's to print, not the file's: they say which machine made it, not what)."""
    encs = {}
    for name in encodings:
        encs[name], secs = instruments.measure_all(name, recipe, out / name)
        print(f"{name}: " + ", ".join(f"{k} {v:.1f} s" for k, v in secs.items()), flush=True)
    return {"recipe": recipe.as_dict(), "encodings": encs,
            "command": COMMAND.format(recipe=recipe.name), "made_with": versions()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--recipe", choices=sorted(recipes.RECIPES), default="quick")
    p.add_argument("--out", required=True, help="runs and per-encoding results go here")
    p.add_argument("--file", default=str(FILE), help="the reference file to update")
    a = p.parse_args(argv)
    ref = load(Path(a.file))
    ref["recipes"][a.recipe] = entry(recipes.RECIPES[a.recipe], Path(a.out))
    Path(a.file).write_text(json.dumps(ref, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
