"""One writer per run directory: a lock file naming the holder's pid, host and process start.

The lock file appears atomically (written aside, then hard-linked into place, which fails when a
lock exists), so a reader never sees a half-written one. Taking the lock, taking over a stale one
and releasing it happen under flock on the directory, so two processes cannot both take over the
same stale lock. A lock is stale when its holder ran on this host and that process is gone (its
pid is free, or now belongs to a process that started at another time). Readers take no lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import time
import uuid
from pathlib import Path

from lgjax.config import ConfigError

LOCK_FILE = "lgjax.lock"


class RunDirLocked(ConfigError):
    """Another live process holds the run directory's lock."""


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), to tell a reused pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22; the name in parentheses may hold spaces


def holder_is_gone(holder: dict) -> bool:
    """True only when the holder certainly ran on this host and is no longer running."""
    pid, start = holder.get("pid"), holder.get("start")
    if holder.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # exists, owned by someone else
        pass
    return start is not None and _start_time(pid) not in (None, start)


def describe(holder: dict) -> str:
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.get("time", 0)))
    return f"pid {holder.get('pid')} on host {holder.get('host')} (since {since})"


@contextlib.contextmanager
def _dir_flock(run_dir: Path, exclusive: bool):
    fd = os.open(run_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing drops the flock


def _read(lock: Path) -> dict | None:
    try:
        holder = json.loads(lock.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"pid": None, "host": "unknown (unreadable lock file)"}
    return holder if isinstance(holder, dict) else {"pid": None, "host": "unknown"}


def check_unlocked(run_dir: Path) -> None:
    """RunDirLocked while run_dir's lock has a holder that is alive (or cannot be checked)."""
    if (run_dir / LOCK_FILE).exists():
        with _dir_flock(run_dir, exclusive=False):
            holder = _read(run_dir / LOCK_FILE)
        if holder is not None and not holder_is_gone(holder):
            raise refusal(run_dir, holder)


def refusal(run_dir: Path, holder: dict) -> RunDirLocked:
    return RunDirLocked(
        f"run directory {run_dir}: locked by {describe(holder)}, another lgjax process is writing "
        f"it; wait for it to finish or choose another run name/--ckpt-root (delete "
        f"{run_dir / LOCK_FILE} only if that process is gone)")


class RunDirLock:
    """The exclusive write lock of an existing directory; `acquire` raises RunDirLocked."""

    def __init__(self, run_dir: Path | str):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_FILE
        self.token: str | None = None

    def acquire(self) -> None:
        token = uuid.uuid4().hex
        me = {"pid": os.getpid(), "host": socket.gethostname(), "start": _start_time(os.getpid()),
              "time": time.time(), "token": token}
        aside = self.run_dir / f".{LOCK_FILE}.{token}"
        aside.write_text(json.dumps(me))
        try:
            with _dir_flock(self.run_dir, exclusive=True):
                holder = _read(self.path)
                if holder is not None:
                    if not holder_is_gone(holder):
                        raise refusal(self.run_dir, holder)
                    self.path.unlink()
                    print(f"lgjax: took over the stale lock of {self.run_dir} (its holder, "
                          f"{describe(holder)}, is gone)", file=sys.stderr)
                os.link(aside, self.path)
        finally:
            aside.unlink()
        self.token = token

    def release(self) -> None:
        """Remove the lock file if it is still ours (idempotent)."""
        if self.token is not None and self.run_dir.is_dir():  # else nothing is left to release
            with _dir_flock(self.run_dir, exclusive=True):
                if (_read(self.path) or {}).get("token") == self.token:
                    self.path.unlink()
        self.token = None
