"""shift: the double dissociation of mean attention in relative vs absolute coordinates.

docs/studies/implicit-bias.md, experiment `shift`. RoPE and APE, K = 1, 8 seeds, 4000 steps; mean
attention over 4096 sequences at lengths 16, 24, 32, 48. Reuses the `multiseed` runs of the same
config (checkpoints/multiseed-K1/<encoding>) when they are finished, else trains them.
Command: lgjax shift            (~1-2 min here; seconds if multiseed ran)
Expect: RoPE curves coincide in relative coordinates, APE curves in absolute ones.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from lgjax.harness.ranges import option
from lgjax.harness.study import RunOptions, Study
from lgjax.studies.implicit_bias import common, multiseed
from lgjax.studies.implicit_bias import figures as plots


@dataclass(frozen=True)
class Config:
    encodings: tuple[str, ...] = ("rope", "ape")  # compared encodings
    K: int = 1  # target offset
    lengths: tuple[int, ...] = option(
        (16, 24, 32, 48), ge=1)  # lengths whose attention curves are compared
    run: RunOptions = RunOptions(seeds=8)  # shared options (runs shared with multiseed)


def eval_lengths(cfg: Config) -> tuple[int, ...]:
    return cfg.lengths


def runs(cfg: Config) -> dict:
    ms = multiseed.Config(encodings=cfg.encodings, K=cfg.K, run=cfg.run)
    return multiseed.runs(replace(ms, eval_lengths=cfg.lengths))


def spread(curves: list[np.ndarray], coords: str) -> float:
    """Largest gap between the length-curves over the positions every length has."""
    n = min(len(c) for c in curves)
    aligned = np.stack([c[-n:] if coords == "relative" else c[:n] for c in curves])
    return float((aligned.max(0) - aligned.min(0)).max())


def measure(cfg: Config, trained: dict) -> dict:
    res = {"lengths": list(cfg.lengths), "K": cfg.K, "encodings": list(cfg.encodings)}
    for name, t in trained.items():
        ev = common.evaluate_run(t, cfg.lengths, cfg.run)
        mean = np.asarray(ev.mean_attention)[:, :, 0].mean(0)  # seeds averaged, head 0
        curves = [mean[j, :L] for j, L in enumerate(cfg.lengths)]
        res[Path(name).name] = {
            "curves": curves, "spread_relative": spread(curves, "relative"),
            "spread_absolute": spread(curves, "absolute"),
            "argmax_relative": [int(np.argmax(c)) - (len(c) - 1) for c in curves],
            "argmax_absolute": [int(np.argmax(c)) for c in curves]}
    return res


figure = plots.shift_figure  # (result, stem): drawn from the results alone


def table(res: dict) -> str:
    """Where each length's mean attention peaks, in both coordinates, and the largest gap
    between the length-curves over the positions they share."""
    lines = [f"lengths {res['lengths']} (mean attention averaged over seeds)",
             f"{'encoding':9s}{'peak offset t-n by length':>28s}{'peak position t by length':>28s}"
             f"{'max gap rel':>13s}{'max gap abs':>13s}"]
    for enc in res["encodings"]:
        r = res[enc]
        lines.append(f"{enc:9s}{str(r['argmax_relative']):>28s}{str(r['argmax_absolute']):>28s}"
                     f"{r['spread_relative']:>13.3f}{r['spread_absolute']:>13.3f}")
    return "\n".join(lines)


STUDY = Study(__name__, Config, runs, measure, table, eval_lengths=eval_lengths, figure=figure)
