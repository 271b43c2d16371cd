"""Which numbered folders of a run directory are checkpoints, for lgjax and for orbax alike.

A folder named like a step that holds none of orbax's files (no `_CHECKPOINT_METADATA`, no
`default/` item) and has no digest was never a save of lgjax: it is *stray* (made by hand, or
by another program). A stray folder is named once, left as it is and kept out of orbax's
sight: orbax lists every numbered folder as a step, and one such folder otherwise decides how it
reads every step (its item layout is settled on the first restore), which newer steps it
declines to save and which older ones `max_to_keep` deletes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from orbax.checkpoint import path as ocp_path

from lgjax.checkpoints.integrity import DIGEST_DIR

ORBAX_FILES = ("_CHECKPOINT_METADATA", "default")  # what orbax writes into every step folder


def step_folders(path: Path) -> list[int]:
    """Steps with a folder in `path` (orbax renames a finished save into place, so each was
    committed once; whether it is still intact is for `RunDir.restore_verified` to say)."""
    if not path.is_dir():
        return []
    return sorted(int(p.name) for p in path.iterdir() if p.name.isdigit() and p.is_dir())


def is_stray(step_dir: Path) -> bool:
    """A numbered folder that lgjax never saved (a damaged step keeps its digest)."""
    run_dir = step_dir.parent
    return not any((step_dir / name).exists() for name in ORBAX_FILES) \
        and not (run_dir / DIGEST_DIR / f"{step_dir.name}.json").exists()


def stray_folders(path: Path) -> list[int]:
    return [s for s in step_folders(path) if is_stray(path / str(s))]


class CheckpointNames:
    """orbax's standard step names, with stray folders left out of every listing."""

    def __init__(self):
        self._standard = ocp_path.step.standard_name_format()

    def build_name(self, step: int) -> str:
        return self._standard.build_name(step)

    def find_all(self, base_path) -> Iterator:
        return (m for m in self._standard.find_all(base_path) if not is_stray(Path(m.path)))

    def find_step(self, base_path, step: int):
        found = self._standard.find_step(base_path, step)
        if is_stray(Path(found.path)):
            raise ValueError(f"{found.path} is not a checkpoint (no orbax files, no digest)")
        return found
