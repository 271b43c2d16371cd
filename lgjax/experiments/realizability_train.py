"""realizability-train: the trained side of the realizability study, one grid program per
(tier, encoding), every (task x seed) of it in one compiled program (lgjax.grid).

Spec: realizability.md, "The trained side". Published scale (the defaults): encodings learned-abs
(clamped past L0), NoPE, ALiBi (geometric slopes), sinusoidal, RoPE; ten tasks; seeds 0..4;
tiers 1L1H, 2L4H, 4L4H (pre-LN decoder, MLP 4d GELU, d = 64, 12 content tokens); Adam lr 1e-3,
no weight decay, batch 64, 3000 steps, every sequence exactly L0 = 20 long; LG@L = accuracy on
rows i >= L0 at L in {30, 40, 50, 60, 80}, all-row accuracy beside it, train accuracy at L0.
Command: lgjax realizability-train --ckpt-root /work/runs/realizability
  Programs live in <ckpt-root>/<name>/<tier>/<encoding>/ (config.json, checkpoints,
  results.json). A finished program (results.json there) is skipped; an unfinished one continues
  from its latest checkpoint with --resume. Cost here (benchmarks/bench_grid.py): 8.5, 18.6 and
  37 ms of CPU time per cell-step at 1L1H, 2L4H and 4L4H; a tier is 5 x 50 cells x 3000 steps,
  so ~1.8, 3.9 and 7.8 CPU-hours, i.e. hours of wall time per tier on this shared 2-core CPU:
  run it in the background and rerun with --resume.
Expect: see realizability-report, which sets these numbers beside alpha.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lgjax import grid
from lgjax import realizability as R
from lgjax.checkpoints import step_folders
from lgjax.config import ConfigError, ModelConfig, TrainConfig
from lgjax.encodings import AlibiOptions, ApeOptions, RopeOptions
from lgjax.study import RunOptions, check_options, check_writable, is_reduced

ENCODING_OPTIONS = {  # Config -> the options an encoding trains with (the rest: defaults)
    "ape": lambda cfg: ApeOptions(oob="clamp", train_max=cfg.L0, size=max(cfg.test_lengths)),
    "alibi": lambda cfg: AlibiOptions(slopes="geometric"),
    "rope": lambda cfg: RopeOptions(scale=cfg.rope_scale),
}
PROGRAM_RESULTS = "results.json"
SCALE = ("tiers", "encodings", "tasks", "test_lengths")  # grid axes: reduced when one is cut


@dataclass(frozen=True)
class Config:
    tiers: tuple[str, ...] = ("1L1H", "2L4H", "4L4H")  # model tiers <layers>L<heads>H, in order
    encodings: tuple[str, ...] = ("ape", "nope", "alibi", "sinusoidal", "rope")  # one program each
    tasks: tuple[str, ...] = R.TASK_NAMES  # task rows: name, or skip-k (offset k) / pos-k (slot k)
    L0: int = 20  # every training sequence has exactly this length
    test_lengths: tuple[int, ...] = (30, 40, 50, 60, 80)  # LG@L: accuracy on rows i >= L0
    d: int = 64  # model width
    vocab: int = 12  # content tokens
    lr: float = 1e-3  # Adam learning rate (default betas, no weight decay)
    chunk: int = 250  # steps per compiled loop call (progress-line granularity)
    ckpt_every: int = 500  # checkpoint interval in steps (the last two are kept)
    seed_axis: str = "blocks"  # one task's seeds inside the program: vmap, map or blocks
    layout: str = "serial"  # how cells share a program: serial|tasks (CPU) or flat (accelerator)
    rope_scale: float = 1.0  # RoPE frequency scale (the spec's frequency-scale rows)
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
                    ckpt_every=cfg.ckpt_every, seed_axis=cfg.seed_axis)
    return grid.Grid(tuple(R.task_config(n, cfg.vocab) for n in cfg.tasks), model, t)


def programs(cfg: Config) -> dict[tuple[str, str], grid.Grid]:
    return {(tier, enc): program_grid(cfg, tier, enc) for tier in cfg.tiers
            for enc in cfg.encodings}


def program_dir(cfg: Config, tier: str, encoding: str) -> Path:
    return Path(cfg.run.ckpt_root) / cfg.name / tier / encoding


def eval_lengths(cfg: Config) -> tuple[int, ...]:
    return (cfg.L0, *cfg.test_lengths)


def finished_result(path: Path, g: grid.Grid) -> dict | None:
    f = path / PROGRAM_RESULTS
    if not f.is_file():
        return None
    res = json.loads(f.read_text())
    # compared as configs, not dicts: fields added since the run was saved take their defaults
    return res if grid.Grid.from_json(json.dumps(res["grid"])) == g else None


def preflight(cfg: Config) -> dict[tuple[str, str], grid.Grid]:
    """Every check of every program before anything trains or is written."""
    check_options(cfg.run)
    if cfg.layout not in grid.LAYOUTS:
        raise ConfigError(f"--layout: use one of {sorted(grid.LAYOUTS)}, not {cfg.layout!r}")
    if cfg.run.devices > 1:
        raise ConfigError("--devices: the grid runner runs on one device; use 0 or 1")
    if not (cfg.tiers and cfg.encodings and cfg.tasks and cfg.test_lengths):
        raise ConfigError("--tiers/--encodings/--tasks/--test-lengths: give at least one each")
    if min(cfg.test_lengths) <= cfg.L0:
        raise ConfigError(f"--test-lengths: every test length must exceed L0 = {cfg.L0}")
    progs = programs(cfg)
    for (tier, enc), g in progs.items():
        grid.check(g, eval_lengths(cfg))
        path = program_dir(cfg, tier, enc)
        cfg_file = path / grid.CONFIG_FILE
        if cfg_file.exists() and grid.Grid.from_json(cfg_file.read_text()) != g:
            raise ConfigError(f"--ckpt-root: {path} holds a different grid config; delete it or "
                              "choose another --ckpt-root")
        steps = step_folders(path)
        if steps and not cfg.run.resume and finished_result(path, g) is None:
            raise ConfigError(f"{path} holds an unfinished program (latest step {steps[-1]} of "
                              f"{g.train.steps}); pass --resume to continue it")
    check_writable(Path(cfg.run.ckpt_root), "--ckpt-root")
    check_writable(Path(cfg.run.out), "--out")
    return progs


def measure_program(cfg: Config, g: grid.Grid, states) -> dict:
    ev = grid.evaluate_grid(g, states.params, eval_lengths(cfg), cfg.run.eval_sequences,
                            new_from=cfg.L0)
    acc, new = np.asarray(ev.accuracy), np.asarray(ev.accuracy_new)
    return {"train_acc": acc[:, :, 0], "lg": new[:, :, 1:], "acc_all": acc[:, :, 1:]}


class Progress:
    """One stderr line per chunk: program step, grid cells done / total, ETAs."""

    def __init__(self, total_cells: int, done_cells: int, enabled: bool):
        self.total, self.done, self.enabled = total_cells, done_cells, enabled

    def start(self, tier: str, enc: str, g: grid.Grid, start_step: int) -> None:
        self.label, self.g = f"{tier}/{enc}", g
        self.first_step, self.first_t = start_step, None

    def chunk(self, step: int) -> None:
        now = time.perf_counter()
        if self.first_t is None:  # the first chunk pays compilation: time from its end
            self.first_t, self.first_step = now, step
            eta = float("nan")
        else:
            rate = (now - self.first_t) / (step - self.first_step)
            eta = rate * (self.g.train.steps - step)
        self.say(f"{self.label}: step {step}/{self.g.train.steps}, program ETA {fmt(eta)}; "
                 f"grid cells done {self.done}/{self.total}")

    def finish(self, n_cells: int, seconds: float) -> None:
        self.done += n_cells
        left = self.total - self.done
        per_cell = seconds / n_cells
        self.say(f"{self.label}: done in {fmt(seconds)}; grid cells done {self.done}/"
                 f"{self.total}, ETA at this tier's rate {fmt(left * per_cell)}")

    def say(self, text: str) -> None:
        if self.enabled:
            print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def fmt(seconds: float) -> str:
    if not np.isfinite(seconds):
        return "?"
    return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m{int(seconds % 60):02d}s"


def run_program(cfg: Config, tier: str, enc: str, g: grid.Grid, progress: Progress) -> dict:
    path = program_dir(cfg, tier, enc)
    steps = step_folders(path)
    progress.start(tier, enc, g, steps[-1] if steps else 0)
    t0 = time.perf_counter()
    states = grid.train_program(g, path, on_chunk=lambda step, s, l: progress.chunk(step),
                                runner=grid.make_grid_runner(g, cfg.layout))
    t1 = time.perf_counter()
    res = {"tier": tier, "encoding": enc, "tasks": list(cfg.tasks),
           "seeds": list(g.train.seeds), "L0": cfg.L0, "lengths": list(cfg.test_lengths),
           **{k: np.asarray(v).tolist() for k, v in measure_program(cfg, g, states).items()},
           # this process's share: a resumed program began at resumed_from_step
           "train_seconds": t1 - t0, "resumed_from_step": steps[-1] if steps else 0,
           "eval_seconds": time.perf_counter() - t1, "eval_sequences": cfg.run.eval_sequences,
           "grid": json.loads(g.to_json())}
    (path / PROGRAM_RESULTS).write_text(json.dumps(res, indent=1))
    progress.finish(g.shape[0] * g.shape[1], time.perf_counter() - t0)
    return res


def collect(cfg: Config, results: list[dict]) -> dict:
    return {"experiment": "realizability-train", "config": dataclasses.asdict(cfg),
            "reduced": is_reduced(cfg, SCALE), "programs": results}


def main(cfg: Config) -> dict:
    progs = preflight(cfg)
    out = Path(cfg.run.out)
    out.mkdir(parents=True, exist_ok=True)
    n_cells = {k: g.shape[0] * g.shape[1] for k, g in progs.items()}
    done = {k: finished_result(program_dir(cfg, *k), g) for k, g in progs.items()}
    progress = Progress(sum(n_cells.values()),
                        sum(n_cells[k] for k, r in done.items() if r), cfg.run.progress)
    results = []
    for (tier, enc), g in progs.items():
        res = done[(tier, enc)] or run_program(cfg, tier, enc, g, progress)
        results.append(res)
        merged = collect(cfg, results)
        (out / "results.json").write_text(json.dumps(merged, indent=1))
    print(table(merged))
    print(f"wrote {out}/results.json")
    return merged


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
