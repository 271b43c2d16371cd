"""contract-train: the contract study's matrix, task x scheme x intervention, on the harness.

The contract study's trained matrix (docs/studies/contract.md). One run per (task, scheme) cell,
named contract/<task>/<scheme>, all seeds of a cell stacked in it, so the whole matrix resumes
across processes (--resume). The model is one small transformer (2 layers, 4 heads, d = 64) whose
encoding is the only thing a scheme changes; trained on lengths 8..32 with Adam (lr 1e-3, batch 64).
Published scale (the defaults): 5 seeds, the spec's 3000 steps per cell, 512 evaluation
sequences per length and seed: about 1.5 h of a 2-core CPU from scratch (docs/results/
performance.md, the measurements behind the defaults). It resumes (--resume) from the last
checkpoint (every 125 steps); --steps 1500 halves the cost (docs/results/index.md compares the
two budgets' verdicts). Each cell is measured as it finishes and its measurement kept in
its run directory (measure.CELL_FILE), so a rerun or a resumed job reads it back.
Command: lgjax contract-train --ckpt-root /work/runs/contract --out results/contract --resume
Expect (the predicted matrix, lgjax.studies.contract.verdicts.PREDICTIONS): absolute schemes win
the named slot past the trained range; relative/rotary keep the answer under a PAD shift of the
offset task; ALiBi helps local copying and loses far ordered updates; RoPE may misattend far.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lgjax.config import ConfigError, ModelConfig, RunConfig, TaskConfig
from lgjax.encodings import ENCODINGS, AlibiOptions, ApeOptions, RelClipOptions
from lgjax.harness import study
from lgjax.harness.ranges import option
from lgjax.harness.study import RunOptions, Study, Trained, product_parts
from lgjax.studies.contract import measure as contract_measure
from lgjax.studies.contract import render
from lgjax.studies.contract.tasks import CONTRACT_TASKS

# The six schemes as model encodings: scheme -> (encoding, Config -> its options; None: the
# defaults). The learned table's rows past the trained range are read only through clamp (or
# interp, the interpolation intervention), never trained; `ape_rows` sizes it for the longest
# evaluation.
SCHEMES: dict[str, tuple[str, Callable]] = {
    "ape": ("ape", lambda cfg: ApeOptions(oob="clamp", size=cfg.ape_rows,
                                          train_max=cfg.train_lengths[1])),
    "sinusoidal": ("sinusoidal", lambda cfg: None),
    "relclip": ("relclip", lambda cfg: RelClipOptions(clip=16)),
    "rope": ("rope", lambda cfg: None),
    "alibi": ("alibi", lambda cfg: AlibiOptions(slopes="geometric")),
    "nope": ("nope", lambda cfg: None),
}
RUN_ROOT = "contract"  # run directories: <ckpt_root>/contract/<task>/<scheme>


@dataclass(frozen=True)
class Config:
    tasks: tuple[str, ...] = tuple(CONTRACT_TASKS)  # task families: the matrix rows
    schemes: tuple[str, ...] = tuple(SCHEMES)  # positional schemes: the matrix columns
    train_lengths: tuple[int, int] = (8, 32)  # LMIN,LMAX: training lengths, uniform
    extend: tuple[int, ...] = option(
        (64, 96, 128), ge=1)  # extension lengths (beyond the trained range)
    shifts: tuple[int, ...] = option(
        (4, 12), ge=0)  # PAD prefixes c of the shift evaluation (length <= LMAX)
    vocab: int = 20  # content tokens (the markers PAD, SET, MARK come on top)
    d: int = 64  # model width
    heads: int = 4  # attention heads per layer
    layers: int = 2  # transformer blocks
    lr: float = option(1e-3, gt=0)  # Adam learning rate
    ape_rows: int = option(128, ge=1)  # rows of the learned table (>= every evaluation length)
    probe_sequences: int = option(256, ge=1)  # sequences per seed for the loss at every checkpoint
    learnable: float = option(
        0.9, ge=0, le=1)  # a cell is learnable when its in-range accuracy reaches this
    seed_axis: str = "map"  # a cell's seeds in its program: map (one by one), vmap, blocks, auto
    run: RunOptions = RunOptions(seeds=5, steps=3000, batch=64, eval_sequences=512,
                                 out="results/contract")  # shared options


def check(cfg: Config) -> None:
    if len(cfg.train_lengths) != 2:
        raise ConfigError("--train-lengths: give two numbers LMIN,LMAX, e.g. 8,32")
    unknown = [t for t in cfg.tasks if t not in CONTRACT_TASKS]
    if unknown or not cfg.tasks:
        raise ConfigError(f"--tasks: {unknown or 'none given'}; choose from "
                          f"{','.join(CONTRACT_TASKS)}")
    unknown = [s for s in cfg.schemes if s not in SCHEMES and s not in ENCODINGS]
    if unknown or not cfg.schemes:
        raise ConfigError(f"--schemes: {unknown or 'none given'}; choose from {','.join(SCHEMES)} "
                          "or another registered encoding (a plugin's: --plugin MODULE)")
    lmin, lmax = cfg.train_lengths
    bad = [c for c in cfg.shifts if not 0 < c <= lmax - lmin]
    if bad:
        raise ConfigError(f"--shifts: {bad} leave no content length in [{lmin}, {lmax} - c]; "
                          f"use prefixes in 1..{lmax - lmin}")
    if any(L <= lmax for L in cfg.extend):
        raise ConfigError(f"--extend: lengths must exceed the trained LMAX={lmax}")


def eval_lengths(cfg: Config) -> tuple[int, ...]:
    return (cfg.train_lengths[1], *cfg.extend)


def run_config(cfg: Config, task: str, scheme: str) -> RunConfig:
    lmin, lmax = cfg.train_lengths
    encoding, options = SCHEMES.get(scheme, (scheme, lambda cfg: None))  # others: defaults
    model = ModelConfig(encoding=encoding, enc=options(cfg), arch="transformer",
                        layers=cfg.layers, d=cfg.d, heads=cfg.heads, query="last")
    return study.run_config(cfg, TaskConfig(task, vocab=cfg.vocab), model, lr=cfg.lr, lmin=lmin,
                             lmax=lmax, seed_axis=cfg.seed_axis)


def cell_name(task: str, scheme: str) -> str:
    return f"{RUN_ROOT}/{task}/{scheme}"


def runs(cfg: Config) -> dict[str, RunConfig]:
    """Task-major, so a partial matrix holds whole rows (every scheme of a task)."""
    return {cell_name(t, s): run_config(cfg, t, s) for t in cfg.tasks for s in cfg.schemes}


measure = contract_measure.measure_matrix  # (cfg, trained) -> the matrix's results


def parts(cfg: Config) -> dict[str, Config]:
    """One command per cell (task x scheme): on one accelerator several cells share it
    (`reproduce --jobs N`), and the whole matrix then reads their saved measurements."""
    return product_parts(cfg, "tasks", "schemes")


def on_trained(cfg: Config, name: str, t: Trained) -> None:
    """Measure a cell as soon as it is trained (saved in its run directory)."""
    contract_measure.measured_cell(cfg, t)
table = render.render  # the whole report (also written as report.md)
figure = render.figure
write_extra = render.write_markdown


STUDY = Study(__name__, Config, runs, measure, table, check=check, eval_lengths=eval_lengths,
              on_trained=on_trained, parts=parts, write_extra=write_extra, figure=figure)
