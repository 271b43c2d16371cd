"""The canonical encodings' profiles, measured by the project at each recipe and shipped with
the package (reference.json), so that a profile trains only the new encoding.

Regenerate (each recipe's canonical encodings, runs under --out):
  nice python -m lgjax.studies.profile.reference --recipe quick --out /tmp/profile-reference
It rewrites lgjax/studies/profile/reference.json's entry for that recipe, with the date.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

from lgjax.studies.profile import instruments, recipes

FILE = Path(__file__).with_name("reference.json")
CANONICAL = ("ape", "nope", "alibi", "sinusoidal", "rope")  # the realizability study's five
COMMAND = "nice python -m lgjax.studies.profile.reference --recipe {recipe} --out DIR"


def load(path: Path = FILE) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"recipes": {}}


def entry(recipe: recipes.Recipe, out: Path, encodings=CANONICAL) -> dict:
    """Every canonical encoding through every instrument at `recipe`."""
    encs, secs = {}, {}
    for name in encodings:
        encs[name], secs[name] = instruments.measure_all(name, recipe, out / name)
    return {"recipe": recipe.as_dict(), "encodings": encs, "seconds": secs,
            "made": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "command": COMMAND.format(recipe=recipe.name)}


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
