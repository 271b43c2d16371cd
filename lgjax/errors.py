"""Expected failures (bad input, damaged checkpoints, divergence, the file system) and how the
CLI prints them: one line naming what, where and the fix; tracebacks are for real bugs.

A leaf module (it imports nothing of lgjax), so every layer, the encodings included, can raise
these."""

from __future__ import annotations


class ConfigError(ValueError):
    """An impossible or inconsistent configuration; the message names the field and the fix."""


class CheckpointError(RuntimeError):
    """An expected checkpoint failure; the message is one line naming the path (and step)."""

    def __init__(self, message: str, step: int | None = None, reason: str = ""):
        super().__init__(message)
        self.step, self.reason = step, reason or message


class TrainingDiverged(RuntimeError):
    pass


def require(cond: bool, field_name: str, message: str) -> None:
    if not cond:
        raise ConfigError(f"{field_name}: {message}")


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
