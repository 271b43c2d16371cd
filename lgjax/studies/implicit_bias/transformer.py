"""transformer: the bridge to a 2-layer, 4-head decoder on the full-sequence shift task.

docs/studies/implicit-bias.md, experiment `transformer`. Reference: 2 layers, 4 heads, d = 192, MLP
4d GELU, pre-LayerNorm, causal; out[i] = in[i-K], K = 3 (rows i < K unscored); train lengths [8,
16], Adam lr 3e-4, batch 256, 8000 steps; evaluation at 12, 16, 24, 32, 48.
Command: lgjax transformer --encodings rope,ape --seeds 1 --steps 3000   (CPU: ~0.35 s/step)
Expect: RoPE per-token accuracy near 1.0 to 48; APE's tracks the in-range fraction of scored
rows (Lmax-K)/(L-K); a RoPE head's offset profiles at 16 and 48 coincide and peak at -K.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from lgjax import models, tasks, transformer
from lgjax.config import RunConfig, TaskConfig
from lgjax.devices import map_seeds
from lgjax.harness import study
from lgjax.harness.ranges import option
from lgjax.harness.study import RunOptions, Study
from lgjax.keys import EVAL, stream
from lgjax.studies.implicit_bias import common, multiseed
from lgjax.studies.implicit_bias import figures as plots
from lgjax.studies.implicit_bias.analysis import carrier_fraction


@dataclass(frozen=True)
class Config:
    encodings: tuple[str, ...] = ("rope", "ape")  # one run per encoding
    K: int = 3  # shift: out[i] = in[i-K]
    lr: float = option(3e-4, gt=0)  # Adam learning rate
    layers: int = 2  # decoder blocks
    heads: int = 4  # heads per block
    d: int = 192  # width
    vocab: int = 20  # content tokens
    train_lengths: tuple[int, int] = (8, 16)  # LMIN,LMAX: training lengths, uniform
    eval_lengths: tuple[int, ...] = (12, 16, 24, 32, 48)  # evaluation lengths
    profile_lengths: tuple[int, ...] = option(
        (16, 48), ge=1)  # lengths of the per-head offset profiles
    run_name: str = ""  # runs go to <ckpt-root>/<run-name>/<encoding> (default transformer-K<K>)
    run: RunOptions = RunOptions(seeds=1, steps=8000, eval_sequences=1024)  # shared options


check = multiseed.check  # the same --train-lengths and --encodings


def eval_lengths(cfg: Config) -> tuple[int, ...]:
    return tuple(sorted(set(cfg.eval_lengths) | set(cfg.profile_lengths)))


def run_config(cfg: Config, encoding: str) -> RunConfig:
    return study.run_config(
        cfg, TaskConfig.of("shift", vocab=cfg.vocab, offset=cfg.K),
        common.implicit_bias_model(encoding, arch="transformer", layers=cfg.layers,
                                   heads=cfg.heads, d=cfg.d, query="all"),
        lr=cfg.lr, lmin=cfg.train_lengths[0], lmax=cfg.train_lengths[1])


def runs(cfg: Config) -> dict[str, RunConfig]:
    root = cfg.run_name or f"transformer-K{cfg.K}"
    return {f"{root}/{e}": run_config(cfg, e) for e in cfg.encodings}


def offset_profile(mean_att_QxK: np.ndarray, K: int) -> np.ndarray:
    """Mean attention at offset delta = t - i, over scored rows i >= K: [L] for delta -(L-1)..0."""
    L = mean_att_QxK.shape[-1]
    prof = np.zeros(L)
    for j, delta in enumerate(range(-(L - 1), 1)):
        rows = range(max(K, -delta), L)
        prof[j] = np.mean([mean_att_QxK[i, i + delta] for i in rows]) if rows else 0.0
    return prof


def make_evaluator(rc: RunConfig, lengths, n_eval: int):
    """evaluate(states) -> every seed's per-length metrics. One compiled apply for every seed
    and length: each length is padded to the longest one. In a job of several processes each
    evaluates its block of seeds."""
    apply = jax.jit(transformer.apply_with_keys(rc.model, *models.vocab_sizes(rc)))
    Lpad = max(lengths)

    def one_length(params, key_data, L: int) -> dict:
        batch = tasks.sample_batch(rc.task, stream(key_data, EVAL, L), n_eval, L, L, Lpad)
        logits, att, keys = apply(params, batch.tokens, batch.length)
        correct = np.asarray((jnp.argmax(logits, -1) == batch.targets) & batch.mask)[:, :L]
        mask = np.asarray(batch.mask)[:, :L]
        inside = np.arange(L) < rc.train.lmax
        mean_att = np.asarray(att.mean(0))[..., :L, :L]  # [layers, H, L, L]
        keys = np.asarray(keys)[:, :, :L]  # [B, layers, L, H, dh]
        return {
            "accuracy": float(correct.sum() / mask.sum()),
            "accuracy_in_range": float(correct[:, inside].sum() / max(mask[:, inside].sum(), 1)),
            "accuracy_beyond": (float(correct[:, ~inside].sum() / mask[:, ~inside].sum())
                                if mask[:, ~inside].any() else None),
            "in_range_fraction": float(mask[:, inside].sum() / mask.sum()),
            "profiles": [[offset_profile(mean_att[l, h], rc.task.opts.offset).tolist()
                          for h in range(rc.model.heads)] for l in range(rc.model.layers)],
            "key_carrier": [[float(carrier_fraction(keys[:, l, :, h].reshape(-1, keys.shape[-1])))
                             for h in range(rc.model.heads)] for l in range(rc.model.layers)],
        }

    def one_seed(states, s: int) -> dict:
        params, key_data = jax.tree.map(lambda x: x[s], states.params), np.asarray(states.key[s])
        return {L: one_length(params, key_data, L) for L in lengths}

    return lambda states: map_seeds(lambda s: one_seed(states, s), len(rc.train.seeds))


def shift_head(per_length: dict, K: int, L: int) -> tuple[int, int]:
    """(layer, head) whose offset profile at length L puts the most mass at -K."""
    prof = np.asarray(per_length[L]["profiles"])  # [layers, H, L]
    at_k = prof[..., L - 1 - K]
    return tuple(int(i) for i in np.unravel_index(np.argmax(at_k), at_k.shape))


def measure(cfg: Config, trained: dict) -> dict:
    res = {"lengths": list(cfg.eval_lengths), "train_lengths": list(cfg.train_lengths),
           "K": cfg.K, "seeds": list(study.seeds(cfg)), "chance": 1.0 / cfg.vocab,
           "encodings": list(cfg.encodings),
           "expected_ape_accuracy": {  # in-range fraction of scored rows
               L: min(1.0, (cfg.train_lengths[1] - cfg.K) / (L - cfg.K))
               for L in cfg.eval_lengths}}
    for name, t in trained.items():
        per_seed = make_evaluator(t.config, eval_lengths(cfg), cfg.run.eval_sequences)(t.states)
        heads = [shift_head(ps, cfg.K, max(cfg.profile_lengths)) for ps in per_seed]
        res[Path(name).name] = {
            **{k: [[ps[L][k] for L in cfg.eval_lengths] for ps in per_seed]  # [seeds, lengths]
               for k in ("accuracy", "accuracy_in_range", "accuracy_beyond")},
            "in_range_fraction": [per_seed[0][L]["in_range_fraction"] for L in cfg.eval_lengths],
            "profiles": {L: [ps[L]["profiles"] for ps in per_seed] for L in cfg.profile_lengths},
            "shift_head": heads,
            "shift_head_key_carrier": [ps[max(cfg.profile_lengths)]["key_carrier"][l][h]
                                       for ps, (l, h) in zip(per_seed, heads)],
            "inverse_d_head": cfg.heads / cfg.d}
    return res


figure = plots.transformer_figure  # (result, stem): drawn from the results alone


def table(results: dict) -> str:
    encodings = results["encodings"]
    lengths = results["lengths"]
    lines = ["per-token accuracy by length (seed 0); APE expectation (Lmax-K)/(L-K)",
             f"{'':22s}" + "".join(f"{'L=' + str(L):>9s}" for L in lengths)]
    exp = results["expected_ape_accuracy"]
    lines.append(f"{'(Lmax-K)/(L-K)':22s}" + "".join(f"{exp[str(L)]:>9.3f}" for L in lengths))
    for enc in encodings:
        r = results[enc]
        for key in ("accuracy", "accuracy_in_range", "accuracy_beyond"):
            cells = "".join(f"{v:>9.3f}" if v is not None else f"{'-':>9s}" for v in r[key][0])
            lines.append(f"{enc + ' ' + key.replace('accuracy', 'acc'):22s}{cells}")
    for enc in encodings:
        r = results[enc]
        l, h = r["shift_head"][0]
        peaks = {L: int(np.argmax(r["profiles"][L][0][l][h])) - (int(L) - 1)
                 for L in r["profiles"]}
        lines.append(f"{enc}: shift head = layer {l} head {h}; profile argmax by length {peaks}; "
                     f"key carrier fraction {r['shift_head_key_carrier'][0]:.3f} vs 1/d_head "
                     f"{r['inverse_d_head']:.4f}")
    return "\n".join(lines)


STUDY = Study(__name__, Config, runs, measure, table, check=check, eval_lengths=eval_lengths,
              figure=figure)
