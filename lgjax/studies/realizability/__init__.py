"""A training-free score alpha_L that predicts length generalization
(docs/studies/realizability.md).

score (alpha_L: the pinned fit and its ablations), stats (rank correlation, bootstrap, AUC),
alpha (the score for every encoding x task), train (the trained grid), report (alpha vs trained
LG), figures.
"""

from lgjax.harness.declare import Command, StudyDeclaration

_ = f"{__name__}."
STUDY = StudyDeclaration(
    name="realizability",
    package=__name__,
    commands={
        "realizability-alpha": Command(_ + "alpha",
                                       "training-free score alpha_L for every encoding x task"),
        "realizability-train": Command(_ + "train", "the realizability grid"),
        "realizability-report": Command(_ + "report", "alpha vs trained LG"),
    },
    experiments=("realizability-alpha", "realizability-train", "realizability-report"),
    # the longest at --quick (docs/results/performance.md, the measurements behind the defaults)
    longest_first=("realizability-train", "realizability-train-L0"),
    claims="realizability.json",
    readers=_ + "claims",
    plan=_ + "reproduce",
    tiers=True,
)
