"""What every command writes: the checks of an output folder, JSON, CSV, markdown tables and
figures' files (png + pdf)."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import matplotlib
import numpy as np

from lgjax.errors import ConfigError

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def check_writable(path: Path, flag: str) -> None:
    """The folder exists or can be made, and a file can be written in it (checked up front)."""
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"{flag}: {probe} is a file, not a folder; choose another path")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag}: {probe} is not writable; choose a folder you can write")


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



def save(fig, stem: Path, dpi: int = 130) -> None:
    """Lay the figure out (tight), write stem.png and stem.pdf, and release it."""
    fig.tight_layout()
    for ext in ("png", "pdf"):
        fig.savefig(f"{stem}.{ext}", dpi=dpi)
    plt.close(fig)
