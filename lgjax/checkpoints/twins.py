"""Finished runs of the same config under one --ckpt-root, trained once and read by every name.

Studies name their runs (`prop1/K2`, `variants/a-rope-K2`, ...) and several name the very same
training (same task, model, recipe and seeds). A config trains to the same states whatever its
run is called (same program, keys from the seed ids alone), so a run whose directory is not
started yet reuses a finished twin instead of training again: its results name the twin's
directory. A twin is found by its config.json, written once as `cfg.to_json()`, compared by
content (the same data in any formatting).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from lgjax.checkpoints.folders import step_folders
from lgjax.checkpoints.lock import RunDirLocked, check_unlocked
from lgjax.checkpoints.rundir import CONFIG_FILE
from lgjax.config import canonical_json

MAX_DEPTH = 6  # folders below --ckpt-root searched for run directories


def is_started(run_dir: Path) -> bool:
    """A config or a checkpoint is there: the run is this directory's, to resume or reload."""
    return (run_dir / CONFIG_FILE).exists() or bool(step_folders(run_dir))


def is_being_written(run_dir: Path) -> bool:
    """A live process holds the directory's lock (it may still be closing the run: another
    process, e.g. a `reproduce --jobs` worker, cannot open it yet)."""
    try:
        check_unlocked(run_dir)
    except RunDirLocked:
        return True
    return False


def holds_finished(path: Path, cfg) -> bool:
    """`path` holds exactly `cfg` (its config.json's data) and its final step."""
    if cfg.train.steps not in step_folders(path):
        return False
    try:
        return canonical_json(json.loads((path / CONFIG_FILE).read_text())) == cfg.to_json()
    except (OSError, ValueError):
        return False  # unreadable: not this run (its own run says so when it is opened)


def finished_twin(root: Path, cfg, own: Path) -> Path | None:
    """A run directory under `root`, other than `own`, that holds exactly `cfg` and its final
    step and that no live process is writing (the first found in name order); None when there
    is none."""
    if not root.is_dir():
        return None
    own = own.absolute()
    for folder, subfolders, files in os.walk(root):
        depth = len(Path(folder).relative_to(root).parts)
        # run names are a few folders deep; hidden folders (a venv, .git) hold none
        subfolders[:] = sorted(f for f in subfolders if not f.startswith(".")) \
            if depth < MAX_DEPTH else []
        if CONFIG_FILE not in files:
            continue
        subfolders.clear()  # a run directory holds steps, not runs
        path = Path(folder).absolute()
        if path != own and holds_finished(path, cfg) and not is_being_written(path):
            return path
    return None
