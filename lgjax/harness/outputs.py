"""What every command writes: the checks of an output folder, JSON, CSV, markdown tables and
figures' files (png + pdf)."""

from __future__ import annotations

import csv
import json
import os
import tempfile
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from lgjax.errors import ConfigError


def check_writable(path: Path, flag: str) -> None:
    """The folder exists or can be made, and a file can be written in it: checked up front by
    writing a probe (os.access is true for root even on /proc, where nothing can be made). A
    missing folder is not made: the probe is a uniquely named folder with a file, made and
    removed in the deepest folder that exists, so the processes of one job probing the same
    path at once never meet (each making and removing the same folder raced)."""
    probe = Path(path)
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"{flag}: {probe} is a file, not a folder; choose another path")
    try:
        inside = tempfile.mkdtemp(prefix=".lgjax-probe-", dir=probe)
        try:
            fd, name = tempfile.mkstemp(dir=inside)
            os.close(fd)
            os.unlink(name)
        finally:
            os.rmdir(inside)
    except OSError as err:
        raise ConfigError(f"{flag}: cannot write in {path} ({err.strerror or err}); choose a "
                          "folder you can write") from err


def check_utf8(path: Path, flag: str) -> None:
    """Orbax hands paths to C++ as UTF-8: a name with other bytes fails in every save."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError as err:
        raise ConfigError(f"{flag}: {os.fsencode(path)!r} is not valid UTF-8 and orbax cannot "
                          "write there; choose a path whose names are UTF-8") from err


def read_result(path: Path, flag: str, what: str, keys=(), experiment: str = "") -> dict:
    """The JSON object a command wrote at path, holding `keys` (and, if given, from the
    command `experiment`): anything else, a truncated file included, is a ConfigError naming
    the file and `what` wrote it."""
    fix = f"give the results.json {what} wrote (or rerun it)"
    try:
        result = json.loads(Path(path).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(f"{flag}: {path} is not valid JSON ({err}), truncated or damaged; "
                          f"{fix}") from err
    if not isinstance(result, dict):
        raise ConfigError(f"{flag}: {path} holds a JSON {type(result).__name__}, not the "
                          f"results of {what}; {fix}")
    other = result.get("experiment", experiment)  # files of older versions may not say
    if experiment and other.replace("_", "-") != experiment:  # run_study writes contract_train
        raise ConfigError(f"{flag}: {path} holds the results of {other}, not of {what}; {fix}")
    missing = [k for k in keys if k not in result]
    if missing:
        shown = ", ".join(missing[:4]) + (", ..." if len(missing) > 4 else "")
        raise ConfigError(f"{flag}: {path} is not a complete result of {what} (it lacks "
                          f"{shown}; a partial or another command's file?); {fix}")
    return result


def require_entries(entries, keys, flag: str, path, what: str) -> None:
    """Each entry of a results file (a program, a row) holds `keys`."""
    for i, entry in enumerate(entries if isinstance(entries, list) else [entries]):
        missing = [k for k in keys if not isinstance(entry, dict) or k not in entry]
        if missing:
            raise ConfigError(f"{flag}: {path}: {what} {i} lacks {', '.join(missing)}; the file "
                              "is damaged or of an older version; rerun the command that wrote "
                              "it")


def jsonable(x):
    if hasattr(x, "tolist"):
        return np.asarray(x).tolist()
    if isinstance(x, Path):
        return str(x)
    raise TypeError(f"not JSON-able: {type(x)}")


def markdown_table(cols: list[str], rows: list[list]) -> list[str]:
    """The lines of a markdown table (a "|" or a line break inside a cell is escaped)."""
    cell = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
    return (["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
            + ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows])


def write_csv(rows: list[dict], path: Path) -> None:
    """Tidy rows (dicts with the same keys) as CSV, one column per key."""
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)



def subplots(*args, figsize=None, **kwargs):
    """A figure and its axes, as `matplotlib.pyplot.subplots` makes them, but held by no pyplot
    state: lgjax's figures go to files, so it never picks a backend and never registers a figure
    with pyplot, and a notebook or a GUI session keeps its own (its inline plots stay inline)."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(*args, **kwargs)


def save(fig, stem: Path, dpi: int = 130) -> None:
    """Lay the figure out (tight) and write stem.png and stem.pdf."""
    fig.tight_layout()
    for ext in ("png", "pdf"):
        fig.savefig(f"{stem}.{ext}", dpi=dpi)
