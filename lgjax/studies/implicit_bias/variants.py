"""variants: other relative schemes, content-conditioned selection, carrier peaks, more heads.

docs/studies/implicit-bias.md, experiment `variants`. 5 seeds, 4000 steps, batch 256 everywhere.
 (a) ALiBi, T5-style bias and RoPE at K in {1, 2}: accuracy by length and selected offset;
 (b) two_offset (the query's mode token picks K0 = 1 or K1 = 3), H = 1 and H = 2: in-range
     accuracy and the mode-conditioned carrier profile peaks (W_Q E[mode])^T R_delta m_K;
 (c) carrier-only profile peaks for K in {2, 3, 4, 5} (RoPE);
 (d) H = 1 vs H = 4 at d = 64: per-head top-1 SV energy of W and peak attention by length.
Command: lgjax variants         (~6 min here)
Expect: ALiBi solves K = 1 but picks -1 at K = 2; T5 selects any K but decays faster; more
heads dilute more.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from lgjax.config import ModelConfig, RunConfig, TaskConfig
from lgjax.encodings import d_head
from lgjax.harness import study
from lgjax.harness.study import RunOptions, Study
from lgjax.studies.implicit_bias import analysis, common
from lgjax.studies.implicit_bias import figures as plots


@dataclass(frozen=True)
class Config:
    schemes: tuple[str, ...] = ("alibi", "t5", "rope")  # (a) encodings
    scheme_Ks: tuple[int, ...] = (1, 2)  # (a) offsets
    carrier_Ks: tuple[int, ...] = (2, 3, 4, 5)  # (c) offsets
    head_counts: tuple[int, ...] = (1, 4)  # (d) H at d = 64
    mode_heads: tuple[int, ...] = (1, 2)  # (b) H for the content-conditioned task
    eval_lengths: tuple[int, ...] = (12, 16, 20, 24, 32, 40, 48)  # evaluation lengths
    parts: str = "abcd"  # which parts to run
    run: RunOptions = RunOptions(seeds=5)  # shared options


def run_config(cfg: Config, task: str, K: int, encoding: str = "rope",
               heads: int = 1) -> RunConfig:
    second = {"offset2": 3} if task == "two_offset" else {}
    return study.run_config(cfg, TaskConfig.of(task, offset=K, **second),
                            ModelConfig(encoding, heads=heads))


def runs(cfg: Config) -> dict[str, RunConfig]:
    out = {}
    if "a" in cfg.parts:
        out |= {f"a-{e}-K{K}": run_config(cfg, "fixed_offset", K, e)
                for e in cfg.schemes for K in cfg.scheme_Ks}
    if "b" in cfg.parts:
        out |= {f"b-two_offset-H{h}": run_config(cfg, "two_offset", 1, heads=h)
                for h in cfg.mode_heads}
    if "c" in cfg.parts:
        out |= {f"c-rope-K{K}": run_config(cfg, "fixed_offset", K) for K in cfg.carrier_Ks}
    if "d" in cfg.parts:
        out |= {f"d-rope-H{h}": run_config(cfg, "fixed_offset", 2, heads=h)
                for h in cfg.head_counts}
    return {f"variants/{name}": rc for name, rc in out.items()}


def mode_profile_peaks(params, cfg: RunConfig, L: int) -> np.ndarray:
    """argmax over delta of (W_Q E[mode])^T R_delta m_K per (mode, head): [2, H]."""
    m, H = cfg.task.vocab, cfg.model.heads
    q = (params["embed"][m:m + 2] @ params["wq"]).reshape(2, H, d_head(cfg.model))
    k_mean = (params["embed"][:m] @ params["wk"]).mean(0).reshape(H, d_head(cfg.model))
    prof = jax.vmap(lambda qm: analysis.carrier_profile(qm, k_mean, L, cfg.model))(q)
    return np.asarray(jnp.argmax(prof, -1) - (L - 1))


def summarise(rc: RunConfig, states, ev, L: int) -> dict:
    peak, offset = common.peak_head(ev)
    K = rc.task.opts.offset
    hm = jax.vmap(lambda p: analysis.head_metrics(p, rc.model, K, L))(states.params)
    out = {"accuracy": ev.accuracy, "selected_offset": offset, "peak_height": peak,
           "peak_height_per_head": ev.peak_height, "sv_energy_per_head": hm["sv_energy"],
           "carrier_argmax": hm["carrier_argmax"], "carrier_key": hm["carrier_key"]}
    if rc.task.name == "two_offset":
        L_in = rc.train.lmax
        out["mode_profile_peaks"] = np.stack([mode_profile_peaks(
            jax.tree.map(lambda x, s=s: x[s], states.params), rc, L_in)
            for s in range(len(rc.train.seeds))])
    return out


def measure(cfg: Config, trained: dict) -> dict:
    res = {"lengths": list(cfg.eval_lengths), "names": [], "chance": 1.0 / TaskConfig().vocab}
    for path, t in trained.items():
        name, rc = Path(path).name, t.config
        # the content-conditioned task is judged inside its training range only
        lengths = (tuple(L for L in cfg.eval_lengths if L <= rc.train.lmax)
                   if rc.task.name == "two_offset" else cfg.eval_lengths)
        ev = common.evaluate_run(t, lengths, cfg.run)
        res[name] = summarise(rc, t.states, ev, max(cfg.eval_lengths))
        res["names"].append(name)
    return res


figure = plots.variants_figure  # (result, stem): drawn from the results alone


def table(res: dict) -> str:
    lines = []
    for name in res["names"]:
        r = res[name]
        acc = np.asarray(r["accuracy"]).mean(0)
        offs = sorted(set(np.asarray(r["selected_offset"]).ravel().tolist()))
        line = (f"{name:20s} acc " + " ".join(f"{a:.3f}" for a in acc) + f"  offsets {offs}")
        if "mode_profile_peaks" in r:
            peaks = np.asarray(r["mode_profile_peaks"])  # [S, mode, H]
            line += (f"  carrier peaks mode K0: {sorted(set(peaks[:, 0].ravel().tolist()))}"
                     f" mode K1: {sorted(set(peaks[:, 1].ravel().tolist()))}")
        elif name.startswith("c-"):
            argmax = sorted(set(np.asarray(r["carrier_argmax"]).ravel().tolist()))
            line += f"  carrier argmax {argmax}"
        if name.startswith("d-"):
            sv = np.asarray(r["sv_energy_per_head"]).mean(0)
            ph = np.asarray(r["peak_height_per_head"]).mean(0)  # [lengths, H]
            line += ("  SV energy per head " + " ".join(f"{v:.2f}" for v in sv)
                     + "  max-head peak by length " + " ".join(f"{v:.3f}" for v in ph.max(-1)))
        lines.append(line)
    return "\n".join(lines)


STUDY = Study(__name__, Config, runs, measure, table, figure=figure)
