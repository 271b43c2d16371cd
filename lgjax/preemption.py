"""Stop on a scheduler's notice: finish the chunk in progress, commit a checkpoint, exit 75.

Slurm (preemption, `scancel`, the time limit), spot VMs and Kubernetes evictions send SIGTERM
and kill the process some seconds later (Slurm's KillWait, 30 s by default; Kubernetes'
grace period); `sbatch --signal=USR1@60` sends SIGUSR1 ahead of the time limit. `install()`
(the CLI calls it once the process has joined its job) makes both signals a request to stop:
inside a training loop (`stoppable()`) the run stops at the next chunk boundary with a committed
checkpoint there; anywhere else nothing is in flight, and one process stops at once (a process
of a job of several, or a `reproduce --jobs` worker, at the next training loop's start: see
`install`). Either way the CLI exits with EXIT_PREEMPTED after one line, and the same command
with `--resume` continues bitwise equal to a run never stopped (the chunks after a boundary do
not depend on where training started).

In a job of several processes every process takes part in one small all-gather of the request
at each chunk boundary, so all stop at the same boundary whether the signal reached every
process (a scheduler's) or one (a `kill` by hand). JAX's own preemption sync point
(`multihost_utils.reached_preemption_sync_point`, which orbax's `CheckpointManager.
reached_preemption` calls) is not used: its notifier exists only in a job started by
jax.distributed and watches SIGTERM alone, so a single process and SIGUSR1 would need this path
anyway; the handlers installed here replace its SIGTERM handler.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable

from lgjax.errors import Preempted

# sysexits' EX_TEMPFAIL ("try again later"): not a signal's 128 + n, not 1 (a failure) or 2
# (refused input), so a requeue script can tell "stopped and saved" from everything else
EXIT_PREEMPTED = Preempted.exit_code
STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)

_requested: str | None = None  # the name of the first stop signal received
_halted: str | None = None  # why this process's other training loops stop (halt)
_loops = 0  # training loops running (stoppable() contexts entered and not left)
_defer = False  # outside training: wait for the next loop (install)
_waiting = 0  # threads' training loops awaited by the main thread (side_by_side)
_lock = threading.Lock()


def requested() -> str | None:
    return _requested


def _handler(signum, _frame) -> None:
    global _requested
    if _requested is not None:
        return  # already stopping
    _requested = signal.Signals(signum).name
    if _loops == 0 and not _defer and not _waiting:
        # one process with nothing in flight: every checkpoint is committed or never started
        raise Preempted(f"stopped by {_requested} outside training; every finished checkpoint "
                        "is kept; rerun with --resume to continue")
    # (deferred: see install)
    os.write(2, f"lgjax: {_requested}: stopping at the next chunk boundary, after its "
                "checkpoint\n".encode())


def install(defer: bool | None = None) -> None:
    """SIGTERM and SIGUSR1 become a request to stop (main thread only; a no-op elsewhere).

    `defer` (default: in a job of several processes): outside training the request waits for
    the next training loop's start, or the command's end, instead of stopping at once. A process
    of a job stopping on its own between two exchanges would leave the others blocked in the
    next one; a `reproduce --jobs` worker idle between steps would die in the pool's loop."""
    global _defer
    if threading.current_thread() is not threading.main_thread():
        return
    _defer = os.environ.get("LGJAX_DISTRIBUTED") == "1" if defer is None else defer
    for sig in STOP_SIGNALS:
        signal.signal(sig, _handler)


def reset() -> None:
    """Forget a request (tests that run commands in-process)."""
    global _requested, _halted
    _requested = _halted = None


def halt(why: str | None) -> None:
    """Stop this process's training loops as a signal would (at their next chunk boundary,
    after its checkpoint): runs beside one that failed stop with their work saved. None: the
    loops that start from now on run again."""
    global _halted
    _halted = why


@contextlib.contextmanager
def awaiting():
    """The main thread waits here for training loops in other threads: a stop signal waits for
    their boundaries, as it does inside a loop of its own."""
    global _waiting
    with _lock:
        _waiting += 1
    try:
        yield
    finally:
        with _lock:
            _waiting -= 1


@contextlib.contextmanager
def stoppable():
    """A training loop that calls `at_boundary` at each chunk boundary: a stop request waits for
    it. Left with a request pending (it came after the last boundary, during the final save's
    commit), the run is complete and saved, and the process stops there."""
    global _loops
    name = agreed()  # a request that came between two training loops
    if name is not None:
        raise Preempted(f"stopped by {name} before training; every finished checkpoint is kept; "
                        "rerun with --resume to continue")
    with _lock:
        _loops += 1
    try:
        yield
    finally:
        with _lock:
            _loops -= 1
    name = agreed()  # (reached only when the loop ended without an exception)
    if name is not None:
        raise Preempted(f"stopped by {name} after training finished; every checkpoint is "
                        "kept; rerun with --resume to continue")


def agreed() -> str | None:
    """The stop signal's name when any process of the job has one (every process must call it
    at the same boundary: one all-gather in a job of several processes), else None."""
    import jax

    if jax.process_count() == 1:
        return _requested or _halted
    import numpy as np
    from jax.experimental import multihost_utils

    codes = multihost_utils.process_allgather(
        np.array([signal.Signals[_requested].value if _requested else 0], np.int32))
    code = int(np.max(codes))
    return signal.Signals(code).name if code else None


def at_boundary(step: int, save: Callable[[int], None], where: str) -> None:
    """At chunk boundary `step`: when a stop was requested anywhere in the job, `save(step)`
    (it saves the step unless already saved or being saved) and raise Preempted; the caller's
    RunDir commits the save on the way out."""
    name = agreed()
    if name is None:
        return
    save(step)
    raise Preempted(f"stopped by {name} at step {step}, checkpoint saved in {where}; rerun "
                    "with --resume to continue")


def leave_job(code: int) -> None:
    """End a process of a job that stopped: wait (a bounded time) until every process of the job
    has stopped too, then exit at once. A scheduler that takes a step down when one task exits
    non-zero (`srun --kill-on-bad-exit`) would otherwise signal the slower ones while they
    still commit, or while the interpreter shuts down (its handlers gone: killed by SIGTERM,
    exit 143 instead of EXIT_PREEMPTED).

    Once all are there, jax.distributed's shutdown disconnects every process before process 0
    takes the coordination service down with it: a process still connected when the service
    goes polls an error from it and aborts (SIGABRT) instead of exiting 75. When one does not
    come, that shutdown (itself a barrier, 5 minutes by default) is skipped."""
    if os.environ.get("LGJAX_DISTRIBUTED") != "1":
        return
    import jax

    if jax.process_count() == 1:
        return
    try:  # (jax's client, which jax.distributed.initialize made: no public handle on it)
        from jax._src import distributed

        client = distributed.global_state.client
        if client is not None:
            client.wait_at_barrier("lgjax-stopped", LEAVE_TIMEOUT_MS)
            jax.distributed.shutdown()
    except Exception:  # noqa: BLE001 -- a process that will not come: leave anyway
        pass
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


LEAVE_TIMEOUT_MS = 20_000  # the processes of a stopped job reach the barrier within a save
