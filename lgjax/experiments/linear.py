"""linear: the same head with raw logits as attention weights (no exp, no normalisation).

Spec: implicit-bias.md, experiment `linear`. RoPE, K = 2, 5 seeds, 4000 steps, batch 256,
trained on the same data as the softmax head (same seeds, same batches).
Command: lgjax linear           (~1 min here)
Expect: linear fits in range, near chance at 48, low carrier fraction.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import jax
import numpy as np

from lgjax import analysis
from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig
from lgjax.experiments import common


@dataclass(frozen=True)
class LinearConfig:
    attentions: tuple[str, ...] = ("softmax", "linear")  # heads compared
    K: int = 2  # target offset
    seeds: int = 5  # seeds 0..seeds-1
    steps: int = 4000  # Adam steps
    batch: int = 256  # sequences per step
    eval_lengths: tuple[int, ...] = (12, 16, 24, 32, 48)  # evaluation lengths
    n_eval: int = 4096  # evaluation sequences per length
    out: str = "results/linear"  # results.json
    ckpt_root: str = "checkpoints"  # runs in <ckpt_root>/linear/<attention>
    resume: bool = False  # continue (or reload finished) runs
    progress: bool = True  # progress bars

    def run_config(self, attention: str) -> RunConfig:
        return RunConfig(TaskConfig("fixed_offset", offset=self.K),
                         ModelConfig("rope", attention=attention),
                         TrainConfig(steps=self.steps, batch=self.batch,
                                     seeds=tuple(range(self.seeds))))


def run(cfg: LinearConfig) -> dict:
    common.check_all([cfg.run_config(a) for a in cfg.attentions], cfg.eval_lengths)
    t0 = time.perf_counter()
    res = {"experiment": "linear", "config": asdict(cfg), "lengths": list(cfg.eval_lengths),
           "reduced": common.is_reduced(cfg)}
    for att in cfg.attentions:
        rc = cfg.run_config(att)
        states, ev, times = common.train_eval(rc, Path(cfg.ckpt_root) / "linear" / att,
                                              cfg.eval_lengths, cfg.n_eval, resume=cfg.resume,
                                              progress=cfg.progress, label=att)
        hm = jax.vmap(lambda p, m=rc.model: analysis.head_metrics(p, m, cfg.K, 48))(states.params)
        res[att] = {"accuracy": ev.accuracy, "carrier_key": np.asarray(hm["carrier_key"])[:, 0],
                    "align_shifted": np.asarray(hm["align_shifted"])[:, 0], **times}
    res["wall_seconds"] = time.perf_counter() - t0
    common.write_json(res, Path(cfg.out))
    print(table(res, cfg))
    return res


def table(res: dict, cfg: LinearConfig) -> str:
    lines = [f"{'head':9s}" + "".join(f"{'acc@' + str(L):>14s}" for L in cfg.eval_lengths)
             + f"{'carrier key':>14s}{'cos(mQ,R_-K mK)':>17s}"]
    for att in cfg.attentions:
        r = res[att]
        acc = np.asarray(r["accuracy"])
        lines.append(f"{att:9s}" + "".join(f"{common.mean_sd(acc[:, j]):>14s}"
                                           for j in range(acc.shape[1]))
                     + f"{common.mean_sd(r['carrier_key']):>14s}"
                     + f"{common.mean_sd(r['align_shifted']):>17s}")
    return "\n".join(lines)
