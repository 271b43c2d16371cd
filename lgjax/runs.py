"""A run directory for a notebook: `lgjax.open_run(path)` -> a read-only `Run`.

    run = lgjax.open_run("checkpoints/multiseed-K1/rope")
    run.config, run.steps(), run.restore(250), run.metrics(), run.dynamics()

A Run is a `lgjax.checkpoints.RunDir` opened read-only: it takes no lock and writes nothing,
so it reads a run that another process is still training (orbax lists only committed steps;
the metrics file's rows stop at the last chunk written). It opens a realizability or contract
grid program as well (its config is then a `lgjax.grid.Grid`, its states one per cell).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from lgjax import train
from lgjax.checkpoints import CONFIG_FILE, CheckpointError, RunDir, metrics, read_config
from lgjax.config import RunConfig
from lgjax.grid import Grid

DYNAMICS_FILE = Path("dynamics") / "dynamics.json"  # where `lgjax dynamics RUN` writes its rows


def _config_class(path: Path):
    """Grid when config.json holds a grid (a list of tasks); read_config names any problem."""
    try:
        return Grid if "tasks" in json.loads((path / CONFIG_FILE).read_text()) else RunConfig
    except (OSError, ValueError, TypeError):
        return RunConfig


class Run(RunDir):
    """A run directory opened read-only: its config, steps, states, metrics and dynamics."""

    def __init__(self, path: Path | str):
        cfg = read_config(path, _config_class(Path(path)))
        template = None
        if isinstance(cfg, Grid):
            template = train.abstract_states(cfg.cell_config(0), math.prod(cfg.shape))
        super().__init__(path, cfg, readonly=True, template=template)

    @property
    def config(self) -> RunConfig | Grid:
        return self.cfg

    def metrics(self) -> dict[str, np.ndarray]:
        """The rows of metrics.jsonl as one array per field (step, seed, loss, param_norm,
        diverged; a grid's also cell and task), in training order."""
        return metrics.columns(metrics.read_rows(self.path))

    def dynamics(self, path: Path | str | None = None) -> dict[str, np.ndarray]:
        """The dynamics analyzer's rows (seed, step, metric, value) as one array per field,
        from what `lgjax dynamics RUN` wrote (`path`: its dynamics.json when --out put it
        elsewhere)."""
        file = Path(path) if path is not None else self.path / DYNAMICS_FILE
        if not file.is_file():
            raise CheckpointError(f"{file} is missing: run `lgjax dynamics {self.path}` first "
                                  "(or pass the dynamics.json it wrote with --out)")
        again = f"run `lgjax dynamics {self.path}` again"
        try:
            rows = json.loads(file.read_text())
        except (ValueError, UnicodeDecodeError) as err:
            raise CheckpointError(f"{file} is not valid JSON ({err}); {again}") from None
        if not isinstance(rows, list):
            raise CheckpointError(f"{file} holds a JSON {type(rows).__name__}, not a list of "
                                  f"rows; {again}")
        for i, row in enumerate(rows):
            why = metrics.row_problem(row, metrics.DYNAMICS_REQUIRED)
            if why is not None:
                raise CheckpointError(f"{file}: row {i + 1} is not a dynamics row (damaged: "
                                      f"{why}); {again}")
        return metrics.columns(rows)


def open_run(path: Path | str) -> Run:
    """Open an existing run (or grid program) read-only, for analysis: no lock, no writes.

    ```python
    with lgjax.open_run("checkpoints/multiseed-K1/rope") as run:
        run.config, run.steps(), run.metrics()
        states = run.restore(250)  # stacked over seeds, verified against its digests
    ```
    """
    return Run(path)
