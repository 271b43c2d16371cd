"""transformer: the bridge to a 2-layer, 4-head decoder on the full-sequence shift task.

Spec: implicit-bias.md, row `transformer`. Reference: 2 layers, 4 heads, d = 192, MLP 4d GELU,
pre-LayerNorm, causal; out[i] = in[i-K], K = 3 (rows i < K unscored); train lengths [8, 16],
Adam lr 3e-4, batch 256, 8000 steps; evaluation at 12, 16, 24, 32, 48.
Command: lgjax transformer --encodings rope,ape --seeds 1 --steps 3000   (CPU: ~0.35 s/step)
Expect: RoPE per-token accuracy near 1.0 to 48; APE's tracks the in-range fraction of scored
rows (Lmax-K)/(L-K); a RoPE head's offset profiles at 16 and 48 coincide and peak at -K.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

from lgjax import checkpoints, plots, tasks, transformer
from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig, validate
from lgjax.devices import seed_mesh
from lgjax.experiments import common
from lgjax.keys import EVAL, stream

PAPER_SCALE = {"steps": 8000, "batch": 256}


@dataclass(frozen=True)
class TransformerConfig:
    encodings: tuple[str, ...] = ("rope", "ape")  # one run per encoding
    K: int = 3  # shift: out[i] = in[i-K]
    seeds: int = 1  # seeds 0..seeds-1
    steps: int = 8000  # Adam steps
    batch: int = 256  # sequences per step
    lr: float = 3e-4  # Adam learning rate
    layers: int = 2  # decoder blocks
    heads: int = 4  # heads per block
    d: int = 192  # width
    vocab: int = 20  # content tokens
    train_lengths: tuple[int, int] = (8, 16)  # [lmin, lmax]
    eval_lengths: tuple[int, ...] = (12, 16, 24, 32, 48)  # evaluation lengths
    profile_lengths: tuple[int, ...] = (16, 48)  # lengths of the per-head offset profiles
    n_eval: int = 1024  # evaluation sequences per length
    out: str = "results/transformer"  # results.json and figure
    ckpt_root: str = "checkpoints"  # runs go to <ckpt_root>/<run_name>/<encoding>
    run_name: str = ""  # default transformer-K<K>
    resume: bool = False  # continue existing runs
    progress: bool = True  # progress bar
    devices: int = 0  # devices for the seed axis (0: all that divide the seed count)

    def run_config(self, encoding: str) -> RunConfig:
        return RunConfig(
            TaskConfig("shift", vocab=self.vocab, offset=self.K),
            ModelConfig(encoding=encoding, arch="transformer", layers=self.layers,
                        heads=self.heads, d=self.d, query="all"),
            TrainConfig(steps=self.steps, batch=self.batch, lr=self.lr,
                        lmin=self.train_lengths[0], lmax=self.train_lengths[1],
                        seeds=tuple(range(self.seeds))))

    def reduced(self) -> bool:
        return common.is_reduced(self, seeds=1, n_eval=0, **PAPER_SCALE)


def offset_profile(mean_att_QxK: np.ndarray, K: int) -> np.ndarray:
    """Mean attention at offset delta = t - i, over scored rows i >= K: [L] for delta -(L-1)..0."""
    L = mean_att_QxK.shape[-1]
    prof = np.zeros(L)
    for j, delta in enumerate(range(-(L - 1), 1)):
        rows = [i for i in range(max(K, -delta), L)]
        prof[j] = np.mean([mean_att_QxK[i, i + delta] for i in rows]) if rows else 0.0
    return prof


def carrier_fraction(x_NxD: np.ndarray) -> float:
    """||E x||^2 / E ||x||^2 over the rows of x."""
    return float(np.sum(x_NxD.mean(0) ** 2) / np.mean(np.sum(x_NxD**2, -1)))


def evaluate_seed(params, key_data, rc: RunConfig, lengths, n_eval: int) -> dict:
    m_in = m_out = rc.task.vocab
    apply = jax.jit(transformer.apply_with_keys(rc.model, m_in, m_out))
    out = {}
    for L in lengths:
        batch = tasks.sample_batch(rc.task, stream(key_data, EVAL, L), n_eval, L, L, L)
        logits, att, keys = apply(params, batch.tokens, batch.length)
        correct = np.asarray((jnp.argmax(logits, -1) == batch.targets) & batch.mask)
        mask = np.asarray(batch.mask)
        inside = np.arange(L) < rc.train.lmax
        mean_att = np.asarray(att.mean(0))  # [layers, H, L, L]
        keys = np.asarray(keys)  # [B, layers, L, H, dh]
        out[L] = {
            "accuracy": float(correct.sum() / mask.sum()),
            "accuracy_in_range": float(correct[:, inside].sum() / max(mask[:, inside].sum(), 1)),
            "accuracy_beyond": (float(correct[:, ~inside].sum() / mask[:, ~inside].sum())
                                if mask[:, ~inside].any() else None),
            "in_range_fraction": float(mask[:, inside].sum() / mask.sum()),
            "profiles": [[offset_profile(mean_att[l, h], rc.task.offset).tolist()
                          for h in range(rc.model.heads)] for l in range(rc.model.layers)],
            "key_carrier": [[carrier_fraction(keys[:, l, :, h].reshape(-1, keys.shape[-1]))
                             for h in range(rc.model.heads)] for l in range(rc.model.layers)],
        }
    return out


def shift_head(per_length: dict, K: int, L: int) -> tuple[int, int]:
    """(layer, head) whose offset profile at length L puts the most mass at -K."""
    prof = np.asarray(per_length[L]["profiles"])  # [layers, H, L]
    at_k = prof[..., L - 1 - K]
    return tuple(int(i) for i in np.unravel_index(np.argmax(at_k), at_k.shape))


def run(cfg: TransformerConfig) -> dict:
    for enc in cfg.encodings:
        validate(cfg.run_config(enc), cfg.eval_lengths)
    seed_mesh(cfg.seeds, cfg.devices or None)
    t0 = time.perf_counter()
    results = {"experiment": "transformer", "config": asdict(cfg), "reduced": cfg.reduced(),
               "lengths": list(cfg.eval_lengths), "train_lengths": list(cfg.train_lengths),
               "K": cfg.K, "seeds": list(range(cfg.seeds)), "chance": 1.0 / cfg.vocab,
               "expected_ape_accuracy": {  # in-range fraction of scored rows
                   L: min(1.0, (cfg.train_lengths[1] - cfg.K) / (L - cfg.K))
                   for L in cfg.eval_lengths}}
    for enc in cfg.encodings:
        rc = cfg.run_config(enc)
        run_dir = Path(cfg.ckpt_root) / (cfg.run_name or f"transformer-K{cfg.K}") / enc
        bar = tqdm(total=rc.train.steps, desc=f"transformer {enc}", disable=not cfg.progress)
        t_enc = time.perf_counter()
        states = checkpoints.train_run(rc, run_dir, resume=cfg.resume, devices=cfg.devices or None,
                                       on_chunk=lambda step, *_, b=bar: b.update(step - b.n))
        bar.close()
        t_train = time.perf_counter() - t_enc
        lengths = tuple(sorted(set(cfg.eval_lengths) | set(cfg.profile_lengths)))
        per_seed = [evaluate_seed(jax.tree.map(lambda x, s=s: x[s], states.params),
                                  np.asarray(states.key[s]), rc, lengths, cfg.n_eval)
                    for s in range(cfg.seeds)]
        heads = [shift_head(ps, cfg.K, max(cfg.profile_lengths)) for ps in per_seed]
        results[enc] = {
            "accuracy": [[ps[L]["accuracy"] for L in cfg.eval_lengths] for ps in per_seed],
            "accuracy_in_range": [[ps[L]["accuracy_in_range"] for L in cfg.eval_lengths]
                                  for ps in per_seed],
            "accuracy_beyond": [[ps[L]["accuracy_beyond"] for L in cfg.eval_lengths]
                                for ps in per_seed],
            "in_range_fraction": [per_seed[0][L]["in_range_fraction"] for L in cfg.eval_lengths],
            "profiles": {L: [ps[L]["profiles"] for ps in per_seed] for L in cfg.profile_lengths},
            "shift_head": heads,
            "shift_head_key_carrier": [ps[max(cfg.profile_lengths)]["key_carrier"][l][h]
                                       for ps, (l, h) in zip(per_seed, heads)],
            "inverse_d_head": cfg.heads / cfg.d,
            "run_dir": str(run_dir), "train_seconds": t_train,
            "eval_seconds": time.perf_counter() - t_enc - t_train,
        }
    results["wall_seconds"] = time.perf_counter() - t0
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1))
    plots.transformer_figure(results, cfg.encodings, out / "transformer")
    print(table(results, cfg.encodings))
    return results


def table(results: dict, encodings) -> str:
    lengths = results["lengths"]
    lines = ["per-token accuracy by length (seed 0); APE expectation (Lmax-K)/(L-K)",
             f"{'':22s}" + "".join(f"{'L=' + str(L):>9s}" for L in lengths)]
    exp = results["expected_ape_accuracy"]
    lines.append(f"{'(Lmax-K)/(L-K)':22s}" + "".join(f"{exp[L]:>9.3f}" for L in lengths))
    for enc in encodings:
        r = results[enc]
        for key in ("accuracy", "accuracy_in_range", "accuracy_beyond"):
            cells = "".join(f"{v:>9.3f}" if v is not None else f"{'-':>9s}" for v in r[key][0])
            lines.append(f"{enc + ' ' + key.replace('accuracy', 'acc'):22s}{cells}")
    for enc in encodings:
        r = results[enc]
        l, h = r["shift_head"][0]
        peaks = {L: int(np.argmax(r["profiles"][L][0][l][h])) - (L - 1) for L in r["profiles"]}
        lines.append(f"{enc}: shift head = layer {l} head {h}; profile argmax by length {peaks}; "
                     f"key carrier fraction {r['shift_head_key_carrier'][0]:.3f} vs 1/d_head "
                     f"{r['inverse_d_head']:.4f}")
    return "\n".join(lines)
