"""prop1: the low-rank carrier of the RoPE solution and the decay law of its peak attention.

Spec: implicit-bias.md, experiment `prop1` (measurements 3-5). RoPE, K in {1, 2, 3}, 5 seeds,
4000 steps, batch 256, train [8, 16]; peak heights at 12..48 for the decay fit.
Command: lgjax prop1            (~2-3 min here)
Expect: carrier fractions far above their value at initialisation (~1/m) and 1/d; carrier-only
profile peaking at -K for K >= 2 (K = 1 peaks at 0, the adjacent special case); a good linear
fit of 1/a*(L) on L-1.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import jax
import numpy as np

from lgjax import analysis, plots, train
from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig
from lgjax.experiments import common


@dataclass(frozen=True)
class Prop1Config:
    Ks: tuple[int, ...] = (1, 2, 3)  # target offsets, one run each
    seeds: int = 5  # seeds 0..seeds-1
    steps: int = 4000  # Adam steps
    batch: int = 256  # sequences per step
    eval_lengths: tuple[int, ...] = (12, 16, 20, 24, 32, 40, 48)  # decay-fit lengths
    n_eval: int = 4096  # evaluation sequences per length
    out: str = "results/prop1"  # results.json and figure
    ckpt_root: str = "checkpoints"  # runs in <ckpt_root>/prop1/K<K>
    resume: bool = False  # continue (or reload finished) runs
    progress: bool = True  # progress bars

    def run_config(self, K: int) -> RunConfig:
        return RunConfig(TaskConfig("fixed_offset", offset=K), ModelConfig("rope"),
                         TrainConfig(steps=self.steps, batch=self.batch,
                                     seeds=tuple(range(self.seeds))))


def carrier_stats(params_S, cfg: RunConfig, L: int) -> dict:
    hm = jax.vmap(lambda p: analysis.head_metrics(p, cfg.model, cfg.task.offset, L))(params_S)
    return {k: np.asarray(v)[:, 0] for k, v in hm.items()}  # head 0 (H = 1)


def run(cfg: Prop1Config) -> dict:
    common.check_all([cfg.run_config(K) for K in cfg.Ks], cfg.eval_lengths)
    t0 = time.perf_counter()
    res = {"experiment": "prop1", "config": asdict(cfg), "inverse_d": 1 / 64,
           "reduced": common.is_reduced(cfg)}
    for K in cfg.Ks:
        rc = cfg.run_config(K)
        states, ev, times = common.train_eval(rc, Path(cfg.ckpt_root) / "prop1" / f"K{K}",
                                              cfg.eval_lengths, cfg.n_eval, resume=cfg.resume,
                                              progress=cfg.progress, label=f"prop1 K={K}")
        final = carrier_stats(states.params, rc, max(cfg.eval_lengths))
        init = carrier_stats(train.init_states(rc).params, rc, max(cfg.eval_lengths))
        peak, offset = common.peak_head(ev)
        fits = [analysis.decay_fit(cfg.eval_lengths, peak[s]) for s in range(cfg.seeds)]
        res[f"K{K}"] = {
            "carrier_key": final["carrier_key"], "carrier_query": final["carrier_query"],
            "carrier_key_init": init["carrier_key"], "carrier_query_init": init["carrier_query"],
            "carrier_argmax": final["carrier_argmax"], "carrier_profile": final["carrier_profile"],
            "align_shifted": final["align_shifted"], "align_plain": final["align_plain"],
            "sv_energy": final["sv_energy"], "accuracy": ev.accuracy, "peak_height": peak,
            "selected_offset": offset, "fits": fits, **times}
    res["wall_seconds"] = time.perf_counter() - t0
    out = Path(cfg.out)
    common.write_json(res, out)
    plots.decay_figure(res, cfg.Ks, cfg.eval_lengths, out / "prop1")
    print(table(res, cfg.Ks))
    return res


def table(res: dict, Ks) -> str:
    cols = ["carrier_key", "carrier_key_init", "carrier_query", "align_shifted", "align_plain",
            "sv_energy"]
    lines = [f"prop1 (mean+-std over seeds; 1/d = {res['inverse_d']:.4f})",
             f"{'K':>2s} " + "".join(f"{c:>19s}" for c in cols)
             + f"{'carrier argmax':>18s}{'alpha':>16s}{'c':>16s}{'R^2':>16s}"]
    for K in Ks:
        r = res[f"K{K}"]
        fits = r["fits"]
        lines.append(f"{K:>2d} " + "".join(f"{common.mean_sd(r[c]):>19s}" for c in cols)
                     + f"{str(sorted(set(np.asarray(r['carrier_argmax']).tolist()))):>18s}"
                     + "".join(f"{common.mean_sd([f[k] for f in fits]):>16s}"
                               for k in ("alpha", "c", "r2")))
    return "\n".join(lines)
