"""What a reproduction cost, counted across every process that trained its runs.

A reproduction that spans sessions (killed, then `--resume`d) finishes its runs in seconds the
last time, so its step walls say nothing of what it took. Here each step keeps its wall (for a
study command reused under --resume, which took none here, the wall its results file records)
less each run's training in that process (a reload, or the last stretch of a resumed run), which
is replaced by the seconds its run directory records from step 0 to the end
(lgjax.checkpoints.ledger). A run shared by experiments (a twin, a link) counts once. Not
counted: what an earlier process spent measuring a run whose measurement a later one reads back
(a realizability program's evaluation, tens of seconds), the imports and checks of a reused
step's first process, and work a killed process did past its last checkpoint.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Cost:
    seconds: float  # training (recorded) + the rest of every step's wall here
    training_seconds: float  # the recorded training seconds of the runs that have one, each once
    runs: int  # distinct run directories
    unrecorded: int  # of them, without a record (their training here counts instead)

    def line(self) -> str:
        # runs trained side by side each record their own time: the sum may pass the cost
        text = (f"cost across processes: {self.seconds:.0f} s; training "
                f"{self.runs - self.unrecorded} runs, as their run directories record it: "
                f"{self.training_seconds:.0f} s, each run its own time")
        if self.unrecorded:
            text += (f"; {self.unrecorded} more runs have no record (trained before lgjax kept "
                     "one, or resumed from such a checkpoint) and count their time here: a lower "
                     "bound")
        return text


def of_steps(walls: dict[str, float], results: dict[str, dict | None]) -> Cost:
    """walls: {step label: its wall here}; results: {step label: its results file}, for the
    study commands only (a report step's file may copy the one it reports on: its wall here
    counts, its file does not)."""
    recorded: dict[str, float | None] = {}  # real run path: its record
    here: dict[str, float] = {}  # real run path: its training in this process (first seen)
    rest = 0.0
    for label, wall in walls.items():
        doc = results.get(label) or {}
        runs = doc.get("run_dirs") or {}
        if not isinstance(runs, dict):
            runs = {}
        if isinstance(doc.get("wall_seconds"), int | float):  # a step reused under --resume
            wall = max(wall, doc["wall_seconds"])  # took none here: the writer's wall counts
        trained_here = doc.get("train_seconds") or {}
        trained_all = doc.get("trained_seconds") or {}
        for run, path in runs.items():
            key = os.path.realpath(Path(path))
            wall -= float(trained_here.get(run, 0.0))
            if recorded.get(key) is None:
                recorded[key] = trained_all.get(run)
            here[key] = max(here.get(key, 0.0), float(trained_here.get(run, 0.0)))
        rest += wall
    training = sum(s for s in recorded.values() if s is not None)
    unrecorded = [k for k, s in recorded.items() if s is None]
    fallback = sum(here[k] for k in unrecorded)
    return Cost(training + fallback + rest, training, len(recorded), len(unrecorded))
