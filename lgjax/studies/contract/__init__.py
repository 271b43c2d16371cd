"""Which relation each encoding preserves (docs/studies/contract.md).

tasks (its four task families, registered into the core registry), scores (the comparator lab's
schemes and metrics), lab (every encoding's kernel through them), readouts, measure and verdicts
(the task x scheme x intervention matrix), train, report.
"""

from lgjax.harness.declare import Command, StudyDeclaration

_ = f"{__name__}."
STUDY = StudyDeclaration(
    name="contract",
    package=__name__,
    commands={
        "contract-lab": Command(_ + "lab", "positional contracts of every encoding"),
        "contract-train": Command(_ + "train", "contract matrix: train, measure"),
        "contract-report": Command(_ + "report", "contract matrix report, verdicts"),
    },
    experiments=("contract-lab", "contract-train", "contract-report"),
    longest_first=("contract-train",),  # the matrix; the lab takes seconds
    claims="contract.json",
    readers=_ + "claims",
    plan=_ + "reproduce",
)
