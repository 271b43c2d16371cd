"""Every command of `lgjax`: each study's, as its package declares them, then the harness's."""

from __future__ import annotations

from lgjax.harness.declare import Command

HARNESS = {  # the commands of no one study
    "bench": Command("lgjax.bench.command", "speed of the multi-seed step vs the alternatives"),
    "reproduce": Command("lgjax.reproduce.command",
                         "run a study's experiments and check every published claim"),
    "curves": Command("lgjax.harness.curves",
                      "training loss against step per seed, from runs' metrics.jsonl"),
    "profile": Command("lgjax.profile.command",
                       "one encoding through every study's instruments, beside the canonical"),
    "launch": Command("lgjax.harness.launch",
                      "run a command as a job of several processes on this machine"),
}


def commands() -> dict[str, Command]:
    """name -> Command: each study's in its declared order, then the harness's."""
    from lgjax.studies import STUDIES

    return {n: c for s in STUDIES.values() for n, c in s.commands.items()} | HARNESS
