"""Training metrics of a run directory, saved as it trains: <run>/metrics.jsonl.

One row per chunk boundary and seed (a grid: per cell), in training order:
  {"step": 250, "seed": 3, "loss": 0.41, "param_norm": 12.7, "diverged": false}
  (a grid's rows name the cell instead: "cell": 7, "task": "skip(offset=2)", "seed": 2)
`loss` is the mean training loss over the chunk that ends at `step` (the number the progress
bar and the on_chunk hook get), `param_norm` the L2 norm of all of that seed's parameters at
`step`, `diverged` whether its loss or parameters went non-finite (training stops there; that
last row is written all the same). Step 0 ends no chunk and has no row.

Rows are appended as each chunk returns and flushed before every checkpoint save, so a
committed checkpoint has its rows on disk; a resumed run first drops the rows past the step it
restored, so after a kill and `--resume` there is exactly one row per boundary and seed. With
tensorboardX installed the same scalars go to <run>/tb/<seed-N>/ (lgjax.checkpoints.events).
Only process 0 of a job writes.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import jax
import numpy as np

from lgjax.checkpoints import events
from lgjax.checkpoints.integrity import CheckpointError, write_atomic
from lgjax.devices import is_leader, to_host

METRICS_FILE = "metrics.jsonl"
SCALARS = ("loss", "param_norm")  # what TensorBoard shows, as train/<name>


def seed_labels(seeds) -> list[dict]:
    return [{"seed": int(s)} for s in seeds]


def folder_name(label: dict) -> str:
    """The TensorBoard folder of a seed ("seed-3") or of a grid cell ("skip(offset=2)-seed-2")."""
    return f"{label['task']}-seed-{label['seed']}" if "task" in label else f"seed-{label['seed']}"


def param_norms(params_S) -> np.ndarray:
    """[S]: the L2 norm of each seed's parameters (every leaf together), on the host (no
    program to compile; the parameters of these models are small)."""
    return np.sqrt(sum(np.square(np.asarray(x, np.float64).reshape(len(x), -1)).sum(1)
                       for x in jax.tree.leaves(params_S)))


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# a row's fields and what each must hold (step, seed and loss in every row; a grid's also cell
# and task); the checks a reader makes before a value reaches a curve or an array
FIELDS = {"step": ("an integer >= 0", lambda v: isinstance(v, int) and not isinstance(v, bool)
                   and v >= 0),
          "seed": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
          "cell": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
          "task": ("a string", lambda v: isinstance(v, str)),
          "loss": ("a number", _number), "param_norm": ("a number", _number),
          "diverged": ("true or false", lambda v: isinstance(v, bool)),
          # the rows of `lgjax dynamics` (dynamics.json): one metric of one seed at one step
          "metric": ("a string", lambda v: isinstance(v, str)), "value": ("a number", _number)}
REQUIRED = ("step", "seed", "loss")
DYNAMICS_REQUIRED = ("seed", "step", "metric", "value")


def row_problem(row, required: tuple[str, ...] = REQUIRED) -> str | None:
    """Why a parsed line is not a metrics row (or, `required` = DYNAMICS_REQUIRED, a dynamics
    row); None: it is one."""
    if not isinstance(row, dict):
        return "not a JSON object"
    missing = [k for k in required if k not in row]
    if missing:
        return f"no {missing[0]!r}"
    for k, (what, ok) in FIELDS.items():
        if k in row and not ok(row[k]):
            return f"{k!r} is {row[k]!r}, not {what}"
    return None


def _parse(lines: list[str]) -> tuple[list[dict], list[tuple[int, str]]]:
    """(the rows of these lines, (line number, why) of each other line). A last line cut short
    (a run still writing, or killed mid-line) is skipped, not a problem."""
    rows, bad = [], []
    for i, line in enumerate(lines):
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                continue
            row, why = None, "not JSON"
        else:
            why = row_problem(row)
        if why is None:
            rows.append(row)
        else:
            bad.append((i + 1, why))
    return rows, bad


def damaged_line(path: Path, line: int, why: str) -> str:
    return (f"{path}: line {line} is not a metrics row (damaged: {why}); delete that line to "
            "read the others (its step's row is then missing)")


def keep_until(path: Path, step: int) -> None:
    """Drop the rows past `step` (and any cut-short line), rewriting the file atomically only
    when something goes. A damaged line cannot be kept either: it goes with a one-line notice
    (the loss of that chunk is in no checkpoint to restore it from)."""
    if not path.is_file():
        return
    lines = path.read_text().splitlines()
    rows, bad = _parse(lines)
    rows = [r for r in rows if r["step"] <= step]
    if bad:
        many = len(bad) > 1
        print(f"lgjax: {path}: line{'s' * many} {', '.join(str(n) for n, _ in bad)} "
              f"{'are' if many else 'is'} not a metrics row (damaged: {bad[0][1]}) and "
              f"{'are' if many else 'is'} dropped on resume; the curves miss "
              f"{'those rows' if many else 'that row'}", file=sys.stderr)
    if len(rows) != len(lines):
        write_atomic(path, "".join(json.dumps(r) + "\n" for r in rows))


class Log:
    """The metrics of one training session of the run directory `run_dir`.

    `labels[i]` names state i in its rows (`seed_labels`, or a grid's cells). Call `resume`
    with the step training starts from, wrap the chunk runner with `watch`, call `flush` before
    each checkpoint save and `close` at the end (or use it as a context manager).
    `seconds` is the time spent here (what `benchmarks/bench_metrics.py` reports)."""

    def __init__(self, run_dir: Path | str, labels: list[dict]):
        self.run_dir, self.labels, self.seconds = Path(run_dir), labels, 0.0
        self.path = self.run_dir / METRICS_FILE
        self.leader = is_leader()
        self._file = None
        self._events = None

    def resume(self, start: int) -> None:
        """Training starts from `start`: the rows past it go (they will be written again)."""
        if self.leader:
            keep_until(self.path, start)
            if events.available():
                self._events = events.EventFolders(self.run_dir / events.TB_DIR,
                                                   purge_step=start + 1)

    def watch(self, runner):
        """The runner, logging every chunk it returns (before the trainer checks it is
        finite, so a diverged seed's last row is kept)."""
        def run(states, n_steps):
            states, loss_S = runner(states, n_steps)
            self.add(states, loss_S)
            return states, loss_S

        return run

    def add(self, states, loss_S) -> None:
        jax.block_until_ready(loss_S)  # the chunk's own time is not ours (the trainer waits too)
        t0 = time.perf_counter()
        # every process takes part in the gather (a job's states are split over processes)
        step_S, loss_S, bad_S, params_S = to_host(
            (states.step, loss_S, states.bad_step, states.params))
        norm_S = param_norms(params_S)
        step_S, loss_S, bad_S = map(np.asarray, (step_S, loss_S, bad_S))
        if self.leader:
            step = int(step_S.reshape(-1)[0])
            rows = [{"step": step, **label, "loss": float(loss), "param_norm": float(norm),
                     "diverged": bool(bad >= 0)}
                    for label, loss, norm, bad in zip(self.labels, loss_S, norm_S, bad_S)]
            if self._file is None:
                self._file = open(self.path, "a")
            self._file.write("".join(json.dumps(r) + "\n" for r in rows))
            if self._events is not None:
                for r in rows:
                    for name in SCALARS:
                        self._events.add(folder_name(r), f"train/{name}", r[name], step)
        self.seconds += time.perf_counter() - t0

    def flush(self) -> None:
        t0 = time.perf_counter()
        if self._file is not None:
            self._file.flush()
        if self._events is not None:
            self._events.flush()
        self.seconds += time.perf_counter() - t0

    def close(self) -> None:
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._events is not None:
            self._events.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_rows(run_dir: Path | str) -> list[dict]:
    """Every row of <run_dir>/metrics.jsonl (of a run still training too)."""
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        raise CheckpointError(f"{path} is missing: {run_dir} is not a run directory, or was "
                              "trained before lgjax saved metrics (train it again to get them)")
    rows, bad = _parse(path.read_text().splitlines())
    if bad:
        raise CheckpointError(damaged_line(path, *bad[0]))
    return rows


def columns(rows: list[dict]) -> dict[str, np.ndarray]:
    """The rows as one array per field, in row order."""
    if not rows:
        return {}
    return {k: np.asarray([r[k] for r in rows]) for k in rows[0]}


def curves(rows: list[dict], value: str = "loss") -> tuple[np.ndarray, list, np.ndarray]:
    """(steps [N], one id per seed or cell, values [seeds, N]); NaN where a row is missing."""
    key = "cell" if rows and "cell" in rows[0] else "seed"
    steps = sorted({r["step"] for r in rows})
    ids = sorted({r[key] for r in rows})
    at = {s: i for i, s in enumerate(steps)}
    where = {s: i for i, s in enumerate(ids)}
    grid = np.full((len(ids), len(steps)), np.nan)
    for r in rows:
        grid[where[r[key]], at[r["step"]]] = r[value]
    return np.asarray(steps), ids, grid
