"""contract-report: the contract matrix with 95% t-intervals, the predicted matrix and verdicts.

The contract study's report (docs/studies/contract.md). The report states the null policy and the
predicted matrix first (`POLICY`, `PREDICTIONS`, fixed before any run), then the measured matrix
task x scheme x intervention with intervals over seeds, each predicted cell marked, the winners, the
matched-training-loss comparison and the rank correlations of in-range loss and of the contract
measures with the out-of-range accuracy.
Command: lgjax contract-report results/contract        (a results folder: instant)
         lgjax contract-report /work/runs/contract      (a --ckpt-root: measures finished cells)
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from lgjax.config import ConfigError
from lgjax.harness import outputs
from lgjax.harness.outputs import check_writable
from lgjax.harness.ranges import option
from lgjax.harness.study import write_outputs
from lgjax.runs import open_run
from lgjax.studies.contract.render import figure, render, write_markdown

RESULT_KEYS = ("tasks", "schemes", "seeds", "steps", "batch", "train_lengths", "extend", "shifts",
               "learnable", "cells", "lab", "lab_names")  # what the report reads


@dataclass(frozen=True)
class Config:
    source: str = field(default="", metadata={"positional": True})  # results folder or --ckpt-root
    out: str = ""  # report folder (default: the results folder, or <ckpt-root>/report)
    eval_sequences: int = option(
        512, ge=1)  # for a --ckpt-root: evaluation sequences per length and seed
    extend: tuple[int, ...] = option((64, 96, 128), ge=1)  # for a --ckpt-root: extension lengths
    shifts: tuple[int, ...] = option(
        (4, 12), ge=0)  # for a --ckpt-root: PAD prefixes of the shift evaluation
    probe_sequences: int = option(
        256, ge=1)  # for a --ckpt-root: sequences per seed for the loss at every checkpoint


def main(cfg: Config) -> None:
    src = Path(cfg.source)
    if (src / "results.json").is_file() or src.suffix == ".json":
        path = src if src.suffix == ".json" else src / "results.json"
        result = outputs.read_result(path, "source", "contract-train", RESULT_KEYS,
                                     "contract-train")
        out = Path(cfg.out or path.parent)
        check_writable(out, "--out")
    elif (src / "contract").is_dir():
        out = Path(cfg.out or src / "report")
        check_writable(out, "--out")  # before measuring the runs, not after it
        result = measure_root(src, cfg)
    else:
        raise ConfigError(f"source: {src} holds neither results.json nor contract/<task>/"
                          "<scheme> run directories; pass a contract-train --out or --ckpt-root")
    write_outputs(result, out, render, figure, "contract", lambda out: write_markdown(result, out))


def measure_root(root: Path, cfg: Config) -> dict:
    """Measure the finished cells under a checkpoint root (a partial matrix is reported as
    such); the study's options come from the runs' saved configs."""
    from lgjax import checkpoints
    from lgjax.harness import study
    from lgjax.studies.contract import measure as contract_measure
    from lgjax.studies.contract import train as contract_train

    planned = contract_train.Config()
    finished = {}  # name -> (run_dir, config): read before any array, so checks come first
    for run_dir in sorted((root / "contract").glob("*/*")):
        rc = checkpoints.read_config(run_dir)
        if study.is_finished(run_dir, rc):
            finished[f"contract/{run_dir.parent.name}/{run_dir.name}"] = run_dir, rc
    if not finished:
        raise ConfigError(f"source: no finished cell under {root}/contract yet; wait for the "
                          "first cell or pass a smaller run")
    t = next(iter(finished.values()))[1].train
    run = dataclasses.replace(planned.run, seeds=len(t.seeds), steps=t.steps, batch=t.batch,
                              eval_sequences=cfg.eval_sequences)
    study_cfg = dataclasses.replace(planned, run=run, train_lengths=(t.lmin, t.lmax),
                                    extend=cfg.extend, shifts=cfg.shifts,
                                    probe_sequences=cfg.probe_sequences)
    contract_train.check(study_cfg)  # --extend/--shifts, before restoring a single cell
    trained = {}
    for name, (run_dir, rc) in finished.items():
        manager = open_run(run_dir)
        with manager:
            states = manager.restore(rc.train.steps)
        trained[name] = study.Trained(rc, states, run_dir, 0.0)
    result = contract_measure.measure_matrix(study_cfg, trained, save=False)  # reads only
    result |= {"planned_tasks": list(planned.tasks), "planned_schemes": list(planned.schemes)}
    return json.loads(json.dumps(result, default=outputs.jsonable))
