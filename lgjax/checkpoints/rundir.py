"""Run directories: orbax checkpoints of the stacked (seed-axis) state plus the run's config.

A run is one RunConfig (its seeds stacked) or a grid of cells trained in one program
(`lgjax.grid.Grid`): any config with `to_json` and `from_json`.
Layout: <run_dir>/config.json, <run_dir>/<step>/ (orbax CheckpointManager), <run_dir>/digests/
(lgjax.checkpoints.integrity), <run_dir>/trained_seconds.json (lgjax.checkpoints.ledger) and,
while a process writes it, <run_dir>/lgjax.lock (lgjax.checkpoints.lock).
A directory that holds a different config, or checkpoints without a config, is refused; restores
are strict, against `train.abstract_states(cfg)`, and verified against the step's digests.
In a job of several processes every process saves its own block of seeds through orbax (which
commits once all have written); process 0 alone locks the directory and writes config.json,
digests and deletions, for the job.
"""

from __future__ import annotations

import contextlib
import gc
import glob as glob_lib
import json
import logging
import os
import shutil
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import jax
import orbax.checkpoint as ocp
from etils.epath import backend as epath_backend
from etils.epath import gpath as epath_gpath

from lgjax import plugins, train
from lgjax.checkpoints import ledger
from lgjax.checkpoints.folders import CheckpointNames, step_folders, stray_folders
from lgjax.checkpoints.integrity import (
    CheckpointError,
    Digests,
    config_digests,
    damaged,
    nonfinite_leaf,
    write_atomic,
)
from lgjax.checkpoints.lock import RunDirLock, check_unlocked
from lgjax.config import ConfigError, RunConfig
from lgjax.devices import is_leader, sync, to_host
from lgjax.errors import TrainingDiverged

CONFIG_FILE = "config.json"
TRASH = ".lgjax-trash-"  # a damaged step is renamed to this prefix before it is deleted


def _literal_base_glob(glob):
    """epath's local glob joins the folder it is called on into the pattern, so a run directory
    whose path holds a glob character (`rope[base=500.0]`, `ck[a=1]`, `*`, `?`) matches nothing
    there: orbax then finds no per-process files to merge when it commits a save (the step is
    written but reads back as missing arrays) and no array metadata when it restores. The
    folder is escaped here, as pathlib's own glob treats it; only the pattern orbax appends
    (`ocdbt.process_*`, ...) matches."""

    def literal(self, pattern: str):
        if self._backend is not epath_backend.os_backend:
            return glob(self, pattern)
        return (self._new(f) for f in glob(self._new(glob_lib.escape(self._path_str)), pattern))

    literal.lgjax_literal_base = True
    return literal


# epath's private class: an etils without it is left as it is (tests/test_odd_paths.py then
# fails on a bracketed run directory, rather than every import here)
_GPath = getattr(epath_gpath, "_GPath", None)
if _GPath is not None and not getattr(_GPath.glob, "lgjax_literal_base", False):
    _GPath.glob = _literal_base_glob(_GPath.glob)


def _diff(a: dict, b: dict, prefix="") -> list[str]:
    out = []
    for k in sorted(set(a) | set(b)):
        va, vb = a.get(k), b.get(k)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += _diff(va, vb, f"{prefix}{k}.")
        elif va != vb:
            out.append(f"{prefix}{k}: saved {va!r} vs now {vb!r}")
    return out


def read_config(run_dir: Path | str, cls=RunConfig):
    path = Path(run_dir) / CONFIG_FILE
    if not Path(run_dir).is_dir():
        raise CheckpointError(f"{run_dir} does not exist or is not a directory; point at a run "
                              "directory (the folder holding config.json)")
    if not path.is_file():
        raise CheckpointError(f"{path} is missing: {run_dir} is not a run directory written by "
                              "lgjax (point at the folder holding config.json)")
    try:
        text = path.read_text()
        plugins.recorded(json.loads(text), str(path))  # a plugin's entries, registered first
        return cls.from_json(text)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as err:
        raise CheckpointError(f"{path} is corrupt ({err}); restore it or start a new run") from err


def _check_contents(path: Path, cfg, resume: bool) -> None:
    steps = step_folders(path)
    if (path / CONFIG_FILE).exists():
        saved = read_config(path, type(cfg))
        diffs = _diff(json.loads(saved.to_json()), json.loads(cfg.to_json()))
        if diffs:
            raise ConfigError(f"run directory {path} holds a different config ("
                              + "; ".join(diffs[:6]) + "); choose another run name/--ckpt-root "
                              "(that directory keeps the other run)")
    elif steps:
        raise ConfigError(f"run directory {path} holds checkpoints (steps {steps[0]}..{steps[-1]})"
                          f" but no {CONFIG_FILE}, so what they were trained with is unknown; "
                          f"restore its {CONFIG_FILE} or choose another run name/--ckpt-root")
    if steps and not resume:
        raise ConfigError(f"run directory {path} already has checkpoints (latest step "
                          f"{steps[-1]}); pass --resume to continue it or choose another run name")


def check_run_dir(path: Path | str, cfg, resume: bool = False) -> None:
    """Every check a writing RunDir makes, writing nothing: run it for all of a command's runs
    before anything trains. Raises ConfigError (RunDirLocked when another process writes it) or
    CheckpointError (a corrupt config.json)."""
    path = Path(path).absolute()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"run directory {path} exists and is not a directory; choose another "
                          "run name/--ckpt-root")
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise ConfigError(f"run directory {path}: {existing} is a file; choose another "
                          "--ckpt-root")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"run directory {path}: {existing} is not writable; choose another "
                          "--ckpt-root or fix its permissions")
    if path.is_dir():
        _check_contents(path, cfg, resume)
        if is_leader():  # process 0 locks for the job
            check_unlocked(path)


@contextlib.contextmanager
def _quiet_orbax():
    """orbax logs warnings about damaged steps itself; the CheckpointError says it in one line."""
    logs = [logging.getLogger(name) for name in ("absl", "asyncio")]
    levels = [log.level for log in logs]
    for log in logs:
        log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for log, level in zip(logs, levels):
            log.setLevel(level)


@contextlib.contextmanager
def failed_reads_muted():
    """A failed orbax read leaves its sibling reads as dropped coroutines (and tensorstore
    callbacks into its closed event loop): their unraisable warnings are muted within, and the
    dropped reads are collected on leaving, instead of the collector printing a traceback for
    each later, wherever it runs."""
    hook = sys.unraisablehook
    sys.unraisablehook = lambda _: None
    try:
        yield
    finally:
        gc.collect()
        sys.unraisablehook = hook


def _first_line(err: BaseException, limit: int = 160) -> str:
    """The first line of the innermost cause (orbax wraps tensorstore's telling message)."""
    while err.__cause__ is not None:
        err = err.__cause__
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:limit] if text else ''}"


# how long a background save may take to commit: orbax's default (1200 s) counts wall time, so
# a run stopped (SIGSTOP, a suspended job) longer than that during a save would die at its next
# step
SAVE_TIMEOUT_S = 24 * 3600


class _SaveFailureLogged(logging.Filter):
    """orbax logs a failed background save, traceback and all, from its save thread, then
    raises the same error at the next wait, which lgjax reports in one line: the log goes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno >= logging.ERROR
                    and "in background save thread" in record.getMessage())


logging.getLogger("absl").addFilter(_SaveFailureLogged())


# orbax numbers a save with one process-wide counter and reads the number back while the save
# starts: two saves started at once (runs side by side in threads) would take one number, and
# one would wait for the other's signals until its timeout
_SAVES_STARTING = threading.Lock()


def _manager(path: Path, keep: int | None = None, read_only: bool = False
             ) -> ocp.CheckpointManager:
    """orbax's manager of one unnamed item, told so up front: left to guess, it settles the
    item layout from the first step folder it restores, for every step after it (a stray folder
    restored first made every real step unreadable). Stray folders are not its steps."""
    options = ocp.CheckpointManagerOptions(
        read_only=True, create=False, step_name_format=CheckpointNames()) if read_only else \
        ocp.CheckpointManagerOptions(max_to_keep=keep, create=True, cleanup_tmp_directories=True,
                                     step_name_format=CheckpointNames(),
                                     async_options=ocp.AsyncOptions(timeout_secs=SAVE_TIMEOUT_S))
    return ocp.CheckpointManager(path, options=options,
                                 item_handlers=ocp.StandardCheckpointHandler())


class RunDir:
    """Open (or create) a run directory for `cfg`; `resume` allows continuing one.

    `template` is the restore target (default: `train.abstract_states(cfg)`, one state per
    seed); `keep` the number of newest steps orbax keeps (default: every step).
    A writer holds the directory's lock from open to close (also when an exception ends it).
    `readonly=True` opens an existing run for analysis: no lock, nothing written.
    `damaged` collects {step: reason} for every step found damaged so far.
    """

    def __init__(self, path: Path | str, cfg, resume: bool = False, readonly: bool = False,
                 template=None, keep: int | None = None):
        self.path = Path(path).absolute()
        self.cfg = cfg
        self.readonly, self.keep = readonly, keep
        self.template = train.abstract_states(cfg) if template is None else template
        self.damaged: dict[int, str] = {}
        self.digests = Digests(self.path)
        self._lock = RunDirLock(self.path)  # taken by a writer only; releasing is idempotent
        self._pending: int | None = None  # saved step whose files are not digested yet
        self._undigested_noticed = False
        self.unverified_step: int | None = None  # restored without a digest to check it against
        # lgjax.checkpoints.ledger: this process's seconds count from here; the seconds before
        # it are those recorded at the step it restores (0 for a run with no step yet)
        self._opened_at, self._seconds_before = time.perf_counter(), None
        if readonly:
            read_config(self.path, type(cfg))
            with _quiet_orbax():  # it warns that a read-only manager saves nothing
                self.manager = _manager(self.path, read_only=True)
        else:
            self._open_for_writing(resume)
        self._config_shas = config_digests(self.path / CONFIG_FILE)
        self.strays = stray_folders(self.path)
        if not readonly and not self.steps():
            self._seconds_before = 0.0
        if self.strays and is_leader():
            print(f"lgjax: {self.path}: folder{'s' * (len(self.strays) > 1)} "
                  f"{', '.join(map(str, self.strays))} "
                  f"{'are not checkpoints' if len(self.strays) > 1 else 'is not a checkpoint'} "
                  "(no orbax files, no digest); left as found and ignored", file=sys.stderr)

    def _open_for_writing(self, resume: bool) -> None:
        check_run_dir(self.path, self.cfg, resume)
        if not is_leader():  # process 0 locks and writes for the job; we only save
            self.manager = _manager(self.path, self.keep)
            return  # orbax's barrier in there: process 0 has written config.json by now
        created = not self.path.exists()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(f"run directory {self.path} cannot be created ({err.strerror}); "
                              "choose another --ckpt-root") from err
        wrote_config = False
        try:
            self._lock.acquire()
            _check_contents(self.path, self.cfg, resume)  # again, now that no one else writes
            if not (self.path / CONFIG_FILE).exists():
                write_atomic(self.path / CONFIG_FILE, self.cfg.to_json())
                wrote_config = True
            for trash in self.path.glob(f"{TRASH}*"):
                shutil.rmtree(trash, ignore_errors=True)
            with _quiet_orbax():  # it warns about each damaged step it lists
                self.manager = _manager(self.path, self.keep)
        except BaseException:  # leave the directory as found (another writer may own it)
            if wrote_config:
                (self.path / CONFIG_FILE).unlink(missing_ok=True)
            self._lock.release()
            if created:
                with contextlib.suppress(OSError):  # not empty: someone else writes it now
                    self.path.rmdir()
            raise

    def steps(self) -> list[int]:
        """The saved steps, ascending (orbax lists only committed ones)."""
        return [s for s in step_folders(self.path) if s not in self.strays]

    def latest(self) -> int | None:
        return (self.steps() or [None])[-1]

    def needs_save(self, step: int) -> bool:
        """True when `step` has no checkpoint, or only one found damaged (or a stray folder);
        False for the step whose save is in flight."""
        if step == self._pending:
            return False
        return step in self.damaged or step in self.strays or not (self.path / str(step)).exists()

    def save(self, step: int, states: train.TrainState) -> None:
        """Save asynchronously. Damaged steps from `step` on are deleted first (orbax saves no
        step older than its newest); an intact step is never overwritten."""
        if self.readonly:
            raise CheckpointError(f"{self.path} was opened read-only; open it with RunDir to "
                                  "write", step)
        self._finish_pending()
        if not self.needs_save(step):
            raise CheckpointError(f"checkpoint step {step} in {self.path} exists and was not "
                                  "found damaged; refusing to overwrite it", step)
        for old in sorted(s for s in self.damaged if s >= step):
            self._discard(old)
        if step in self.strays:
            self._move_aside(step)
        whole = to_host(states)  # several processes: every one takes part in the gather
        if is_leader():
            self.digests.write_arrays(step, whole, self._config_shas[0])
            if self._seconds_before is not None:
                ledger.record(self.path, step, self._seconds_before
                              + time.perf_counter() - self._opened_at)
        with _SAVES_STARTING:
            saved = self.manager.save(step, args=ocp.args.StandardSave(states))
        if not saved:
            raise CheckpointError(f"orbax declined to save step {step} in {self.path} (newer "
                                  f"steps: {[s for s in self.steps() if s > step]})", step)
        self._pending = step

    def _finish_pending(self) -> None:
        self.manager.wait_until_finished()
        if is_leader() and self._pending is not None and (self.path / str(self._pending)).is_dir():
            self.digests.add_files(self._pending)
        self._pending = None
        if self.keep is not None and is_leader():  # orbax deleted older steps: their digests go
            self.digests.prune(self.steps())

    def _discard(self, step: int) -> None:
        # renamed first, so a kill during the delete leaves no half-deleted step folder
        if (self.path / str(step)).exists() and is_leader():
            trash = self.path / f"{TRASH}{step}-{uuid.uuid4().hex[:8]}"
            os.rename(self.path / str(step), trash)
            shutil.rmtree(trash)
        sync(f"lgjax discard {self.path} {step}")  # every process reloads after the delete
        del self.damaged[step]
        with _quiet_orbax():
            self.manager.reload()

    def discard_committed(self, steps: list[int]) -> None:
        """Delete intact steps (a stopped run's unscheduled checkpoints) once every save in
        flight has committed, so a newer step is on disk before they go."""
        self._finish_pending()
        for step in steps:
            self.damaged.setdefault(step, "unscheduled")
            self._discard(step)
        if is_leader():
            self.digests.prune(self.steps())

    def _move_aside(self, step: int) -> None:
        """A stray folder by the name of a step about to be saved: kept, renamed."""
        if is_leader():
            aside = self.path / f"{step}.not-a-checkpoint-{uuid.uuid4().hex[:8]}"
            os.rename(self.path / str(step), aside)
            print(f"lgjax: {self.path}: folder {step} (not a checkpoint) renamed to {aside.name} "
                  f"to save step {step}", file=sys.stderr)
        sync(f"lgjax move aside {self.path} {step}")
        self.strays.remove(step)

    def restore_verified(self, step: int) -> train.TrainState:
        """The state saved at `step`, checked against its digests; CheckpointError naming the
        step when it is missing, unreadable or differs from what was saved."""
        if not (self.path / str(step)).is_dir():
            raise CheckpointError(f"checkpoint step {step} in {self.path} does not exist "
                                  f"(steps: {self.steps()})", step, "does not exist")
        if step in self.strays:
            raise CheckpointError(f"folder {step} in {self.path} is not a checkpoint (no orbax "
                                  f"files, no digest; steps: {self.steps()})", step,
                                  "not a checkpoint")
        record = self.digests.load(step)
        if record is not None:
            self.digests.check_files(step, record, self._config_shas)
        try:
            if step not in self.manager.all_steps():
                self.manager.reload()
            with _quiet_orbax():
                restored = self.manager.restore(
                    step, args=ocp.args.StandardRestore(self.template))
        except Exception as err:  # orbax and tensorstore raise many types for unreadable data
            with failed_reads_muted():
                pass  # this read failed: collect what it dropped
            raise damaged(self.path, step, f"orbax cannot read it ({_first_line(err)})") from err
        # on the host for the digests; handed back uncommitted, like a fresh init, so the
        # chunk runner compiled for a fresh run serves a resumed one too
        states = jax.device_get(restored if isinstance(restored, train.TrainState)
                                else train.TrainState(*restored))
        if record is not None:
            self.digests.check_arrays(step, record, states)
        else:
            self._notice_undigested()
            bad = nonfinite_leaf(states)
            if bad is not None:
                raise damaged(self.path, step, f"array {bad} holds non-finite values (no digest "
                              "to check it against)")
        if int(states.step.reshape(-1)[0]) != step:
            raise damaged(self.path, step, f"it holds the state of step {int(states.step[0])}")
        return jax.device_put(states)

    def _notice_undigested(self) -> None:
        """Once per run directory: which steps have no digest, and what that costs."""
        if self._undigested_noticed or not is_leader():
            return
        self._undigested_noticed = True
        lost = [s for s in self.steps() if not self.digests.path(s).exists()]
        if not self.digests.dir.is_dir():
            what = f"has lost its {self.digests.dir.name}/ folder"
        else:
            many = "s" * (len(lost) > 1)
            what = (f"has lost the digest{many} of step{many} {', '.join(map(str, lost))} "
                    f"({self.digests.dir.name}/<step>.json)")
        print(f"lgjax: {self.path}: {what}: such steps cannot be verified byte for byte and are "
              "only checked for finite values", file=sys.stderr)

    def readable_steps(self, steps: list[int] | None = None
                       ) -> Iterator[tuple[int, train.TrainState]]:
        """(step, state) for each intact step of `steps` (default: all), in order; the others
        are skipped and recorded in `self.damaged`."""
        for step in self.steps() if steps is None else steps:
            try:
                state = self.restore_verified(step)
            except CheckpointError as err:
                self.damaged[step] = err.reason
                continue
            yield step, state

    def restore_latest_intact(self) -> tuple[int, train.TrainState] | None:
        """(step, state) of the newest intact step, None when there is no step at all; damaged
        newer ones are named on stderr in one line (and replaced by later saves). CheckpointError
        when steps exist but none is intact."""
        steps = self.steps()
        step, state = next(self.readable_steps(steps[::-1]), (None, None))
        bad = [s for s in reversed(steps) if step is None or s > step]  # newest first
        what = "; ".join(f"{s}: {self.damaged[s]}" for s in bad)
        if step is None:
            if steps:
                raise CheckpointError(f"no intact checkpoint in {self.path} ({what}); nothing "
                                      "was deleted: restore those steps from a copy, or move the "
                                      "run directory aside to train the run again")
            return None
        record = None if self.readonly else self.digests.load(step)
        self.unverified_step = None if self.digests.path(step).exists() else step
        if record is not None and "files" not in record and is_leader():
            self.digests.add_files(step)  # killed before they were recorded; arrays verified
        if not self.readonly:
            self._seconds_before = ledger.at(self.path, step)
        if bad:
            print(f"lgjax: {self.path}: damaged checkpoint step{'s' * (len(bad) > 1)} "
                  f"skipped ({what}); resuming from step {step}", file=sys.stderr)
        return step, state

    @contextlib.contextmanager
    def training(self):
        """Training on from the step restored: a run that diverges after resuming from a step
        with no digest (only checked for finite values) names that step as a cause beside the
        learning rate (a flipped bit there can hold a huge finite value)."""
        try:
            yield
        except TrainingDiverged as err:
            s = self.unverified_step
            if s is None:
                raise
            raise TrainingDiverged(f"{err}; or the checkpoint it resumed from: step {s} has no "
                                   "digest and was only checked for finite values (move step "
                                   f"folder {s} aside to resume from an earlier one)") from err

    def restore(self, step: int | None = None) -> train.TrainState:
        """The state saved at `step`, stacked over seeds and verified against its digests
        (a `CheckpointError` names a damaged step); `step=None`: the newest intact step."""
        if step is not None:
            return self.restore_verified(step)
        found = self.restore_latest_intact()
        if found is None:
            raise CheckpointError(f"no checkpoint in {self.path}; train the run first")
        return found[1]

    def close(self) -> None:
        """Wait for pending saves, close orbax's manager and release the lock (a run opened
        read-only has neither); `with` calls it."""
        try:
            if not self.readonly:
                self._finish_pending()
            self.manager.close()
        finally:
            self._lock.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


__all__ = ["RunDir", "read_config", "check_run_dir", "step_folders",
           "CheckpointError"]
