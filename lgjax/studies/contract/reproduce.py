"""What `lgjax reproduce contract` runs (its claims: contract.json, readers: claims).

contract-lab at the three settings the claims file lists (no training, seconds each), then the
matrix (contract-train at its Config: 4 tasks x 6 schemes x 5 seeds, resumable cell by cell
under --ckpt-root) and contract-report over it, whose verdicts judge the seven predictions.
--quick: QUICK_RUN's seeds and steps with QUICK's smaller evaluations.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from lgjax.studies.contract import lab as lab_command
from lgjax.studies.contract import report as report_command
from lgjax.studies.contract import train as train_command
from lgjax.studies.contract.claims import SETTINGS

QUICK = {"train": {"probe_sequences": 64, "extend": (64,), "shifts": (4,)}}
# the matrix's transformers at XLA's defaults even at --quick: their steps outweigh the
# compilation (docs/results/performance.md, the measurements behind the defaults)
QUICK_RUN_CHANGES = {"fast_compile": False}


def steps(cfg, root: Path, quick_run) -> list:
    from lgjax.harness.declare import Step, how_steps_run

    out = Path(cfg.out)
    plan = []
    for key, (train, test, shift) in SETTINGS.items():
        sub = out / "contract-lab" / key
        plan.append(Step("contract-lab", key, lab_command, dataclasses.replace(
            lab_command.Config(), train=train, test=test, shift=shift, out=str(sub)), sub))
    matrix = out / "contract-train"
    run = dataclasses.replace(dataclasses.replace(quick_run, **QUICK_RUN_CHANGES) if cfg.quick
                              else train_command.Config().run, out=str(matrix),
                              ckpt_root=str(root), **how_steps_run(cfg))
    over = QUICK["train"] if cfg.quick else {}
    plan.append(Step("contract-train", "", train_command,
                     dataclasses.replace(train_command.Config(), run=run, **over), matrix))
    report = out / "contract-report"
    plan.append(Step("contract-report", "", report_command, dataclasses.replace(
        report_command.Config(), source=str(matrix), out=str(report)), report))
    return plan
