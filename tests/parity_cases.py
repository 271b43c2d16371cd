"""lgjax beside its references: the golden files of tests/data/parity (written by
benchmarks/parity/generate_golden.py from the reference code itself, versions recorded there)
and lgjax's value for each, compared quantity by quantity.

`records()` is the one comparison that tests/test_parity.py asserts and
benchmarks/parity/make_page.py publishes (docs/parity.md): each record names the encoding, the
reference, the quantity, the configuration, lgjax's largest difference and its tolerance.

Sources (each golden file records its own, with the torch version):
  hf_rope.json, t5_buckets.json, bloom_alibi.json: transformers 5.23.0 (PyPI) --
    LlamaRotaryEmbedding with rope_type default/linear/dynamic/yarn/llama3/longrope and
    apply_rotary_pos_emb; T5Attention._relative_position_bucket; build_alibi_tensor
  hf_partial_rotary.json: transformers 5.23.0 -- prope against rope_type "proportional"
    (_compute_proportional_rope_parameters, LlamaRotaryEmbedding), rope_partial against
    partial_rotary_factor as StableLM applies it (StableLmRotaryEmbedding, the attention's
    q[..., :rotary_ndims] slicing, apply_rotary_pos_emb)
  xpos.json: torchscale 0.3.0 (PyPI; microsoft/torchscale, the xPos authors' package) --
    torchscale/component/xpos_relative_position.py XPOS
  kerple.json: the KERPLE authors' repository chijames/KERPLE, megatron/mpu/layers.py at commit
    73f1ee2d24722cdbe277d473899321218f5cbd00 -- ParallelKerpleLog, ParallelKerplePower

Conventions (each has a test in tests/test_parity.py):
  * rotary pairs: lgjax turns (x[2i], x[2i+1]); Hugging Face's rotate_half turns (x[i],
    x[i + d/2]). The logits agree once q and k are permuted between the two layouts (`to_pairs`):
    the frequencies are the same, only the coordinates that carry each pair differ.
  * YaRN's attention factor multiplies q and k after the rotation (HF: cos and sin), so the logit
    carries its square.
  * dynamic NTK: lgjax recomputes the frequencies from each sequence's own length; HF's module
    keeps those of the longest sequence it has seen while the length stays above L_orig. lgjax
    equals a fresh HF module (no earlier call), which is what the golden files hold.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from lgjax import learned_bias as LB
from lgjax import rope_scaling as RS
from lgjax.config import ModelConfig
from lgjax.encodings import ENCODINGS, alibi_slopes, rope_freqs64, t5_bucket

DATA = Path(__file__).parent / "data" / "parity"
FILES = ("hf_rope.json", "hf_partial_rotary.json", "bloom_alibi.json", "t5_buckets.json",
         "xpos.json", "kerple.json")

# Tolerances. The references compute in float32 (torch's default), lgjax its frequencies in
# float64 and its rotations in float32 (as in training): a frequency or slope differs by float32
# rounding, and a logit by the angle's rounding, which grows with the position.
TOL = {
    "frequencies (relative)": "2e-6",
    "attention factor": "1e-12",
    "logits / (norm q x norm k)": "4e-6 + 4e-9 x (largest position)",
    "slopes (relative)": "1e-6",
    "bias up to a per-query constant": "1e-6",
    "buckets (mismatches)": "0",
    "bias / max(1, abs bias)": "2e-6",
}


def logit_tol(positions) -> float:
    return 4e-6 + 4e-9 * max(positions)


FREQS = {
    "rope": lambda cfg, n: rope_freqs64(cfg),
    "rope_linear": lambda cfg, n: RS.linear_freqs64(cfg),
    "rope_yarn": lambda cfg, n: RS.yarn_freqs64(cfg),
    "rope_llama3": lambda cfg, n: RS.llama3_freqs64(cfg),
    "rope_dynamic": lambda cfg, n: np.asarray(RS.dynamic_freqs(cfg, n)),
    "rope_longrope": lambda cfg, n: np.asarray(RS.longrope_freqs(cfg, n)),
    "prope": lambda cfg, n: RS.prope_freqs64(cfg),
    "rope_partial": lambda cfg, n: RS.partial_freqs64(cfg),
}
GAIN = {"rope_yarn": RS.yarn_attention_factor, "rope_longrope": RS.longrope_attention_factor}


@dataclass(frozen=True)
class Record:
    encoding: str
    reference: str  # package==version, or repository@commit
    quantity: str  # a key of TOL
    config: str
    diff: float
    tol: float

    @property
    def ok(self) -> bool:
        return self.diff <= self.tol


@cache
def golden(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def reference_label(ref: dict) -> str:
    if "package" in ref:
        return f"{ref['package']}=={ref['version']} (torch {ref['torch']})"
    return f"{ref['repository']}@{ref['commit'][:12]} {ref['file']} (torch {ref['torch']})"


def inputs(rec: dict) -> tuple[np.ndarray, np.ndarray]:
    """The case's q, k [n, d] (float32), drawn as the generator drew them."""
    q, k = np.random.default_rng(rec["seed"]).standard_normal(
        (2, rec["n"], rec["d"])).astype(np.float32)
    assert math.isclose(q.astype(np.float64).sum(), rec["q_sum"], rel_tol=1e-12) and \
        math.isclose(k.astype(np.float64).sum(), rec["k_sum"], rel_tol=1e-12), \
        "numpy's default_rng no longer draws the generator's inputs: regenerate the golden files"
    return q, k


def to_pairs(x: np.ndarray) -> np.ndarray:
    """Hugging Face's half-split layout -> lgjax's interleaved pairs: (x[i], x[i + d/2]) become
    (x[2i], x[2i+1])."""
    h = x.shape[-1] // 2
    return np.stack([x[..., :h], x[..., h:]], axis=-1).reshape(x.shape)


@partial(jax.jit, static_argnums=(0, 1))
def _rotary_logits(name, cfg, q, k, pos):
    qr, kr = ENCODINGS[name].rotate_pair(q[:, None, :], k[:, None, :], pos,
                                         jnp.int32(pos.shape[0]), cfg)
    return qr[:, 0, :] @ kr[:, 0, :].T


def rotary_logits(name: str, cfg, q, k, positions) -> np.ndarray:
    """q_n . k_m [n, n] of lgjax's rotation (its own rotate_pair: gain and dynamic length
    included), in float32 as in training."""
    return np.asarray(_rotary_logits(name, cfg, jnp.asarray(q), jnp.asarray(k),
                                     jnp.asarray(positions, jnp.int32)), np.float64)


@partial(jax.jit, static_argnums=(0, 1))
def _logit_bias(name, cfg, params, q_pos, k_pos):
    return ENCODINGS[name].logit_bias(params, q_pos, k_pos, cfg)


def logit_diff(got, want, q, k) -> float:
    scale = np.linalg.norm(q, axis=-1).max() * np.linalg.norm(k, axis=-1).max()
    return float(np.abs(got - np.asarray(want)).max() / scale)


def _cfg_text(d: dict) -> str:
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in d.items())


def gain(name: str, cfg) -> float:
    return GAIN[name](cfg) if name in GAIN else 1.0


def hf_rope_case(ref: str, c: dict) -> list[Record]:
    name = c["encoding"]
    cfg = ModelConfig(name, d=c["d_head"], heads=1, enc=ENCODINGS[name].options(**c["options"]))
    n = max(c["positions"]) + 1
    where = f"d_head={c['d_head']}, {_cfg_text(c['options'])}"
    if name in ("rope_dynamic", "rope_longrope"):
        where = f"d_head={c['d_head']}, " + _cfg_text({
            k: v for k, v in c["options"].items() if not k.endswith("_factor")
            or k == "attention_factor"}) + f", seq_len={n}"
    with jax.enable_x64(True):
        theta = np.asarray(FREQS[name](cfg, n), np.float64)
    q, k = inputs(c["inputs"])
    got = rotary_logits(name, cfg, to_pairs(q), to_pairs(k), c["positions"])
    return [
        Record(name, ref, "frequencies (relative)", where,
               float(np.abs(theta / np.asarray(c["inv_freq"]) - 1).max()), 2e-6),
        Record(name, ref, "attention factor", where,
               abs(gain(name, cfg) - c["attention_factor"]), 1e-12),
        Record(name, ref, "logits / (norm q x norm k)",
               where + f", positions {c['positions'][0]}..{c['positions'][-1]}",
               logit_diff(got, c["logits"], q, k), logit_tol(c["positions"])),
    ]


def hf_partial_case(ref: str, c: dict) -> list[Record]:
    """p-RoPE (rope_type proportional: every pair listed, the dropped ones at frequency 0) and
    partial_rotary_factor (StableLM lists only the rotary width's frequencies: lgjax's first
    rotary_dims/2 are compared, the rest must be 0). The half-split layout holds over the
    rotated dims only; the dims past them pass unchanged in both."""
    name, r = c["encoding"], c["rotary_dims"]
    cfg = ModelConfig(name, d=c["d_head"], heads=1, enc=ENCODINGS[name].options(**c["options"]))
    where = f"d_head={c['d_head']}, {_cfg_text(c['options'])}"
    theta = np.asarray(FREQS[name](cfg, 0), np.float64)
    want = np.asarray(c["inv_freq"], np.float64)
    kept = want > 0  # HF's dropped pairs: frequency 0, compared exactly
    freq_diff = max(float(np.abs(theta[:want.size][kept] / want[kept] - 1).max()),
                    float(np.abs(theta[:want.size][~kept]).max(initial=0.0)),
                    float(np.abs(theta[want.size:]).max(initial=0.0)))
    q, k = inputs(c["inputs"])
    lay = lambda x: np.concatenate([to_pairs(x[:, :r]), x[:, r:]], axis=-1)
    got = rotary_logits(name, cfg, lay(q), lay(k), c["positions"])
    return [
        Record(name, ref, "frequencies (relative)", where, freq_diff, 2e-6),
        Record(name, ref, "attention factor", where, abs(1.0 - c["attention_factor"]), 1e-12),
        Record(name, ref, "logits / (norm q x norm k)",
               where + f", positions {c['positions'][0]}..{c['positions'][-1]}",
               logit_diff(got, c["logits"], q, k), logit_tol(c["positions"])),
    ]


def t5_case(ref: str, c: dict) -> list[Record]:
    cfg = ModelConfig("t5", enc=ENCODINGS["t5"].options(**c["options"]))
    lo, hi = c["distances"]
    got = np.asarray(jax.jit(t5_bucket, static_argnums=1)(jnp.arange(lo, hi + 1), cfg))
    return [Record("t5", ref, "buckets (mismatches)",
                   f"{_cfg_text(c['options'])}, distances {lo}..{hi} (causal)",
                   float((got != np.asarray(c["buckets"])).sum()), 0.0)]


def alibi_case(ref: str, c: dict) -> list[Record]:
    """Bloom adds slope_h * (key position) to every query's row; lgjax -slope_h * (query - key):
    the same row up to a constant per query, which the softmax does not see."""
    H, L = c["heads"], c["length"]
    cfg = ModelConfig("alibi", d=2 * H, heads=H, enc=ENCODINGS["alibi"].options(**c["options"]))
    want = np.asarray(c["alibi"])  # [H, L]
    where = f"heads={H}, slopes={c['options']['slopes']}"
    i, j = np.tril_indices(L)
    bias = np.asarray(_logit_bias("alibi", cfg, {}, jnp.asarray(i), jnp.asarray(j)))
    shift = bias - want.T[j]  # [pairs, H]: constant over the keys of each query
    spread = max(float(np.ptp(shift[i == n], axis=0).max()) for n in range(L))
    return [Record("alibi", ref, "slopes (relative)", where,
                   float(np.abs(alibi_slopes(cfg) / want[:, 1] - 1).max()), 1e-6),
            Record("alibi", ref, "bias up to a per-query constant",
                   where + f", queries 0..{L - 1}", spread, 1e-6)]


def xpos_case(ref: str, c: dict) -> list[Record]:
    """torchscale turns the same interleaved pairs as lgjax: no permutation. It centres the
    positions for the scale (a factor per pair that cancels in q . k), lgjax does not."""
    cfg = ModelConfig("xpos", d=c["d_head"], heads=1, enc=ENCODINGS["xpos"].options(**c["options"]))
    q, k = inputs(c["inputs"])
    got = rotary_logits("xpos", cfg, q, k, c["positions"])
    return [Record("xpos", ref, "logits / (norm q x norm k)",
                   f"d_head={c['d_head']}, scale_base={c['options']['scale_base']:g}, "
                   f"positions 0..{c['positions'][-1]}",
                   logit_diff(got, c["logits"], q, k), logit_tol(c["positions"]))]


def kerple_case(ref: str, c: dict) -> list[Record]:
    """lgjax's r1, r2 set through its own parametrisation (softplus; 2 sigmoid for the power's
    exponent), as training holds them."""
    name, H, L = c["encoding"], c["heads"], c["length"]
    cfg = ModelConfig(name, d=2 * H, heads=H)
    raw2 = {"kerple_log": LB.softplus_inverse, "kerple_power": lambda r: LB.logit(r / 2.0)}[name]
    params = {"kerple_r1": jnp.asarray([LB.softplus_inverse(r) for r in c["r1"]], jnp.float32),
              "kerple_r2": jnp.asarray([raw2(r) for r in c["r2"]], jnp.float32)}
    i, j = np.tril_indices(L)
    got = np.asarray(_logit_bias(name, cfg, params, jnp.asarray(i), jnp.asarray(j)))
    want = np.asarray(c["bias"])[:, i, j].T  # [pairs, H]
    return [Record(name, ref, "bias / max(1, abs bias)",
                   f"heads={H}, r1={c['r1']}, r2={c['r2']}, distances 0..{L - 1}",
                   float((np.abs(got - want) / np.maximum(1.0, np.abs(want))).max()), 2e-6)]


CASE_FN = {"hf_rope.json": hf_rope_case, "hf_partial_rotary.json": hf_partial_case,
           "t5_buckets.json": t5_case,
           "bloom_alibi.json": alibi_case, "xpos.json": xpos_case, "kerple.json": kerple_case}


def cases() -> list[tuple[str, int]]:
    """(golden file, case index) of every case, in the page's order."""
    return [(f, i) for f in FILES for i in range(len(golden(f)["cases"]))]


def case_records(file: str, i: int) -> list[Record]:
    g = golden(file)
    return CASE_FN[file](reference_label(g["reference"]), g["cases"][i])


def records() -> list[Record]:
    return [r for f, i in cases() for r in case_records(f, i)]
