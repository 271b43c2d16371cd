"""How a study package declares itself, once: its commands and what `lgjax reproduce` runs.

The cli and `lgjax reproduce` read these declarations (`lgjax.studies.STUDIES`); nothing else
keeps a list of commands. Declarations are plain data, so reading them imports no JAX.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Command:
    module: str  # holds `Config` and the study hooks (lgjax.harness.study.Study), or `main(cfg)`
    help: str  # one line for `lgjax --help`


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
