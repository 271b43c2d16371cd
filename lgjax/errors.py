"""Expected failures (bad input, damaged checkpoints, divergence, the file system) and how the
CLI prints them: one line naming what, where and the fix; tracebacks are for real bugs."""

from __future__ import annotations

from lgjax.checkpoints import CheckpointError
from lgjax.config import ConfigError
from lgjax.train import TrainingDiverged

EXPECTED = (ConfigError, CheckpointError, TrainingDiverged, OSError)

PREFIX = {ConfigError: "configuration error", CheckpointError: "checkpoint error",
          TrainingDiverged: "training diverged"}


def one_line(err: BaseException) -> str:
    """The first line of the message, prefixed by its kind; OS errors name the path."""
    if isinstance(err, OSError):
        where = f" {err.filename}" if err.filename else ""
        return f"cannot use{where}: {err.strerror or err}; check the path and its permissions"
    kind = next((p for cls, p in PREFIX.items() if isinstance(err, cls)), type(err).__name__)
    text = str(err).strip().splitlines()
    return f"{kind}: {text[0] if text else type(err).__name__}"
