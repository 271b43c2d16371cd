"""What a run's training cost, across every process that trained it.

A run resumed after a kill, or reloaded once finished, takes a new process only seconds, so the
wall time of the process that finishes it says nothing of what the run cost. Each checkpoint
therefore records in <run_dir>/trained_seconds.json the seconds spent from step 0 to it: the
seconds recorded at the checkpoint its process restored, plus that process's own time from
opening the run directory to the save (restore, compilation and training; not the work a killed
process did after its last checkpoint, which the next one redoes and counts). A run trained
before lgjax kept this record, or resumed from a checkpoint without one, has none (None), never
a guess.
"""

from __future__ import annotations

import json
from pathlib import Path

from lgjax.checkpoints.integrity import write_atomic

FILE = "trained_seconds.json"  # {"<step>": seconds of training from step 0 to that checkpoint}


def read(run_dir: Path | str) -> dict[int, float]:
    """Every step's record; {} when there is none or it cannot be read (then no run counts as
    recorded: a record that may be wrong is not used)."""
    try:
        doc = json.loads((Path(run_dir) / FILE).read_text())
        return {int(step): float(s) for step, s in doc.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def at(run_dir: Path | str, step: int) -> float | None:
    """The seconds of training from step 0 to checkpoint `step`; None when not recorded."""
    return read(run_dir).get(int(step))


def record(run_dir: Path | str, step: int, seconds: float) -> None:
    doc = {str(s): v for s, v in read(run_dir).items()}
    doc[str(int(step))] = round(float(seconds), 3)
    write_atomic(Path(run_dir) / FILE, json.dumps(doc, indent=0))
