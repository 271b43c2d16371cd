"""linear: the same head with raw logits as attention weights (no exp, no normalisation).

docs/studies/implicit-bias.md, experiment `linear`. RoPE, K = 2, 5 seeds, 4000 steps, batch 256,
trained on the same data as the softmax head (same seeds, same batches).
Command: lgjax linear           (~1 min here)
Expect: linear fits in range, near chance at 48, low carrier fraction.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import numpy as np

from lgjax.config import ModelConfig, RunConfig, TaskConfig
from lgjax.harness import study
from lgjax.harness.study import RunOptions, Study
from lgjax.studies.implicit_bias import analysis, common
from lgjax.studies.implicit_bias import figures as plots


@dataclass(frozen=True)
class Config:
    attentions: tuple[str, ...] = ("softmax", "linear")  # heads compared
    K: int = 2  # target offset
    eval_lengths: tuple[int, ...] = (12, 16, 24, 32, 48)  # evaluation lengths
    run: RunOptions = RunOptions(seeds=5)  # shared options


def runs(cfg: Config) -> dict[str, RunConfig]:
    return {f"linear/{a}": study.run_config(cfg, TaskConfig.of("fixed_offset", offset=cfg.K),
                                             ModelConfig("rope", attention=a))
            for a in cfg.attentions}


def measure(cfg: Config, trained: dict) -> dict:
    res = {"lengths": list(cfg.eval_lengths), "attentions": list(cfg.attentions), "K": cfg.K}
    res["chance"] = 1.0 / TaskConfig().vocab
    L = max(cfg.eval_lengths)
    for att in cfg.attentions:
        t = trained[f"linear/{att}"]
        ev = common.evaluate_run(t, cfg.eval_lengths, cfg.run)
        hm = jax.vmap(lambda p, m=t.config.model: analysis.head_metrics(p, m, cfg.K, L))(
            t.states.params)
        res[att] = {"accuracy": ev.accuracy, "carrier_key": np.asarray(hm["carrier_key"])[:, 0],
                    "align_shifted": np.asarray(hm["align_shifted"])[:, 0]}
    return res


figure = plots.linear_figure  # (result, stem): drawn from the results alone


def table(res: dict) -> str:
    lines = [f"{'head':9s}" + "".join(f"{'acc@' + str(L):>14s}" for L in res["lengths"])
             + f"{'carrier key':>14s}{'cos(mQ,R_-K mK)':>17s}"]
    for att in res["attentions"]:
        r = res[att]
        acc = np.asarray(r["accuracy"])
        lines.append(f"{att:9s}" + "".join(f"{common.mean_sd(acc[:, j]):>14s}"
                                           for j in range(acc.shape[1]))
                     + f"{common.mean_sd(r['carrier_key']):>14s}"
                     + f"{common.mean_sd(r['align_shifted']):>17s}")
    return "\n".join(lines)


STUDY = Study(__name__, Config, runs, measure, table, figure=figure)
