"""variants: other relative schemes, content-conditioned selection, carrier peaks, more heads.

Spec: implicit-bias.md, experiment `variants`. 5 seeds, 4000 steps, batch 256 everywhere.
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

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from lgjax import analysis
from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig
from lgjax.encodings import d_head
from lgjax.experiments import common


@dataclass(frozen=True)
class VariantsConfig:
    schemes: tuple[str, ...] = ("alibi", "t5", "rope")  # (a) encodings
    scheme_Ks: tuple[int, ...] = (1, 2)  # (a) offsets
    carrier_Ks: tuple[int, ...] = (2, 3, 4, 5)  # (c) offsets
    head_counts: tuple[int, ...] = (1, 4)  # (d) H at d = 64
    mode_heads: tuple[int, ...] = (1, 2)  # (b) H for the content-conditioned task
    seeds: int = 5  # seeds 0..seeds-1
    steps: int = 4000  # Adam steps
    batch: int = 256  # sequences per step
    eval_lengths: tuple[int, ...] = (12, 16, 20, 24, 32, 40, 48)  # evaluation lengths
    n_eval: int = 4096  # evaluation sequences per length
    parts: str = "abcd"  # which parts to run
    out: str = "results/variants"  # results.json
    ckpt_root: str = "checkpoints"  # runs in <ckpt_root>/variants/...
    resume: bool = False  # continue (or reload finished) runs
    progress: bool = True  # progress bars

    def rc(self, task: str, K: int, encoding: str = "rope", heads: int = 1) -> RunConfig:
        return RunConfig(TaskConfig(task, offset=K, offset2=3), ModelConfig(encoding, heads=heads),
                         TrainConfig(steps=self.steps, batch=self.batch,
                                     seeds=tuple(range(self.seeds))))

    def runs(self) -> dict[str, RunConfig]:
        out = {}
        if "a" in self.parts:
            out |= {f"a-{e}-K{K}": self.rc("fixed_offset", K, e)
                    for e in self.schemes for K in self.scheme_Ks}
        if "b" in self.parts:
            out |= {f"b-two_offset-H{h}": self.rc("two_offset", 1, heads=h)
                    for h in self.mode_heads}
        if "c" in self.parts:
            out |= {f"c-rope-K{K}": self.rc("fixed_offset", K) for K in self.carrier_Ks}
        if "d" in self.parts:
            out |= {f"d-rope-H{h}": self.rc("fixed_offset", 2, heads=h)
                    for h in self.head_counts}
        return out


def mode_profile_peaks(params, cfg: RunConfig, L: int) -> np.ndarray:
    """argmax over delta of (W_Q E[mode])^T R_delta m_K per (mode, head): [2, H]."""
    m, H = cfg.task.vocab, cfg.model.heads
    q = (params["embed"][m:m + 2] @ params["wq"]).reshape(2, H, d_head(cfg.model))
    k_mean = (params["embed"][:m] @ params["wk"]).mean(0).reshape(H, d_head(cfg.model))
    deltas = jnp.arange(-(L - 1), 1, dtype=jnp.float32)
    prof = jax.vmap(lambda qm: jax.vmap(lambda qh, kh: jax.vmap(
        lambda dl: qh @ analysis._rotate_vec(kh, dl, cfg.model))(deltas))(qm, k_mean))(q)
    return np.asarray(jnp.argmax(prof, -1) - (L - 1))


def summarise(name: str, rc: RunConfig, states, ev) -> dict:
    peak, offset = common.peak_head(ev)
    hm = jax.vmap(lambda p: analysis.head_metrics(p, rc.model, rc.task.offset, 48))(states.params)
    out = {"accuracy": ev.accuracy, "selected_offset": offset, "peak_height": peak,
           "peak_height_per_head": ev.peak_height, "sv_energy_per_head": hm["sv_energy"],
           "carrier_argmax": hm["carrier_argmax"], "carrier_key": hm["carrier_key"]}
    if rc.task.name == "two_offset":
        out["mode_profile_peaks"] = np.stack([mode_profile_peaks(
            jax.tree.map(lambda x, s=s: x[s], states.params), rc, 16)
            for s in range(len(rc.train.seeds))])
    return out


def run(cfg: VariantsConfig) -> dict:
    runs = cfg.runs()
    common.check_all(list(runs.values()), cfg.eval_lengths)
    t0 = time.perf_counter()
    res = {"experiment": "variants", "config": asdict(cfg), "lengths": list(cfg.eval_lengths),
           "reduced": common.is_reduced(cfg)}
    for name, rc in runs.items():
        lengths = (12, 16) if rc.task.name == "two_offset" else cfg.eval_lengths
        states, ev, times = common.train_eval(rc, Path(cfg.ckpt_root) / "variants" / name,
                                              lengths, cfg.n_eval, resume=cfg.resume,
                                              progress=cfg.progress, label=name)
        res[name] = {**summarise(name, rc, states, ev), **times}
    res["wall_seconds"] = time.perf_counter() - t0
    common.write_json(res, Path(cfg.out))
    print(table(res, runs))
    return res


def table(res: dict, runs: dict) -> str:
    lines = []
    for name in runs:
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
