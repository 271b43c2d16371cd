"""shift: the double dissociation of mean attention in relative vs absolute coordinates.

Spec: implicit-bias.md, experiment `shift`. RoPE and APE, K = 1, 8 seeds, 4000 steps; mean
attention over 4096 sequences at lengths 16, 24, 32, 48. Reuses the `multiseed` runs of the same
config (checkpoints/multiseed-K1/<encoding>) when they exist, else trains them.
Command: lgjax shift            (~1-2 min here; seconds if multiseed ran)
Expect: RoPE curves coincide in relative coordinates, APE curves in absolute ones.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from lgjax import plots
from lgjax.experiments import common
from lgjax.experiments.multiseed import MultiseedConfig


@dataclass(frozen=True)
class ShiftConfig:
    encodings: tuple[str, ...] = ("rope", "ape")  # compared encodings
    K: int = 1  # target offset
    seeds: int = 8  # seeds 0..seeds-1
    steps: int = 4000  # Adam steps
    batch: int = 256  # sequences per step
    lengths: tuple[int, ...] = (16, 24, 32, 48)  # lengths whose attention curves are compared
    n_eval: int = 4096  # evaluation sequences per length
    out: str = "results/shift"  # results.json and figure
    ckpt_root: str = "checkpoints"  # runs in <ckpt_root>/multiseed-K<K>/<encoding> (shared)
    progress: bool = True  # progress bars


def spread(curves: list[np.ndarray], coords: str) -> float:
    """Largest gap between the length-curves over the positions every length has."""
    n = min(len(c) for c in curves)
    aligned = np.stack([c[-n:] if coords == "relative" else c[:n] for c in curves])
    return float((aligned.max(0) - aligned.min(0)).max())


def run(cfg: ShiftConfig) -> dict:
    ms = MultiseedConfig(encodings=cfg.encodings, K=cfg.K, seeds=cfg.seeds, steps=cfg.steps,
                         batch=cfg.batch, eval_lengths=cfg.lengths, n_eval=cfg.n_eval)
    common.check_all([ms.run_config(e) for e in cfg.encodings], cfg.lengths)
    t0 = time.perf_counter()
    res = {"experiment": "shift", "config": asdict(cfg), "lengths": list(cfg.lengths), "K": cfg.K}
    for enc in cfg.encodings:
        run_dir = Path(cfg.ckpt_root) / f"multiseed-K{cfg.K}" / enc
        _, ev, times = common.train_eval(ms.run_config(enc), run_dir, cfg.lengths, cfg.n_eval,
                                         resume=True, progress=cfg.progress, label=enc)
        mean = np.asarray(ev.mean_attention)[:, :, 0].mean(0)  # seeds averaged, head 0
        curves = [mean[j, :L] for j, L in enumerate(cfg.lengths)]
        res[enc] = {"curves": curves, "spread_relative": spread(curves, "relative"),
                    "spread_absolute": spread(curves, "absolute"),
                    "argmax_relative": [int(np.argmax(c)) - (len(c) - 1) for c in curves],
                    "argmax_absolute": [int(np.argmax(c)) for c in curves], **times}
    res["wall_seconds"] = time.perf_counter() - t0
    out = Path(cfg.out)
    common.write_json(res, out)
    plots.shift_figure(res, cfg.encodings, out / "shift")
    print(table(res, cfg.encodings))
    return res


def table(res: dict, encodings) -> str:
    """Where each length's mean attention peaks, in both coordinates, and the largest gap
    between the length-curves over the positions they share."""
    lines = [f"lengths {res['lengths']} (mean attention averaged over seeds)",
             f"{'encoding':9s}{'peak offset t-n by length':>28s}{'peak position t by length':>28s}"
             f"{'max gap rel':>13s}{'max gap abs':>13s}"]
    for enc in encodings:
        r = res[enc]
        lines.append(f"{enc:9s}{str(r['argmax_relative']):>28s}{str(r['argmax_absolute']):>28s}"
                     f"{r['spread_relative']:>13.3f}{r['spread_absolute']:>13.3f}")
    return "\n".join(lines)
