"""Expected failures (bad input, damaged checkpoints, divergence, the file system) and how the
CLI prints them: one line naming what, where and the fix; tracebacks are for real bugs.

A leaf module (it imports nothing of lgjax), so every layer, the encodings included, can raise
these."""

from __future__ import annotations

import math
import os


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
    """Raise `ConfigError("<field_name>: <message>")` unless `cond`: the one-line refusal of a
    bad field (the message says the fix), for an encoding's or task's `validate`."""
    if not cond:
        raise ConfigError(f"{field_name}: {message}")


def finite(x) -> bool:
    """A finite number (an option read from the command line or a file may be inf, nan, a
    string or a bool)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


class Preempted(BaseException):
    """A stop signal (SIGTERM, SIGUSR1) was honoured: the newest checkpoint is committed and the
    process exits with `exit_code`. A BaseException, as KeyboardInterrupt is: raised from a
    signal handler, it must pass through code that catches Exception."""

    exit_code = 75


class Relayed(Exception):
    """An expected failure of another process (a `reproduce --jobs` worker), already one line."""

    def __init__(self, line: str, exit_code: int = 2):
        super().__init__(line)
        self.exit_code = exit_code


EXPECTED = (ConfigError, CheckpointError, TrainingDiverged, OSError, Relayed)

PREFIX = {ConfigError: "configuration error", CheckpointError: "checkpoint error",
          TrainingDiverged: "training diverged"}


def one_line(err: BaseException) -> str:
    """The first line of the message, prefixed by its kind; OS errors name the path."""
    if isinstance(err, TimeoutError):  # an OSError, but no path of the user's is at fault
        text = str(err).strip().splitlines()
        return (f"timed out: {text[0] if text else 'no answer'}; a checkpoint save or another "
                "process did not finish in time (a paused process, a stalled disk); rerun with "
                "--resume: finished steps are kept")
    if isinstance(err, OSError):
        where = f" {err.filename}" if err.filename else ""
        return f"cannot use{where}: {err.strerror or err}; check the path and its permissions"
    if isinstance(err, Relayed):
        return str(err)
    kind = next((p for cls, p in PREFIX.items() if isinstance(err, cls)), type(err).__name__)
    text = str(err).strip().splitlines()
    return f"{kind}: {text[0] if text else type(err).__name__}"


def runtime_failure(err: BaseException) -> tuple[str, int] | None:
    """(one line, exit code) for a failure of the machine rather than of the code: memory
    that cannot be allocated (after every up-front check), or, in a job of several processes,
    a process that is gone (the launcher names which); None for anything else (a bug)."""
    text = str(err).strip()
    first = text.splitlines()[0][:200] if text else type(err).__name__
    if isinstance(err, MemoryError) or "RESOURCE_EXHAUSTED" in text:
        return (f"out of memory: {first}; lower --batch, --eval-sequences or --seeds (or free "
                "memory)", 2)
    lost = ("Gloo", "Connection reset by peer", "Connection closed by peer")
    if os.environ.get("LGJAX_DISTRIBUTED") == "1" and any(m in text for m in lost):
        return f"lost contact with another process of the job: {first}", 1
    return None
