"""realizability-train: the trained side of the realizability study, one grid program per
(tier, encoding), every (task x seed) of it in one compiled program (lgjax.grid).

docs/studies/realizability.md, the trained side. Published scale (the defaults): encodings ape
(learned absolute, clamped past L0), NoPE, ALiBi (geometric slopes), sinusoidal, RoPE; ten tasks;
seeds 0..4; tiers 1L1H, 2L4H, 4L4H (pre-LN decoder, MLP 4d GELU, d = 64, 12 content tokens); Adam lr
1e-3, no weight decay, batch 64, 3000 steps, every sequence exactly L0 = 20 long; LG@L = accuracy on
rows i >= L0 at L in {30, 40, 50, 60, 80}, all-row accuracy beside it, train accuracy at L0.
Command: lgjax realizability-train --ckpt-root /work/runs/realizability
  Programs live in <ckpt-root>/<name>/<tier>/<encoding>/ (config.json, checkpoints,
  results.json). A measured program (results.json there) is skipped; an unfinished one
  continues from its newest intact checkpoint with --resume. A tier is 5 x 50 cells x 3000
  steps: under an hour for 1L1H on a 2-core CPU, hours for 2L4H and 4L4H (what each costs:
  claims.COST, measured on docs/results/performance.md): run a deep tier in the background
  and rerun with --resume.
Expect: see realizability-report, which sets these numbers beside alpha.
"""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lgjax import grid
from lgjax.checkpoints import CONFIG_FILE, CheckpointError, read_config, step_folders
from lgjax.checkpoints.integrity import write_atomic
from lgjax.config import ConfigError, ModelConfig, TrainConfig
from lgjax.devices import is_leader
from lgjax.encodings import AlibiOptions, ApeOptions, RopeOptions
from lgjax.harness.ranges import option
from lgjax.harness.study import RunOptions, Study, Trained, product_parts
from lgjax.studies.realizability.score import TASK_NAMES, task_config

ENCODING_OPTIONS = {  # Config -> the options an encoding trains with (the rest: defaults)
    "ape": lambda cfg: ApeOptions(oob="clamp", train_max=cfg.L0, size=max(cfg.test_lengths)),
    "alibi": lambda cfg: AlibiOptions(slopes="geometric"),
    "rope": lambda cfg: RopeOptions(scale=cfg.rope_scale),
}
PROGRAM_RESULTS = "results.json"
RESULT_FIELDS = ("tier", "encoding", "tasks", "seeds", "lengths", "train_acc", "lg", "acc_all",
                 "eval_sequences", "grid")  # what a program's results.json must hold
# no SCALE fields: the grid axes (tiers, encodings, tasks, test lengths) choose which cells run,
# each at the recipe in `run`; a cut selection is a smaller grid, not a reduced scale (the
# report counts the main grid's measurements against the spec's, and a claim whose cells did
# not run reads "not run")


@dataclass(frozen=True)
class Config:
    tiers: tuple[str, ...] = ("1L1H", "2L4H", "4L4H")  # model tiers <layers>L<heads>H, in order
    encodings: tuple[str, ...] = ("ape", "nope", "alibi", "sinusoidal", "rope")  # one program each
    tasks: tuple[str, ...] = TASK_NAMES  # task rows: name, or skip-k (offset k) / pos-k (slot k)
    L0: int = option(20, ge=1)  # every training sequence has exactly this length
    test_lengths: tuple[int, ...] = (30, 40, 50, 60, 80)  # LG@L: accuracy on rows i >= L0
    d: int = option(64, ge=1)  # model width
    vocab: int = option(12, ge=2)  # content tokens
    lr: float = option(1e-3, gt=0)  # Adam learning rate (default betas, no weight decay)
    chunk: int = option(250, ge=1)  # steps per compiled loop call (progress-line granularity)
    ckpt_every: int = option(500, ge=1)  # checkpoint interval in steps (the last two are kept)
    seed_axis: str = "blocks"  # one task's seeds inside the program: vmap, map or blocks
    layout: str = "auto"  # cells in one program: serial|tasks (CPU), flat (accelerator), auto
    rope_scale: float = option(1.0, gt=0)  # RoPE frequency scale (the spec's frequency-scale rows)
    name: str = "realizability"  # programs live in <ckpt-root>/<name>/<tier>/<encoding>/
    run: RunOptions = RunOptions(seeds=5, steps=3000, batch=64, eval_sequences=1024,
                                 out="results/realizability-train")  # shared options


def tier_shape(tier: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)L(\d+)H", tier)
    if not m or int(m[1]) < 1 or int(m[2]) < 1:
        raise ConfigError(f"--tiers: {tier!r} is not <layers>L<heads>H (e.g. 2L4H)")
    return int(m[1]), int(m[2])


def program_grid(cfg: Config, tier: str, encoding: str) -> grid.Grid:
    layers, heads = tier_shape(tier)
    model = ModelConfig(encoding=encoding, arch="transformer", layers=layers, heads=heads,
                        d=cfg.d, query="all",
                        enc=ENCODING_OPTIONS.get(encoding, lambda c: None)(cfg))
    t = TrainConfig(steps=cfg.run.steps, batch=cfg.run.batch, lr=cfg.lr, lmin=cfg.L0,
                    lmax=cfg.L0, seeds=tuple(range(cfg.run.seeds)), chunk=cfg.chunk,
                    ckpt_every=cfg.ckpt_every, seed_axis=cfg.seed_axis,
                    random_positions=cfg.run.random_positions,
                    fast_compile=cfg.run.fast_compile)
    return grid.Grid(tuple(task_config(n, cfg.vocab) for n in cfg.tasks), model, t,
                     layout=grid.resolve_layout(cfg.layout))


def program_name(cfg: Config, tier: str, encoding: str) -> str:
    """The program's run directory under --ckpt-root."""
    return f"{cfg.name}/{tier}/{encoding}"


def programs(cfg: Config) -> dict[str, tuple[str, str, grid.Grid]]:
    """Every program, tier-major: {run name: (tier, encoding, grid)}."""
    return {program_name(cfg, tier, enc): (tier, enc, program_grid(cfg, tier, enc))
            for tier in cfg.tiers for enc in cfg.encodings}


def program_dir(cfg: Config, tier: str, encoding: str) -> Path:
    return Path(cfg.run.ckpt_root) / program_name(cfg, tier, encoding)


def eval_lengths(cfg: Config) -> tuple[int, ...]:
    return (cfg.L0, *cfg.test_lengths)


def saved_results(path: Path) -> tuple[dict | None, str]:
    """The program's results.json and its grid: (results, grid) when readable, (None, why) when
    damaged (truncated, empty, not a program's measurement), (None, "") when there is none."""
    f = path / PROGRAM_RESULTS
    if not f.is_file():
        return None, ""
    try:
        res = json.loads(f.read_text())
        missing = [k for k in RESULT_FIELDS if not isinstance(res, dict) or k not in res]
        if missing:
            return None, f"it lacks {', '.join(missing)}"
        saved = grid.Grid.from_json(json.dumps(res["grid"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as err:
        return None, f"{type(err).__name__}: {str(err)[:120]}"
    return res, saved


def measured(cfg: Config, path: Path, g: grid.Grid) -> dict | None:
    """The program's saved measurement (its results.json), when it is of this very grid and
    evaluation; such a program needs no training and no evaluation."""
    res, saved = saved_results(path)
    # compared as configs read back, not dicts: fields added since the run was saved take their
    # defaults (and a variant encoding reads back as the encoding it varies, with its options)
    same = res is not None and saved.to_json() == g.to_json() and \
        (res["lengths"], res["eval_sequences"]) == (list(cfg.test_lengths), cfg.run.eval_sequences)
    return res if same else None


def check(cfg: Config) -> None:
    if not (cfg.tiers and cfg.encodings and cfg.tasks and cfg.test_lengths):
        raise ConfigError("--tiers/--encodings/--tasks/--test-lengths: give at least one each")
    if min(cfg.test_lengths) <= cfg.L0:
        raise ConfigError(f"--test-lengths: every test length must exceed L0 = {cfg.L0}")
    for name, (_, _, g) in programs(cfg).items():  # a measurement is never lost for another
        path = Path(cfg.run.ckpt_root) / name
        res, why = saved_results(path)
        final = g.train.steps in step_folders(path)
        if res is None and why:  # damaged: nothing left to keep
            print(f"lgjax: {path / PROGRAM_RESULTS} is damaged ({why}); the program is "
                  + ("measured again from its final checkpoint" if final else
                     "trained to its end and measured again (it has no final checkpoint)"),
                  file=sys.stderr)
        elif res is not None and measured(cfg, path, g) is None and not final:
            raise ConfigError(f"{path}/{PROGRAM_RESULTS} holds a measurement of another grid or "
                              "evaluation and no final checkpoint to measure again; keep "
                              "--test-lengths/--eval-sequences as they were or choose another "
                              "--ckpt-root")
        elif res is not None and (path / CONFIG_FILE).exists():
            try:  # measured: nothing here reads its checkpoints, but open_run and dynamics do
                read_config(path, grid.Grid)
            except CheckpointError as err:
                print(f"lgjax: {err}; the program's measurement ({PROGRAM_RESULTS}) is used as "
                      f"it is; its checkpoints open again once {CONFIG_FILE} is restored (the "
                      f"'grid' entry of {PROGRAM_RESULTS} holds it)", file=sys.stderr)


def runs(cfg: Config) -> dict[str, grid.Grid]:
    """The programs not measured yet (the harness trains, resumes or reloads them)."""
    return {name: g for name, (_, _, g) in programs(cfg).items()
            if measured(cfg, Path(cfg.run.ckpt_root) / name, g) is None}


def measured_runs(cfg: Config) -> dict[str, tuple[grid.Grid, Path]]:
    """The programs measured already: read from their folders, not loaded."""
    root = Path(cfg.run.ckpt_root)
    return {name: (g, root / name) for name, (_, _, g) in programs(cfg).items()
            if measured(cfg, root / name, g) is not None}


def parts(cfg: Config) -> dict[str, Config]:
    """One command per program (tier x encoding): on one accelerator several programs share it
    (`reproduce --jobs N`), and the whole grid then reads their saved measurements."""
    return product_parts(cfg, "tiers", "encodings")


def on_trained(cfg: Config, name: str, t: Trained) -> None:
    """Measure a program as soon as it is trained and save that in its folder (results.json):
    a job killed later keeps it. A program another job measured meanwhile is left as it is."""
    tier, enc, g = programs(cfg)[name]
    if measured(cfg, t.run_dir, g) is not None:
        return
    t0 = time.perf_counter()
    ev = grid.evaluate_grid(t.config, t.states.params, eval_lengths(cfg),
                            cfg.run.eval_sequences, new_from=cfg.L0)
    acc, new = np.asarray(ev.accuracy), np.asarray(ev.accuracy_new)
    res = {"tier": tier, "encoding": enc, "tasks": list(cfg.tasks),
           "seeds": list(t.config.train.seeds), "L0": cfg.L0, "lengths": list(cfg.test_lengths),
           "train_acc": acc[:, :, 0].tolist(), "lg": new[:, :, 1:].tolist(),
           "acc_all": acc[:, :, 1:].tolist(), "train_seconds": t.seconds,
           "trained_seconds": t.trained_seconds,
           "eval_seconds": time.perf_counter() - t0, "eval_sequences": cfg.run.eval_sequences,
           "grid": json.loads(t.config.to_json())}
    # a damaged (or other grid's) file is replaced; a fresh one is written only where no job
    # wrote one meanwhile
    f = t.run_dir / PROGRAM_RESULTS
    if is_leader():  # every process measured (the evaluation is split over them); one writes
        write_atomic(f, json.dumps(res, indent=1), replace=f.exists())


def measure(cfg: Config, trained: dict[str, Trained]) -> dict:
    """Every program's saved measurement (on_trained saved those trained now)."""
    root = Path(cfg.run.ckpt_root)
    return {"experiment": "realizability-train", "programs": [
        measured(cfg, root / name, g) for name, (_, _, g) in programs(cfg).items()]}


def table(result: dict) -> str:
    """Seed means per tier x encoding x task: train accuracy and LG at every test length."""
    lines = []
    for p in result["programs"]:
        lengths = p["lengths"]
        if not lines or lines[-1] != "":
            lines.append("")
        lines.append(f"{p['tier']} {p['encoding']}: train acc | LG@" + " ".join(
            f"{L:>5d}" for L in lengths) + " | all-row acc@" + str(lengths[-1]))
        for i, task in enumerate(p["tasks"]):
            lg = np.mean(p["lg"][i], axis=0)
            lines.append(f"  {task:10s} {np.mean(p['train_acc'][i]):6.3f} |      "
                         + " ".join(f"{x:5.3f}" for x in lg)
                         + f" | {np.mean(np.asarray(p['acc_all'][i])[:, -1]):5.3f}")
    return "\n".join(lines[1:])


STUDY = Study(__name__, Config, runs, measure, table, check=check, eval_lengths=eval_lengths,
              on_trained=on_trained, measured_runs=measured_runs, parts=parts)
