"""TensorBoard event files of a run: one folder per seed (or grid cell) under <run>/tb/.

Written with tensorboardX (the optional `tensorboard` extra); without it nothing is written and
`available()` is False. tensorboardX's SummaryWriter queues events to a thread that its flush
does not drain, so this writes through its synchronous `EventsWriter`: what `flush()` returns
after is in the file, which is what lets a checkpoint vouch for the scalars before it.
`tensorboard --logdir <run or a folder above it>` shows every seed's curves.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import sys
import time
import uuid
from pathlib import Path

TB_DIR = "tb"


def available() -> bool:
    return importlib.util.find_spec("tensorboardX") is not None


class EventFolders:
    """Scalars per folder name (e.g. "seed-3"), each folder its own TensorBoard run.

    `purge_step` (a resumed run: the restored step + 1) makes TensorBoard hide what earlier files
    logged at or after it, so a step retrained after a kill shows once. `suffix` ends the file
    names (e.g. ".dynamics", so a later analysis can replace its own files alone). Writers open
    on first use: a run that logs nothing creates no folder."""

    def __init__(self, root: Path, purge_step: int | None = None, suffix: str = ""):
        self.root, self.purge_step, self.suffix = Path(root), purge_step, suffix
        self._writers: dict = {}

    def _writer(self, name: str):
        if name not in self._writers:
            EventsWriter, Event, SessionLog, _ = _tensorboardx()

            folder = self.root / name
            folder.mkdir(parents=True, exist_ok=True)
            # its own file name: two writers in one folder within a second would share one.
            # TensorBoard reads a folder's files in name order and a file's earlier steps hide
            # what files read before it logged from them on: the name carries the time in ns
            # so a run resumed within the second of its kill sorts after the killed one's file
            # (tensorboardX's own stamp is whole seconds; the pid and uuid then sorted at random)
            writer = EventsWriter(str(folder / "events"), f".{time.time_ns()}.{os.getpid()}."
                                                          f"{uuid.uuid4().hex[:6]}{self.suffix}")
            if self.purge_step is not None:
                writer.write_event(Event(step=self.purge_step, wall_time=time.time(),
                                         session_log=SessionLog(status=SessionLog.START)))
            self._writers[name] = writer
        return self._writers[name]

    def add(self, name: str, tag: str, value: float, step: int) -> None:
        _, Event, _, scalar = _tensorboardx()
        self._writer(name).write_event(Event(wall_time=time.time(), step=int(step),
                                             summary=scalar(tag, float(value))))

    def flush(self) -> None:
        """Into the OS's hands, not onto the disk: a killed process loses nothing the OS holds,
        while EventsWriter.flush fsyncs each file, ~30 ms per checkpoint for 8 seeds under IO
        load, most of the metrics' cost in the Table-1 workload (benchmarks/bench_metrics.py).
        close() still fsyncs."""
        for writer in self._writers.values():
            _buffer_of(writer).flush()

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()


@functools.cache
def _tensorboardx():
    """(EventsWriter, Event, SessionLog, scalar), imported once. tensorboardX's package imports
    torch when it is installed (1.4 s here: the `bench` extra has it), only to accept torch
    tensors, which lgjax never passes; torch is hidden for that import (its `except ImportError`
    is the no-torch path) unless something imported torch already."""
    hide = "torch" not in sys.modules
    if hide:
        sys.modules["torch"] = None  # `import torch` raises ImportError while this is set
    try:
        from tensorboardX.event_file_writer import EventsWriter
        from tensorboardX.proto.event_pb2 import Event, SessionLog
        from tensorboardX.summary import scalar
    finally:
        if hide:
            del sys.modules["torch"]
    # it logs a warning for every non-finite scalar: a diverging run's NaN loss is recorded as
    # it is, and the run ends with its own one line (TrainingDiverged)
    logging.getLogger("tensorboardX.x2num").setLevel(logging.ERROR)
    return EventsWriter, Event, SessionLog, scalar


def _buffer_of(writer):
    """The file under tensorboardX's EventsWriter -> RecordWriter (its only flush fsyncs); the
    writer itself where a version lays it out otherwise."""
    buffer = getattr(getattr(writer, "_py_recordio_writer", None), "_writer", None)
    return buffer if hasattr(buffer, "flush") else writer


def remove(root: Path, suffix: str) -> None:
    """Delete the event files ending in `suffix` under root/* (an analysis written again)."""
    for path in Path(root).glob(f"*/events.out.tfevents.*{suffix}"):
        path.unlink(missing_ok=True)
