"""multiseed: accuracy, peak height and selected offset vs length, RoPE vs APE, many seeds.

Spec: implicit-bias.md, experiment `multiseed` (Table 1). Paper scale: K = 1, 8 seeds, 4000
steps, batch 256, train lengths [8, 16], 4096 evaluation sequences at each of
12, 16, 20, 24, 32, 40, 48. Expect: RoPE near 1.0 in range and well above chance at 48 with a
slow decline; APE 1.0 in range, near chance from 20 on; RoPE selected offset = -K everywhere.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from lgjax import models, plots, report
from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig
from lgjax.experiments import common

PAPER_SCALE = {"seeds": 8, "steps": 4000, "batch": 256, "n_eval": 4096}


@dataclass(frozen=True)
class MultiseedConfig:
    encodings: tuple[str, ...] = ("rope", "ape")  # one run per encoding
    K: int = 1  # target offset
    seeds: int = 8  # seeds 0..seeds-1
    steps: int = 4000  # Adam steps per seed
    batch: int = 256  # sequences per step
    train_lengths: tuple[int, int] = (8, 16)  # [lmin, lmax]
    eval_lengths: tuple[int, ...] = (12, 16, 20, 24, 32, 40, 48)  # evaluation lengths
    n_eval: int = 4096  # fresh sequences per evaluation length
    d: int = 64  # model width
    heads: int = 1  # heads
    vocab: int = 20  # content tokens m
    out: str = "results/multiseed"  # results.json, results.csv, figure
    ckpt_root: str = "checkpoints"  # runs go to <ckpt_root>/<run_name>/<encoding>
    run_name: str = ""  # default multiseed-K<K>
    resume: bool = False  # continue existing runs from their latest checkpoint
    progress: bool = True  # show a progress bar
    devices: int = 0  # devices the seed axis is split over (0: all that divide the seed count)

    def run_config(self, encoding: str) -> RunConfig:
        lmin, lmax = self.train_lengths
        return RunConfig(
            task=TaskConfig("fixed_offset", vocab=self.vocab, offset=self.K),
            model=ModelConfig(encoding=encoding, d=self.d, heads=self.heads),
            train=TrainConfig(steps=self.steps, batch=self.batch, lmin=lmin, lmax=lmax,
                              seeds=tuple(range(self.seeds))))

    def reduced(self) -> bool:
        return common.is_reduced(self, **PAPER_SCALE)


def train_and_eval(cfg: MultiseedConfig, encoding: str) -> dict:
    rc = cfg.run_config(encoding)
    run_dir = Path(cfg.ckpt_root) / (cfg.run_name or f"multiseed-K{cfg.K}") / encoding
    states, ev, times = common.train_eval(rc, run_dir, cfg.eval_lengths, cfg.n_eval,
                                          resume=cfg.resume, progress=cfg.progress,
                                          devices=cfg.devices, label=f"{encoding} x{cfg.seeds}")
    peak, offset = common.peak_head(ev)
    return {"accuracy": ev.accuracy.tolist(), "peak_height": peak.tolist(),
            "selected_offset": offset.astype(int).tolist(),
            "mean_attention": ev.mean_attention.tolist(), "head_path": models.head_path(rc.model),
            "run_dir": str(run_dir), **times}


def run(cfg: MultiseedConfig) -> dict:
    common.check_all([cfg.run_config(e) for e in cfg.encodings], cfg.eval_lengths, cfg.devices)
    t0 = time.perf_counter()
    results = {"experiment": "multiseed", "config": asdict(cfg), "reduced": cfg.reduced(),
               "K": cfg.K, "seeds": list(range(cfg.seeds)), "steps": cfg.steps,
               "batch": cfg.batch, "eval_sequences": cfg.n_eval,
               "lengths": list(cfg.eval_lengths), "train_lengths": list(cfg.train_lengths),
               "chance": 1.0 / cfg.vocab}
    for enc in cfg.encodings:
        results[enc] = train_and_eval(cfg, enc)
    results["wall_seconds"] = time.perf_counter() - t0
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1))
    report.write_csv(results, cfg.encodings, out / "results.csv")
    plots.multiseed_figure(results, cfg.encodings, out / "multiseed")
    print(report.multiseed_table(results, cfg.encodings))
    print(f"wrote {out / 'results.json'}, results.csv, multiseed.png/.pdf "
          f"({results['wall_seconds']:.1f} s{', reduced scale' if cfg.reduced() else ''})")
    return results
