"""`lgjax curves RUN_DIR...`: training loss against step for one or more runs, from their
metrics.jsonl alone (no checkpoint is read, so it works on a run still training).

Each seed (or grid cell) is a thin line, the mean over them a bold one in the same colour, one
colour per run; both axes are logarithmic (the first boundary is step 1; the loss axis turns
linear when some loss is not positive). A folder without metrics.jsonl stands for the runs in
its subfolders (`lgjax curves checkpoints/multiseed-K1` draws rope and ape).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
import numpy as np

from lgjax.checkpoints.metrics import METRICS_FILE, curves, read_rows
from lgjax.errors import ConfigError
from lgjax.harness.outputs import check_writable, subplots

FORMATS = (".png", ".pdf", ".svg")


@dataclass(frozen=True)
class Config:
    run_dirs: tuple[str, ...] = field(default=(), metadata={"positional": True})  # run folders
    out: str = "results/curves/curves.png"  # its one figure: a file, not a folder (.png/.pdf/.svg)


def run_dirs(given: tuple[str, ...]) -> list[Path]:
    """Each folder holding metrics.jsonl, a folder of such runs standing for them."""
    found = []
    for name in given:
        path = Path(name)
        inside = sorted(p.parent for p in path.glob(f"*/{METRICS_FILE}"))
        if (path / METRICS_FILE).is_file():
            found.append(path)
        elif inside:
            found += inside
        else:
            raise ConfigError(f"run_dirs: {path} holds no {METRICS_FILE} (nor do its subfolders); "
                              "point at a run trained by this lgjax (the folder of config.json)")
    return found


def check(cfg: Config) -> list[Path]:
    if not cfg.run_dirs:
        raise ConfigError("run_dirs: give at least one run folder")
    if Path(cfg.out).suffix not in FORMATS:
        raise ConfigError(f"--out: {cfg.out} must end in one of {', '.join(FORMATS)}")
    if Path(cfg.out).is_dir():
        raise ConfigError(f"--out: {cfg.out} is a folder; give the figure's file name (e.g. "
                          f"{Path(cfg.out) / 'curves.png'})")
    check_writable(Path(cfg.out).parent, "--out")
    return run_dirs(cfg.run_dirs)


def label(path: Path) -> str:
    return "/".join(path.absolute().parts[-2:])


def draw(runs: dict[str, tuple[np.ndarray, np.ndarray]], out: Path) -> None:
    fig, ax = subplots(figsize=(7, 4.5))
    colors = matplotlib.colormaps["tab10"].colors * 10
    for (name, (steps, loss_SxN)), color in zip(runs.items(), colors):
        for loss in loss_SxN:
            ax.plot(steps, loss, color=color, lw=0.7, alpha=0.35)
        ax.plot(steps, np.nanmean(loss_SxN, 0), color=color, lw=2.4,
                label=f"{name} (mean of {len(loss_SxN)})")
    every = np.concatenate([v.ravel() for _, v in runs.values()])
    ax.set_xscale("log")
    if np.nanmin(every) > 0:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (mean over each chunk)")
    ax.set_title("training loss per seed (thin) and their mean (bold)", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=130)


def main(cfg: Config) -> None:
    runs = {}
    for path in check(cfg):
        rows = read_rows(path)
        if not rows:
            raise ConfigError(f"run_dirs: {path / METRICS_FILE} has no row yet (the run has not "
                              "finished its first chunk)")
        steps, _, loss = curves(rows)
        runs[label(path)] = (steps, loss)
        final = loss[:, -1]
        print(f"{label(path)}: {len(loss)} curves, steps {steps[0]}..{steps[-1]}, final loss "
              f"{np.nanmean(final):.4g} (min {np.nanmin(final):.4g}, max {np.nanmax(final):.4g})")
    draw(runs, Path(cfg.out))
    print(f"wrote {cfg.out}")
