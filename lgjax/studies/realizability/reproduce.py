"""What `lgjax reproduce realizability` runs (its claims: realizability.json, readers: claims).

Always: the alpha study at L0 = 20 (and at L0 = 10, 40 for Table 8), seconds. Trained, at the
spec's recipe (5 seeds, 3000 steps): the 1L1H tier of the main grid, the L0-sensitivity grids
(1L1H at L0 = 10 and 40, Table 8's 5 tasks, tested at 3 L0) and the RoPE frequency-scale rows
(RoPE skip-3, 1L1H, scales 0.3 ... 0.01); then realizability-report over all of them. The
deeper tiers (2L4H, 4L4H: Tables 3-4, 9) and the d = 128 scale check (Table 7) run with
--tiers (e.g. --tiers 2L4H,4L4H or --tiers all) and by default on an accelerator. Every grid
program resumes from its checkpoints under --ckpt-root, across processes and sessions.
--quick: the same plan with QUICK_RUN's seeds and steps and QUICK's smaller evaluations.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax

from lgjax.config import ConfigError
from lgjax.studies.realizability import alpha as alpha_command
from lgjax.studies.realizability import report as report_command
from lgjax.studies.realizability import train as train_command

STUDY = "realizability"
TABLE8_TASKS = ("prev", "skip-3", "copy", "reverse", "first")
SENSITIVITY_L0 = (10, 40)  # beside the main grid's L0 = 20
ROPE_SCALES = (0.3, 0.1, 0.03, 0.01)  # beside the main grid's 1.0
_ALPHA = alpha_command.Config()
MAIN_SETTING_ONLY = {"sweep_nums": (_ALPHA.num,), "sweep_bases": (_ALPHA.base,),
                     "sweep_scales": (_ALPHA.scale,)}  # no frequency sweep
CPU_TIERS = ("1L1H",)  # the tier the theory describes; the others on request on a CPU
SCALE_TIERS = ("1L1H", "2L4H")  # Table 7's
# --quick: smaller evaluations and bootstraps (the run options come from QUICK_RUN). The grids
# at XLA's defaults: their steps outweigh the compilation even at 300 steps (docs/results/
# performance.md, the measurements behind the defaults)
QUICK = {"alpha": {}, "train": {"run": {"eval_sequences": 256, "fast_compile": False}},
         "report": {"resamples": 1000}, "scale_check": {"run": {"seeds": 2}}}


def tiers(cfg) -> tuple[str, ...]:
    given = tuple(cfg.tiers)
    if given == ("all",) or (not given and jax.default_backend() != "cpu"):
        return train_command.Config().tiers
    for t in given:
        train_command.tier_shape(t)  # a malformed tier is one line, before anything runs
    unknown = [t for t in given if t not in train_command.Config().tiers]
    if unknown:
        known = ",".join(train_command.Config().tiers)
        raise ConfigError(f"--tiers: {unknown}; choose from {known} or all")
    return tuple(t for t in train_command.Config().tiers if t in CPU_TIERS + given)


def _replace(config, over: dict):
    over = dict(over)
    run = over.pop("run", {})
    if run:
        over["run"] = dataclasses.replace(config.run, **run)
    return dataclasses.replace(config, **over)


def steps(cfg, root: Path, quick_run) -> list:
    from lgjax.harness.declare import Step, how_steps_run

    out, chosen = Path(cfg.out), tiers(cfg)
    quick = QUICK if cfg.quick else {}

    def grid(name: str, sub: Path, **over):
        run = quick_run if cfg.quick else train_command.Config().run
        how = how_steps_run(cfg)
        run = dataclasses.replace(run, out=str(sub), ckpt_root=str(root),
                                  **how | {"devices": min(how["devices"], 1)})
        c = _replace(dataclasses.replace(train_command.Config(), run=run), quick.get("train", {}))
        return dataclasses.replace(c, name=name, **over)  # the step's own settings last

    def alpha(sub: Path, **over):
        c = _replace(alpha_command.Config(), quick.get("alpha", {}))
        return dataclasses.replace(c, out=str(sub), **over)

    # cheapest first, so that a run stopped early has the most finished parts
    plan = [Step("realizability-alpha", "", alpha_command, alpha(out / "realizability-alpha"),
                 out / "realizability-alpha")]
    sens_alpha, sens_train, scales = [], [], []
    for L0 in SENSITIVITY_L0:
        sub = out / "sensitivity" / f"alpha-L0={L0}"
        sens_alpha.append(sub)
        plan.append(Step("realizability-alpha-L0", f"L0={L0}", alpha_command,
                         alpha(sub, L0=L0, lengths=(3 * L0,), focus_length=3 * L0,
                               tasks=TABLE8_TASKS, **MAIN_SETTING_ONLY),
                         sub, part_of="realizability-report"))
    for s in ROPE_SCALES:
        sub = out / "rope-scale" / f"scale={s:g}"
        scales.append(sub)
        plan.append(Step("realizability-train-scale", f"{s:g}", train_command,
                         grid(f"realizability-rope-scale-{s:g}", sub, tiers=("1L1H",),
                              encodings=("rope",), tasks=(report_command.SCALE_TASK,),
                              rope_scale=s),
                         sub, part_of="realizability-report"))
    main = out / "realizability-train"
    plan.append(Step("realizability-train", "", train_command,
                     grid("realizability", main, tiers=chosen), main))
    for L0 in SENSITIVITY_L0:
        sub = out / "sensitivity" / f"train-L0={L0}"
        sens_train.append(sub)
        plan.append(Step("realizability-train-L0", f"L0={L0}", train_command,
                         grid(f"realizability-L0-{L0}", sub, tiers=("1L1H",), L0=L0,
                              tasks=TABLE8_TASKS, test_lengths=(3 * L0,)),
                         sub, part_of="realizability-report"))
    check = out / "scale-check"
    deep = [t for t in chosen if t != "1L1H"]
    if deep:
        c = grid("realizability-d128", check, tiers=SCALE_TIERS,
                 tasks=report_command.CORE_TASKS, d=128, vocab=64)
        plan.append(Step("realizability-scale-check", "", train_command,
                         _replace(c, {"run": {"seeds": 2}, **quick.get("scale_check", {})}),
                         check, part_of="realizability-report"))
    rep = dataclasses.replace(
        report_command.Config(), results=str(main),
        alpha=str(out / "realizability-alpha" / "results.json"),
        out=str(out / "realizability-report"),
        sensitivity=tuple(map(str, sens_train)),
        sensitivity_alpha=tuple(str(p / "results.json") for p in sens_alpha),
        rope_scale=tuple(map(str, scales)), scale_check=str(check) if deep else "",
        **quick.get("report", {}))
    plan.append(Step("realizability-report", "", report_command, rep, out / "realizability-report"))
    return plan
