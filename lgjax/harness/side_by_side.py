"""A command's runs trained side by side in one process, each on its own share of the devices.

A run uses the devices its seeds (a grid: its cells) split over, and on a CPU split into one
device per core that is often fewer than the process has: a run of 5 seeds trains on one of a
2-core machine's two devices and leaves the other idle. Runs then train in threads ("lanes"),
each lane bound to its share (`lgjax.devices.share`), so every run uses the same number of
devices as it would alone: the same programs, the same numbers, bit for bit.

The rules a lane follows:
- runs start in the command's order, each as soon as a lane is free;
- a run whose config equals a running one's waits for it, then reads it as its finished twin
  (lgjax.checkpoints.twins) instead of training it again;
- after the first failure (an error, a stop signal, Ctrl-C) no run starts, and the running ones
  stop at their next chunk boundary with a checkpoint there (`preemption.halt`), as a stop
  signal stops them; the first failure is raised once every lane has ended.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import jax

from lgjax import grid, preemption
from lgjax.devices import seed_mesh, share


def devices_used(rc) -> int:
    """The devices a run (a grid program) uses alone in this process, left to choose."""
    if isinstance(rc, grid.Grid):
        return grid.cell_devices(rc)
    mesh = seed_mesh(len(rc.train.seeds))
    return mesh.size if mesh is not None else 1


def lanes(runs: dict, asked: int, devices: int) -> int:
    """Runs trained at once: `asked` (--side-by-side; 0: as many as the devices hold), at most
    the runs' count. One when the device count is given (--devices) or the job has several
    processes: each run then uses what it was given."""
    if asked == 1 or devices or jax.process_count() > 1 or len(runs) < 2:
        return 1
    fit = len(jax.local_devices()) // max(devices_used(rc) for rc in runs.values())
    return max(1, min(fit, len(runs), asked or fit))


def train_all(runs: dict[str, Any], n_lanes: int, work: Callable[[str], Any]) -> dict[str, Any]:
    """{name: work(name)} for every run, `n_lanes` at a time (the rules above), in runs' order."""
    every = jax.local_devices()
    per = len(every) // n_lanes
    config_of = {run: rc.to_json() for run, rc in runs.items()}  # twins: equal configs
    pending, running, done, failures = list(runs), set(), {}, []
    turn = threading.Condition()

    def next_run() -> str | None:
        with turn:
            while pending and not failures and preemption.requested() is None:
                busy = {config_of[r] for r in running}
                free = [r for r in pending if config_of[r] not in busy]
                if free:
                    pending.remove(free[0])
                    running.add(free[0])
                    return free[0]
                turn.wait()
            return None

    def lane(devices) -> None:
        with share(devices):
            while (run := next_run()) is not None:
                try:
                    done[run] = work(run)
                except BaseException as err:  # noqa: BLE001 -- raised by the main thread
                    with turn:
                        failures.append(err)
                    preemption.halt(f"the failure of {run}")
                finally:
                    with turn:
                        running.discard(run)
                        turn.notify_all()

    threads = [threading.Thread(target=lane, args=(every[i * per:(i + 1) * per],),
                                name=f"lgjax-lane-{i}") for i in range(n_lanes)]
    try:
        with preemption.awaiting():
            for t in threads:
                t.start()
            try:
                for t in threads:
                    t.join()
            except KeyboardInterrupt as err:  # Ctrl-C: the lanes stop at their boundaries
                with turn:
                    failures.insert(0, err)
                preemption.halt("an interrupt")
                for t in threads:
                    t.join()
    finally:
        preemption.halt(None)
    if failures:
        raise failures[0]
    return {run: done[run] for run in runs}
