"""How a study package declares itself, once: its commands and what `lgjax reproduce` runs.

The cli and `lgjax reproduce` read these declarations (`lgjax.studies.STUDIES`); nothing else
keeps a list of commands. Declarations are plain data, so reading them imports no JAX.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Command:
    module: str  # holds `Config` and the study hooks (lgjax.harness.study.Study), or `main(cfg)`
    help: str  # one line for `lgjax --help`


# a study command's module -> the command's name, filled as each study package declares itself
# (a study module's package, and with it its declaration, is imported before the module), so
# that the harness names a study's results folder without importing the studies
COMMAND_OF: dict[str, str] = {}


@dataclass(frozen=True)
class StudyDeclaration:
    name: str  # as `lgjax reproduce NAME` spells it
    package: str  # the study's package (its claims file lies there)
    commands: dict[str, Command]  # command name -> Command, in the order --help lists them
    experiments: tuple[str, ...] = ()  # what its claims read, in running order (command names)
    claims: str = ""  # the claims file in the package ("" = none yet)
    readers: str = ""  # the module with the claim readers (REGISTRY and EXPECTATIONS)
    quick: dict = field(default_factory=dict)  # experiment -> overrides of the --quick pass
    on_cpu: dict = field(default_factory=dict)  # experiment -> overrides at full scale on a CPU
    # experiments started first when `lgjax reproduce --jobs` runs steps at once (the longest,
    # so that the last to finish is short)
    longest_first: tuple[str, ...] = ()
    plan: str = ""  # a module whose steps(cfg, ckpt_root, quick_run) lists what `lgjax
    # reproduce` runs ("": each experiment once, at its Config with the overrides above)
    tiers: bool = False  # its plan reads `lgjax reproduce --tiers` (model tiers to train)

    def __post_init__(self):
        COMMAND_OF.update({c.module: name for name, c in self.commands.items()})


@dataclass(frozen=True)
class Step:
    """One command run of a reproduction: its results land at out/results.json (or
    report.json) and are read as results[experiment] (key "") or results[experiment][key]."""

    experiment: str
    key: str
    module: object
    config: object
    out: Path
    part_of: str = ""  # the declared experiment it serves, when its own name is not one
    # a share of the step of the same experiment and key after it (the module's `parts`), run
    # beside the other shares under --jobs N; the step then reads what they saved
    piece: str = ""


def run_devices(cfg) -> int:
    """`lgjax reproduce --devices` (cfg: its Config), where 0 means every device that divides the
    seed count, except at --quick: one device. Quick runs are compile-bound and tiny, and a
    program split over devices compiles slower than it then runs faster
    (docs/results/performance.md)."""
    return cfg.devices or (1 if cfg.quick else 0)


def how_steps_run(cfg) -> dict:
    """The run options that `lgjax reproduce` (cfg: its Config) gives every step's runs: how
    they run, not what they measure."""
    return {"progress": cfg.progress, "devices": run_devices(cfg),
            "side_by_side": cfg.side_by_side}
