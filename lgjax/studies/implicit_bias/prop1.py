"""prop1: the low-rank carrier of the RoPE solution and the decay law of its peak attention.

docs/studies/implicit-bias.md, experiment `prop1`. RoPE, K in {1, 2, 3}, 5 seeds,
4000 steps, batch 256, train [8, 16]; peak heights at 12..48 for the decay fit.
Command: lgjax prop1            (~2-3 min here)
Expect: carrier fractions far above their value at initialisation (~1/m) and 1/d; carrier-only
profile peaking at -K for K >= 2 (K = 1 peaks at 0, the adjacent special case); a good linear
fit of 1/a*(L) on L-1.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import numpy as np

from lgjax import train
from lgjax.config import ModelConfig, RunConfig, TaskConfig
from lgjax.harness import study
from lgjax.harness.study import RunOptions, Study
from lgjax.studies.implicit_bias import analysis, common
from lgjax.studies.implicit_bias import figures as plots


@dataclass(frozen=True)
class Config:
    Ks: tuple[int, ...] = (1, 2, 3)  # target offsets, one run each
    eval_lengths: tuple[int, ...] = (12, 16, 20, 24, 32, 40, 48)  # decay-fit lengths
    run: RunOptions = RunOptions(seeds=5)  # shared options


def runs(cfg: Config) -> dict[str, RunConfig]:
    return {f"prop1/K{K}": study.run_config(cfg, TaskConfig.of("fixed_offset", offset=K),
                                             ModelConfig("rope")) for K in cfg.Ks}


def carrier_stats(params_S, cfg: RunConfig, L: int) -> dict:
    hm = jax.vmap(lambda p: analysis.head_metrics(p, cfg.model, cfg.task.opts.offset, L))(params_S)
    return {k: np.asarray(v)[:, 0] for k, v in hm.items()}  # head 0 (H = 1)


def measure(cfg: Config, trained: dict) -> dict:
    res = {"Ks": list(cfg.Ks), "lengths": list(cfg.eval_lengths)}
    L = max(cfg.eval_lengths)
    for K in cfg.Ks:
        t = trained[f"prop1/K{K}"]
        res["inverse_d"] = 1 / t.config.model.d
        ev = common.evaluate_run(t, cfg.eval_lengths, cfg.run)
        final = carrier_stats(t.states.params, t.config, L)
        init = carrier_stats(train.init_states(t.config).params, t.config, L)
        peak, offset = common.peak_head(ev)
        fits = [analysis.decay_fit(cfg.eval_lengths, peak[s]) for s in range(cfg.run.seeds)]
        res[f"K{K}"] = {
            "carrier_key": final["carrier_key"], "carrier_query": final["carrier_query"],
            "carrier_key_init": init["carrier_key"], "carrier_query_init": init["carrier_query"],
            "carrier_argmax": final["carrier_argmax"], "carrier_profile": final["carrier_profile"],
            "align_shifted": final["align_shifted"], "align_plain": final["align_plain"],
            "sv_energy": final["sv_energy"], "accuracy": ev.accuracy, "peak_height": peak,
            "selected_offset": offset, "fits": fits}
    return res


figure = plots.decay_figure  # (result, stem): drawn from the results alone


def table(res: dict) -> str:
    cols = ["carrier_key", "carrier_key_init", "carrier_query", "align_shifted", "align_plain",
            "sv_energy"]
    lines = [f"prop1 (mean+-std over seeds; 1/d = {res['inverse_d']:.4f})",
             f"{'K':>2s} " + "".join(f"{c:>19s}" for c in cols)
             + f"{'carrier argmax':>18s}{'alpha':>16s}{'c':>16s}{'R^2':>16s}"]
    for K in res["Ks"]:
        r = res[f"K{K}"]
        fits = r["fits"]
        lines.append(f"{K:>2d} " + "".join(f"{common.mean_sd(r[c]):>19s}" for c in cols)
                     + f"{str(sorted(set(np.asarray(r['carrier_argmax']).tolist()))):>18s}"
                     + "".join(f"{common.mean_sd([f[k] for f in fits]):>16s}"
                               for k in ("alpha", "c", "r2")))
    return "\n".join(lines)


STUDY = Study(__name__, Config, runs, measure, table, figure=figure)
