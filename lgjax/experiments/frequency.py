"""frequency: the rotary base sets the kernel g(s) = sum_i cos(s theta_i); does selection hold?

Spec: implicit-bias.md, experiment `frequency` (measurement 9). RoPE bases {1e3, 1e4, 1e5},
K = 1, 5 seeds, 4000 steps, batch 256; OOD accuracy at 48.
Command: lgjax frequency        (~2 min here)
Expect: selection at -K for every base, mild loss at the largest base.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig
from lgjax.encodings import rope_freqs
from lgjax.experiments import common


@dataclass(frozen=True)
class FrequencyConfig:
    bases: tuple[float, ...] = (1e3, 1e4, 1e5)  # rotary bases, one run each
    K: int = 1  # target offset
    seeds: int = 5  # seeds 0..seeds-1
    steps: int = 4000  # Adam steps
    batch: int = 256  # sequences per step
    eval_lengths: tuple[int, ...] = (16, 24, 32, 48)  # accuracy and offset lengths
    n_eval: int = 4096  # evaluation sequences per length
    out: str = "results/frequency"  # results.json
    ckpt_root: str = "checkpoints"  # runs in <ckpt_root>/frequency/base<base>
    resume: bool = False  # continue (or reload finished) runs
    progress: bool = True  # progress bars

    def run_config(self, base: float) -> RunConfig:
        return RunConfig(TaskConfig("fixed_offset", offset=self.K),
                         ModelConfig("rope", rope_base=base),
                         TrainConfig(steps=self.steps, batch=self.batch,
                                     seeds=tuple(range(self.seeds))))


def kernel_ratios(cfg: ModelConfig, far: range = range(4, 48)) -> dict:
    """g(1)/g(0) and max over s in `far` of g(s)/g(0), g(s) = sum_i cos(s theta_i)."""
    theta = rope_freqs(cfg).astype(np.float64)
    g = lambda s: np.cos(np.outer(np.atleast_1d(s), theta)).sum(-1)
    g0 = g(0)[0]
    return {"g1_over_g0": float(g(1)[0] / g0),
            "max_far_over_g0": float(g(np.array(far)).max() / g0)}


def run(cfg: FrequencyConfig) -> dict:
    common.check_all([cfg.run_config(b) for b in cfg.bases], cfg.eval_lengths)
    t0 = time.perf_counter()
    res = {"experiment": "frequency", "config": asdict(cfg), "lengths": list(cfg.eval_lengths),
           "reduced": common.is_reduced(cfg)}
    for base in cfg.bases:
        rc = cfg.run_config(base)
        _, ev, times = common.train_eval(rc, Path(cfg.ckpt_root) / "frequency" / f"base{base:g}",
                                         cfg.eval_lengths, cfg.n_eval, resume=cfg.resume,
                                         progress=cfg.progress, label=f"base {base:g}")
        _, offset = common.peak_head(ev)
        res[f"{base:g}"] = {**kernel_ratios(rc.model), "accuracy": ev.accuracy,
                            "selected_offset": offset, **times}
    res["wall_seconds"] = time.perf_counter() - t0
    common.write_json(res, Path(cfg.out))
    print(table(res, cfg))
    return res


def table(res: dict, cfg: FrequencyConfig) -> str:
    L = max(cfg.eval_lengths)
    lines = [f"{'base':>8s}{'g(1)/g(0)':>11s}{'max g(s)/g(0), s=4..47':>24s}"
             f"{'acc@' + str(L) + ' (mean+-std)':>22s}{'selected offsets (all cells)':>30s}"]
    for base in cfg.bases:
        r = res[f"{base:g}"]
        acc = np.asarray(r["accuracy"])[:, -1]
        offs = sorted(set(np.asarray(r["selected_offset"]).ravel().tolist()))
        lines.append(f"{base:>8g}{r['g1_over_g0']:>11.3f}{r['max_far_over_g0']:>24.3f}"
                     f"{common.mean_sd(acc):>22s}{str(offs):>30s}")
    return "\n".join(lines)
