"""Pure evaluation pieces of the contract study (docs/studies/contract.md, the trained matrix).

Interventions, evaluation only (no retraining):
  position interpolation  `interpolated(model_cfg, L, train_max)`: an evaluation-time model
      config that maps length L into the trained range (RoPE: its scale x train_max/L; learned:
      its table interpolated, oob="interp"; sinusoidal positions, ALiBi and clipped-relative
      distances x train_max/L through eval-only encodings; NoPE unchanged);
  RoPE extensions  `rope_extended(model_cfg, name, L, train_max)`: a plain-RoPE model evaluated
      through NTK-aware scaling, YaRN or Llama 3 (lgjax.rope_scaling) with L_orig = train_max and
      factor s = L / train_max, the stretch each method is meant for (no retraining: none has
      parameters of its own); linear interpolation is the PI column above;
  retrieval  `retrieval_index`: a separate system that keeps the evidence span plus the last
      (window - e) tokens and renumbers them 0..window-1.
Attention readouts: the head chosen on in-range data, its distance-confusion matrix, failure by
relative offset, the attention-logit range per head. All functions are for plain arrays (numpy or
jax); batch and seed axes are the caller's.
"""

from __future__ import annotations

import contextlib
import dataclasses

import jax.numpy as jnp
import numpy as np

from lgjax import encodings
from lgjax.config import ModelConfig, TaskConfig
from lgjax.encodings import ENCODINGS, Encoding

PI_SUFFIX = "+pi"  # eval-only encodings: "<name>+pi" reads positions or distances x pos_scale


def interpolated_options(options: type) -> type:
    """An encoding's options plus `pos_scale`: positions (or distances) are multiplied by it
    (train_max / L)."""
    return dataclasses.make_dataclass(f"Interpolated{options.__name__}",
                                      [("pos_scale", float, 1.0)], bases=(options,), frozen=True)


def _scaled_sinusoid(params, pos, length, cfg):
    return encodings.sinusoidal_table(params, pos.astype(jnp.float32) * cfg.enc.pos_scale,
                                      length, cfg)


def _scaled_alibi(params, dist, cfg):
    return encodings.alibi_bias(params, jnp.asarray(dist, jnp.float32) * cfg.enc.pos_scale, cfg)


def _scaled_clip(params, dist, cfg):
    """The clipped table read at the fractional distance d x scale, linearly between rows."""
    clip = cfg.enc.clip
    x = jnp.clip(jnp.asarray(dist, jnp.float32) * cfg.enc.pos_scale, 0.0, float(clip))
    lo = jnp.floor(x).astype(jnp.int32)
    hi = jnp.minimum(lo + 1, clip)
    frac = (x - lo)[..., None]
    table = params["relbias"]
    return table[lo] * (1 - frac) + table[hi] * frac


PI_ENCODINGS: dict[str, Encoding] = {
    "sinusoidal": Encoding("additive", encodings.additive_kernel(_scaled_sinusoid),
                           embed=_scaled_sinusoid,
                           options=interpolated_options(encodings.SinusoidalOptions)),
    "alibi": Encoding("bias", encodings.bias_kernel(_scaled_alibi), bias=_scaled_alibi,
                      options=interpolated_options(encodings.AlibiOptions)),
    "relclip": Encoding("bias", encodings.bias_kernel(_scaled_clip), init=encodings.clip_init,
                        bias=_scaled_clip, options=interpolated_options(encodings.RelClipOptions)),
}


@contextlib.contextmanager
def pi_encodings():
    """Register the eval-only encodings for the duration of an evaluation (they are never a
    training choice, so the registry holds them only here)."""
    added = {name + PI_SUFFIX: enc for name, enc in PI_ENCODINGS.items()
             if name + PI_SUFFIX not in ENCODINGS}
    ENCODINGS.update(added)
    try:
        yield
    finally:
        for name in added:
            del ENCODINGS[name]


def _through_pi_encoding(m: ModelConfig, scale: float) -> ModelConfig:
    enc = PI_ENCODINGS[m.encoding].options(**dataclasses.asdict(m.enc), pos_scale=scale)
    return dataclasses.replace(m, encoding=m.encoding + PI_SUFFIX, enc=enc)


def _with_options(m: ModelConfig, **options) -> ModelConfig:
    return dataclasses.replace(m, enc=dataclasses.replace(m.enc, **options))


# encoding name -> (model config, scale) -> the interpolated model config
INTERPOLATIONS = {
    "ape": lambda m, s: _with_options(m, oob="interp"),
    "rope": lambda m, s: _with_options(m, scale=m.enc.scale * s),
    "sinusoidal": _through_pi_encoding,
    "alibi": _through_pi_encoding,
    "relclip": _through_pi_encoding,
    "nope": lambda m, s: m,
}


def interpolated(m: ModelConfig, length: int, train_max: int) -> ModelConfig:
    """The evaluation-time config of position interpolation at length L (scale train_max / L);
    evaluate it inside `pi_encodings()`."""
    return INTERPOLATIONS[m.encoding](m, min(1.0, train_max / length))


# name -> the registered rope_scaling entry; each is given base, factor and L_orig (its other
# options at their Hugging Face defaults: YaRN beta_fast 32, beta_slow 1, attention factor
# 0.1 ln s + 1; Llama 3 low 1, high 4)
ROPE_EXTENSIONS = {"ntk": "rope_ntk", "yarn": "rope_yarn", "llama3": "rope_llama3"}


def extends_rope(m: ModelConfig) -> bool:
    """Plain RoPE (frequency scale 1): the model the extension methods are defined for."""
    return m.encoding == "rope" and m.enc.scale == 1.0


def rope_extended(m: ModelConfig, name: str, length: int, train_max: int) -> ModelConfig:
    """The evaluation-time config of RoPE extension `name` at length L."""
    entry = ENCODINGS[ROPE_EXTENSIONS[name]]
    over = {"original_max_position": train_max} if "original_max_position" in {
        f.name for f in dataclasses.fields(entry.options)} else {}
    enc = entry.options(base=m.enc.base, factor=max(1.0, length / train_max), **over)
    return dataclasses.replace(m, encoding=ROPE_EXTENSIONS[name], enc=enc)


# ---- retrieval ---------------------------------------------------------------------------

# task -> cfg -> (tokens before the evidence position that the span starts, span length e):
# the anchor's slot counts from the content start, so its span is the content start through the
# slot; an update's evidence is the value after the last SET, so the SET comes with it.
EVIDENCE_SPAN = {
    "absolute_anchor": lambda c: (c.opts.anchor_slot, c.opts.anchor_slot + 1),
    "ordered_update": lambda c: (1, 2),
    "offset_copy": lambda c: (0, 1),
    "periodic_marker": lambda c: (0, 1),
}


def evidence_span(task: str, evidence, cfg: TaskConfig):
    before, e = EVIDENCE_SPAN[task](cfg)
    return evidence - before, e


def retrieval_index(start, e: int, length, window: int):
    """[..., window] source positions: the span [start, start+e), then the last window-e tokens;
    just the last `window` tokens when the span already lies among them."""
    j = jnp.arange(window)
    start, length = jnp.asarray(start)[..., None], jnp.asarray(length)[..., None]
    tail = length - window + j
    inside = start + e > length - (window - e)
    return jnp.where(inside | (j >= e), tail, start + j)


# ---- attention readouts ------------------------------------------------------------------

def hit_rates(attended_NxA, evidence_N) -> np.ndarray:
    """[..., A]: how often each head's argmax key is the evidence position (over the N axis)."""
    return (np.asarray(attended_NxA) == np.asarray(evidence_N)[..., None]).mean(-2)


def bins_of(distance, width: int, n_bins: int) -> np.ndarray:
    return np.clip(np.asarray(distance) // width, 0, n_bins - 1)


def confusion(needed, attended, width: int, n_bins: int) -> np.ndarray:
    """[n_bins, n_bins] counts: row = distance needed (query - evidence), column = distance the
    head attended (query - its argmax key), both in bins of `width` (arrays of any shape)."""
    out = np.zeros((n_bins, n_bins), np.int64)
    np.add.at(out, (bins_of(needed, width, n_bins), bins_of(attended, width, n_bins)), 1)
    return out


def failure_by_offset(needed, correct, width: int, n_bins: int) -> tuple[np.ndarray, ...]:
    """(total, correct) per bin of the distance needed (arrays of any shape)."""
    b = bins_of(needed, width, n_bins).ravel()
    total = np.bincount(b, minlength=n_bins)
    return total, np.bincount(b, weights=np.ravel(correct).astype(float), minlength=n_bins)


def logit_range(logits_AxL, length) -> np.ndarray:
    """[..., A]: max - min of each head's attention logits over the valid keys t < length [...]."""
    valid = np.arange(np.shape(logits_AxL)[-1]) < np.asarray(length)[..., None, None]
    x = np.asarray(logits_AxL, float)
    return np.where(valid, x, -np.inf).max(-1) - np.where(valid, x, np.inf).min(-1)


def rank_correlation(x, y) -> float:
    """Spearman's rho (ties averaged); NaN when either side is constant or too short."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(x) & np.isfinite(y)
    if keep.sum() < 3 or np.ptp(x[keep]) == 0 or np.ptp(y[keep]) == 0:
        return float("nan")
    from scipy import stats  # on first use: a heavy import no command's start should pay

    return float(stats.spearmanr(x[keep], y[keep]).statistic)
