"""lgjax profile ENCODING: one encoding through every study's instruments, beside the canonical
encodings.

  contract lab at init (no training) | alpha_L with the generic head (no training) |
  implicit bias: fixed offset K = 1, 2 (trained) | realizability: 1L1H over its tasks (trained)
Command: lgjax profile ENCODING [--plugin my_pkg.my_module] [--set key=value,...]
                               [--quick | --full] [--out DIR] [--ckpt-root DIR] [--resume]
                               [--no-progress] [--devices N]
  --quick 20-50 s here (reduced), default 1-1.5 min (reduced), --full the published scale
  (adds the 2L4H tier; hours here, minutes on an accelerator). The canonical encodings' numbers
  come from reference.json (the same recipe, measured by the project; see reference.py).
The trained instruments' runs take the shared run options that mean something here, as every
training command does: --ckpt-root (default <out>/checkpoints), --resume (a finished run is
reloaded, never retrained, with or without it; it continues an interrupted one), --progress,
--devices. The recipe sets the rest (seeds, steps, batch, evaluation sequences); --fast-compile
is left out: it is part of each run's config, so its runs would not be the reference's recipe.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from lgjax.config import ConfigError
from lgjax.encodings import ENCODINGS
from lgjax.harness.outputs import check_writable
from lgjax.harness.ranges import option
from lgjax.profile import card, compare, instruments, options, recipes, reference, summary


@dataclass(frozen=True)
class Config:
    encoding: str = field(default="", metadata={"positional": True})  # a registered encoding
    set: tuple[str, ...] = ()  # the encoding's options, key=value,... (e.g. base=1000)
    quick: bool = False  # the quick recipe (20-50 s here, reduced)
    full: bool = False  # the published scale: adds the 2L4H tier (hours on this CPU)
    out: str = ""  # profile.md/.html/.json and the runs (default results/profile/<encoding>)
    reference: str = ""  # the canonical encodings' results (default: the packaged one)
    random_positions: int = option(0, ge=0)  # M: train at sorted random positions in [0, M); 0 off
    # the shared run options of its trained instruments (lgjax.harness.study.RunOptions' help)
    ckpt_root: str = ""  # run directories live under this folder (default: <out>/checkpoints)
    resume: bool = False  # continue unfinished runs from their latest checkpoint
    progress: bool = True  # progress bars (on stderr)
    devices: int = option(0, ge=0)  # devices of the seed axis (0: all that divide the seed count)


def runs_of(cfg: Config) -> instruments.Runs:
    return instruments.Runs(ckpt_root=cfg.ckpt_root, resume=cfg.resume, progress=cfg.progress,
                            devices=cfg.devices)


def recipe_of(cfg: Config) -> recipes.Recipe:
    if cfg.quick and cfg.full:
        raise ConfigError("--quick/--full: choose one (or neither for the default recipe)")
    return recipes.RECIPES["quick" if cfg.quick else "full" if cfg.full else "default"]


def check(cfg: Config, name: str, recipe: recipes.Recipe) -> Path:
    """The output folder of profiling `name` (the encoding, or its variant) at `recipe`;
    raises ConfigError before anything trains or is written."""
    out = Path(cfg.out or f"results/profile/{cfg.encoding}")
    check_writable(out, "--out")
    instruments.preflight(name, recipe, out, cfg.random_positions, runs_of(cfg))
    return out


def main(cfg: Config) -> int:
    import jax

    if jax.process_count() > 1:  # (found late otherwise: after the runs it can split trained)
        raise ConfigError(f"profile runs in one process, not a job of {jax.process_count()}: "
                          "some of its instruments train or measure a single seed, which the "
                          "job's processes cannot split; run it without srun/lgjax launch "
                          "(LGJAX_DISTRIBUTED unset)")
    if cfg.encoding not in ENCODINGS:
        raise ConfigError(f"encoding: unknown encoding {cfg.encoding!r}; choose from "
                          f"{sorted(ENCODINGS)} (a plugin's: pass --plugin with its module)")
    recipe = recipe_of(cfg)  # a bad recipe is named before the options
    with options.variant(cfg.encoding, options.parse(cfg.encoding, cfg.set)) as name:
        return profile(cfg, name, recipe)


def profile(cfg: Config, name: str, recipe: recipes.Recipe) -> int:
    out = check(cfg, name, recipe)
    ref_file = Path(cfg.reference) if cfg.reference else reference.FILE
    ref = reference.checked(ref_file, recipe)  # before anything trains
    t0 = time.perf_counter()
    inst, secs = instruments.measure_all(name, recipe, out, M=cfg.random_positions,
                                         runs=runs_of(cfg))
    ref_inst = ref["encodings"] if ref else {}
    note = (f"{', '.join(ref_inst)} from {ref_file.name} (made by `{ref['command']}`, "
            f"{reference.made_with(ref)})"
            if ref else f"none: {ref_file} has no '{recipe.name}' entry")
    result = {"encoding": name, "plugins": instruments.plugin_modules(name),
              "random_positions": cfg.random_positions,
              "recipe": recipe.as_dict(), "reduced": recipes.reduced(recipe),
              "wall_seconds": time.perf_counter() - t0, "seconds": secs,
              "summary": summary.of(inst), "reference_note": note,
              "reference_summary": {n: summary.of(x) for n, x in ref_inst.items()},
              "comparison_rule": compare.RULE, "comparison": compare.of(inst, ref_inst, name)}
    files = card.write(result, inst, ref_inst, out)
    print("\n".join(card.said(result)))
    print(f"wrote {', '.join(str(f) for f in files)} ({result['wall_seconds']:.0f} s)")
    return 0
