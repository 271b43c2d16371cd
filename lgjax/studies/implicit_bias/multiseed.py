"""multiseed: accuracy, peak height and selected offset vs length, RoPE vs APE, many seeds.

docs/studies/implicit-bias.md, experiment `multiseed` (Table 1). Published scale (the
defaults): K = 1, 8 seeds, 4000 steps, batch 256, train lengths [8, 16], 4096 evaluation
sequences at each of 12, 16, 20, 24, 32, 40, 48.
Command: lgjax multiseed        (~30 s here)
Expect: RoPE near 1.0 in range and well above chance at 48 with a slow decline; APE 1.0 in
range, near chance from 20 on; RoPE selected offset = -K in every seed x length cell.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lgjax import models
from lgjax.config import ConfigError, RunConfig, TaskConfig
from lgjax.harness import outputs, study
from lgjax.harness.study import RunOptions, Study
from lgjax.studies.implicit_bias import common, tables
from lgjax.studies.implicit_bias import figures as plots


@dataclass(frozen=True)
class Config:
    encodings: tuple[str, ...] = ("rope", "ape")  # one run per encoding
    K: int = 1  # target offset: the label is the token K before the query
    train_lengths: tuple[int, int] = (8, 16)  # LMIN,LMAX: training lengths, uniform
    eval_lengths: tuple[int, ...] = (12, 16, 20, 24, 32, 40, 48)  # evaluation lengths
    d: int = 64  # model width
    heads: int = 1  # attention heads (d_head = d / heads)
    vocab: int = 20  # content tokens m
    run_name: str = ""  # runs go to <ckpt-root>/<run-name>/<encoding> (default multiseed-K<K>)
    run: RunOptions = RunOptions(seeds=8)  # shared options


def check(cfg: Config) -> None:
    if len(cfg.train_lengths) != 2:
        raise ConfigError("--train-lengths: give two numbers LMIN,LMAX, e.g. 8,16")
    if not cfg.encodings:
        raise ConfigError("--encodings: give at least one encoding, e.g. rope,ape")


def run_config(cfg: Config, encoding: str) -> RunConfig:
    lmin, lmax = cfg.train_lengths
    return study.run_config(cfg, TaskConfig.of("fixed_offset", vocab=cfg.vocab, offset=cfg.K),
                             common.implicit_bias_model(encoding, d=cfg.d, heads=cfg.heads),
                             lmin=lmin, lmax=lmax)


def runs(cfg: Config) -> dict[str, RunConfig]:
    root = cfg.run_name or f"multiseed-K{cfg.K}"
    return {f"{root}/{e}": run_config(cfg, e) for e in cfg.encodings}


def measure(cfg: Config, trained: dict) -> dict:
    res = {"K": cfg.K, "seeds": list(study.seeds(cfg)), "steps": cfg.run.steps,
           "batch": cfg.run.batch, "eval_sequences": cfg.run.eval_sequences,
           "lengths": list(cfg.eval_lengths), "train_lengths": list(cfg.train_lengths),
           "chance": 1.0 / cfg.vocab, "encodings": list(cfg.encodings)}
    for name, t in trained.items():
        ev = common.evaluate_run(t, cfg.eval_lengths, cfg.run)
        peak, offset = common.peak_head(ev)
        res[Path(name).name] = {
            "accuracy": ev.accuracy, "peak_height": peak, "selected_offset": offset.astype(int),
            "mean_attention": ev.mean_attention, "head_path": models.head_path(t.config.model),
            "head_path_reason": models.head_path_reason(t.config.model)}
    return res


table = tables.multiseed_table  # result -> the printed table
figure = plots.multiseed_figure  # (result, stem): drawn from the results alone


def write_extra(result: dict, out: Path) -> list[str]:
    outputs.write_csv(tables.rows(result, result["encodings"]), out / "results.csv")
    return ["results.csv"]


STUDY = Study(__name__, Config, runs, measure, table, check=check, write_extra=write_extra,
              figure=figure)
