"""RoPE length extension (position interpolation, NTK-aware, dynamic NTK, YaRN, Llama 3,
LongRoPE) and xPos.

Every entry keeps lgjax's rotation (consecutive pairs x[2i], x[2i+1] turned by pos * theta_i,
`encodings.rotate`); only the frequencies theta_i change, and YaRN and LongRoPE multiply the rotated
q and k by their attention factor. The frequencies follow Hugging Face transformers'
`src/transformers/modeling_rope_utils.py` (the version with `rope_parameters` and yarn's
`truncate`; ROPE_INIT_FUNCTIONS "linear", "dynamic", "yarn", "llama3", "longrope"), edge cases
included (docs/parity.md: each compared with that code):
  linear   theta_i / s                                    (_compute_linear_scaling_rope_parameters)
  ntk      base b' = b s^(d/(d-2)), d = d_head            (the fixed form of the NTK-aware rule)
  dynamic  b' = b ((s L / L_orig) - (s - 1))^(d/(d-2)) with L = max(seq_len, L_orig), so plain
           RoPE up to L_orig                               (_compute_dynamic_ntk_parameters)
  yarn     per-pair ramp between theta_i (extrapolated) and theta_i / s (interpolated) over the
           pairs whose wavelength makes between beta_fast and beta_slow turns within L_orig; the
           correction range floor/ceil'd (`truncate`) and clipped to [0, d-1], ramp clamped to
           [0, 1] (+0.001 on a zero-width range); attention factor 0.1 ln(s) + 1, 1 when s <= 1
           (its get_mscale), or get_mscale(s, mscale) / get_mscale(s, mscale_all_dim) when both
           are set                                         (_compute_yarn_parameters)
  llama3   wavelength < L_orig/high_freq_factor kept, > L_orig/low_freq_factor divided by s,
           between: (1 - a) theta/s + a theta, a = (L_orig/wavelength - low)/(high - low)
                                                           (_compute_llama3_parameters)
  longrope theta_i / short_i for sequences up to L_orig, theta_i / long_i past it (per-pair
           factors, e.g. Phi-3's), attention factor sqrt(1 + ln s / ln L_orig), 1 when s <= 1
           (_compute_longrope_parameters; the switch: dynamic_rope_update)
Two choices where lgjax differs in form, not in value:
  * HF multiplies cos and sin by the attention factor (LlamaRotaryEmbedding.forward: `cos =
    emb.cos() * self.attention_scaling`), and both q and k are turned by them, so the q.k logit
    carries the factor squared. lgjax multiplies the rotated q and k by it: the same factor^2 on
    the logit (the kernel and the fast head carry factor^2).
  * yarn reads `factor` as given (HF's newest code does; an older one recomputed it as
    max_position_embeddings / original_max_position_embeddings, equal when those two agree).
  * dynamic: the frequencies are recomputed from the sequence's own length, seq_len = (position
    of its last token) + 1 (HF: max(position_ids) + 1), every call; HF also caches the largest
    length seen (a longer sequence's frequencies stay for a shorter one above L_orig), which a
    pure function does not. The kernel reads seq_len = 1 + the largest position it is given.
Static scalings apply in training and evaluation alike (as a model fine-tuned with them); a
study that trains plain RoPE and evaluates scaled can load the checkpoint with the scaled entry
(none of these has params of its own).

Partial rotary, two readings named apart (the unrotated pairs get frequency 0: the identity):
  prope         Barbero et al. 2025's p-RoPE ("Round and Round We Go! What makes Rotary
                Positional Encodings useful?"): of RoPE's frequencies theta_i = b^(-2i/d_head),
                keep the rope_angles = int(p d_head // 2) highest (i < rope_angles), the others 0;
                as the paper's apply_p_rope listing and HF's _compute_proportional_rope_parameters
                (`partial_rotary_factor` there, Gemma's "proportional" rope type)
  rope_partial  HF's `partial_rotary_factor` with the default rope type (GPT-NeoX, Phi,
                StableLM): rotate the first r = int(d_head f) dimensions of each head with
                frequencies computed over that width, b^(-2i/r), i < r/2; the rest unrotated
                (_compute_default_rope_parameters; the models slice q[..., :r])
  Both in lgjax's consecutive-pair layout (HF turns half-split halves; the same frequencies).

xPos (Sun et al. 2022, "A length-extrapolatable transformer"): RoPE's rotation, and the pair i of
a query at position n scaled by zeta_i^(n / scale_base), of a key at m by zeta_i^(-m / scale_base),
zeta_i = (2i/d + gamma) / (1 + gamma): the logit decays as zeta_i^((n - m)/scale_base). (The
reference torchscale code centres the positions, which cancels in q.k; here they are not.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from lgjax.encodings import (
    ENCODINGS,
    Encoding,
    d_head,
    float_dtype,
    rotary_kernel,
    rotate,
    rotation_tensor,
    static_rotary,
    validate_rotary,
)
from lgjax.errors import finite, require

# ---- options ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RopeLinearOptions:
    base: float = 1e4  # rotary base b: theta_i = b^(-2i/d_head) before scaling
    factor: float = 4.0  # s: every angle divided by s (position interpolation)


@dataclass(frozen=True)
class RopeNtkOptions:
    base: float = 1e4  # rotary base b, raised to b * s^(d_head/(d_head-2))
    factor: float = 4.0  # s: the NTK-aware context-extension factor


@dataclass(frozen=True)
class RopeDynamicOptions:
    base: float = 1e4  # rotary base b, raised with the sequence length past L_orig
    factor: float = 4.0  # s: b' = b ((s L / L_orig) - (s - 1))^(d_head/(d_head-2)) for L > L_orig
    original_max_position: int = 16  # L_orig: plain RoPE up to this sequence length


@dataclass(frozen=True)
class RopeYarnOptions:
    base: float = 1e4  # rotary base b: theta_i = b^(-2i/d_head) (extrapolated frequencies)
    factor: float = 4.0  # s: interpolated frequencies are theta_i / s
    original_max_position: int = 16  # L_orig: the length whose turns set the ramp
    beta_fast: float = 32.0  # pairs turning more than this many times within L_orig: theta_i kept
    beta_slow: float = 1.0  # pairs turning fewer times than this within L_orig: theta_i / s
    attention_factor: float = 0.0  # gain on rotated q and k; 0: from s, mscale and mscale_all_dim
    # with both > 0 (DeepSeek's configs), the default gain is m(mscale) / m(mscale_all_dim),
    # m(c) = 0.1 c ln(s) + 1 (1 if s <= 1); 0 (either): m(1) = 0.1 ln(s) + 1, HF's absent keys
    mscale: float = 0.0
    mscale_all_dim: float = 0.0
    truncate: bool = True  # floor/ceil the ramp's ends to whole pairs (HF's default)


@dataclass(frozen=True)
class RopeLlama3Options:
    base: float = 1e4  # rotary base b: theta_i = b^(-2i/d_head) before scaling
    factor: float = 8.0  # s: long wavelengths are divided by s (Llama 3.1 uses 8)
    original_max_position: int = 16  # L_orig: the wavelength thresholds are L_orig / factors
    low_freq_factor: float = 1.0  # wavelengths above L_orig / low_freq_factor: theta_i / s
    high_freq_factor: float = 4.0  # wavelengths below L_orig / high_freq_factor: theta_i kept


@dataclass(frozen=True)
class RopeLongropeOptions:
    base: float = 1e4  # rotary base b: theta_i = b^(-2i/d_head) before the per-pair factors
    factor: float = 4.0  # s: sets the default attention factor (HF: max_position / L_orig)
    original_max_position: int = 16  # L_orig: a sequence longer than this takes long_factor
    short_factor: tuple = ()  # per pair: theta_i / short_factor[i] up to L_orig; () = all 1
    long_factor: tuple = ()  # per pair: theta_i / long_factor[i] past L_orig; () = all 1
    attention_factor: float = 0.0  # gain on rotated q and k; 0 = sqrt(1 + ln s / ln L_orig)

    def __post_init__(self):
        # a config read back from JSON holds lists: tuples keep the options hashable (jit)
        for name in ("short_factor", "long_factor"):
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))


@dataclass(frozen=True)
class PRopeOptions:
    base: float = 1e4  # rotary base b: theta_i = b^(-2i/d_head)
    p: float = 0.75  # fraction of the frequencies kept, the highest (the paper's best, 0.75)


@dataclass(frozen=True)
class RopePartialOptions:
    base: float = 1e4  # rotary base b: theta_i = b^(-2i/r) over the rotary width r
    partial_rotary_factor: float = 0.5  # r = int(d_head * factor) leading dims rotated


@dataclass(frozen=True)
class XposOptions:
    base: float = 1e4  # rotary base: theta_i = base^(-2i/d_head)
    gamma: float = 0.4  # zeta_i = (2i/d_head + gamma) / (1 + gamma) (the paper's 0.4)
    scale_base: float = 512.0  # q at n scaled by zeta_i^(n/scale_base), k at m by its inverse


# ---- frequencies (float64 numpy: constants of the config) ---------------------------------


def _plain64(base: float, d: int) -> np.ndarray:
    return base ** (-2.0 * np.arange(d // 2) / d)


def prope_angles(cfg) -> int:
    """The number of rotated pairs: int(p d_head // 2), as the paper's listing and HF."""
    return int(cfg.enc.p * d_head(cfg) // 2)


def prope_freqs64(cfg) -> np.ndarray:
    """The rope_angles highest of RoPE's frequencies (over the full width), then zeros."""
    freqs = _plain64(cfg.enc.base, d_head(cfg))
    return np.where(np.arange(freqs.size) < prope_angles(cfg), freqs, 0.0)


def rotary_width(cfg) -> int:
    """HF's rotary dimension r = int(d_head * partial_rotary_factor)."""
    return int(d_head(cfg) * cfg.enc.partial_rotary_factor)


def partial_freqs64(cfg) -> np.ndarray:
    """b^(-2i/r) for the r/2 leading pairs, 0 (unrotated) for the rest of the head."""
    r = rotary_width(cfg)
    return np.concatenate([_plain64(cfg.enc.base, r), np.zeros((d_head(cfg) - r) // 2)])


def linear_freqs64(cfg) -> np.ndarray:
    return _plain64(cfg.enc.base, d_head(cfg)) / cfg.enc.factor


def ntk_freqs64(cfg) -> np.ndarray:
    d = d_head(cfg)
    return _plain64(cfg.enc.base * cfg.enc.factor ** (d / (d - 2)), d)


def dynamic_base(cfg, seq_len):
    """HF's dynamic NTK base for a sequence of seq_len tokens (seq_len may be traced)."""
    o, d = cfg.enc, d_head(cfg)
    L = jnp.maximum(seq_len, o.original_max_position)
    return o.base * ((o.factor * L / o.original_max_position) - (o.factor - 1)) ** (d / (d - 2))


def dynamic_freqs(cfg, seq_len):
    """theta_i for a sequence of seq_len tokens, in jax's float width (traced lengths too)."""
    d = d_head(cfg)
    base = dynamic_base(cfg, jnp.asarray(seq_len, float_dtype()))
    return base ** (-2.0 * jnp.arange(d // 2, dtype=float_dtype()) / d)


def longrope_factors64(cfg) -> tuple[np.ndarray, np.ndarray]:
    """(short, long) per-pair divisors, all 1 where not given."""
    F = d_head(cfg) // 2
    f = lambda v: np.asarray(v if len(v) else (1.0,) * F, np.float64)
    return f(cfg.enc.short_factor), f(cfg.enc.long_factor)


def longrope_freqs(cfg, seq_len):
    """theta_i / short_i up to L_orig, theta_i / long_i past it (seq_len may be traced)."""
    theta = _plain64(cfg.enc.base, d_head(cfg))
    short, long = longrope_factors64(cfg)
    return jnp.where(jnp.asarray(seq_len) > cfg.enc.original_max_position,
                     jnp.asarray(theta / long, float_dtype()),
                     jnp.asarray(theta / short, float_dtype()))


def longrope_attention_factor(cfg) -> float:
    o = cfg.enc
    if o.attention_factor:
        return float(o.attention_factor)
    if o.factor <= 1:
        return 1.0
    return math.sqrt(1 + math.log(o.factor) / math.log(o.original_max_position))


def yarn_attention_factor(cfg) -> float:
    o = cfg.enc
    if o.attention_factor:
        return float(o.attention_factor)
    m = lambda c: 1.0 if o.factor <= 1 else 0.1 * c * math.log(o.factor) + 1.0  # HF's get_mscale
    if o.mscale and o.mscale_all_dim:
        return float(m(o.mscale) / m(o.mscale_all_dim))
    return m(1.0)


def yarn_correction_range(cfg) -> tuple[float, float]:
    """The pair indices where the ramp starts and ends (HF's find_correction_range)."""
    o, d = cfg.enc, d_head(cfg)
    dim = lambda turns: (d * math.log(o.original_max_position / (turns * 2 * math.pi))
                         / (2 * math.log(o.base)))
    low, high = dim(o.beta_fast), dim(o.beta_slow)
    if o.truncate:
        low, high = math.floor(low), math.ceil(high)
    return max(low, 0), min(high, d - 1)


def yarn_freqs64(cfg) -> np.ndarray:
    o, d = cfg.enc, d_head(cfg)
    extrapolated = _plain64(o.base, d)
    interpolated = extrapolated / o.factor
    low, high = yarn_correction_range(cfg)
    if low == high:
        high += 0.001  # HF: prevent the singularity
    ramp = np.clip((np.arange(d // 2) - low) / (high - low), 0.0, 1.0)
    extrapolation_factor = 1.0 - ramp
    return interpolated * (1 - extrapolation_factor) + extrapolated * extrapolation_factor


def llama3_freqs64(cfg) -> np.ndarray:
    o = cfg.enc
    inv = _plain64(o.base, d_head(cfg))
    low_wavelen = o.original_max_position / o.low_freq_factor
    high_wavelen = o.original_max_position / o.high_freq_factor
    wavelen = 2 * math.pi / inv
    inv_llama = np.where(wavelen > low_wavelen, inv / o.factor, inv)
    smooth = (o.original_max_position / wavelen - o.low_freq_factor) / (
        o.high_freq_factor - o.low_freq_factor)
    smoothed = (1 - smooth) * inv_llama / o.factor + smooth * inv_llama
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return np.where(medium, smoothed, inv_llama)


# ---- dynamic NTK, LongRoPE: the frequencies follow the sequence length -------------------


def length_rotary(freqs, gain=lambda cfg: 1.0):
    """rotate, rotate_qk and kernel of RoPE with the frequencies freqs(cfg, seq_len) of a
    sequence of seq_len tokens, q and k multiplied by gain(cfg) after the rotation."""

    def scaled(x, cfg):
        g = gain(cfg)
        return x if g == 1.0 else x * g

    def rot(x_LxHxD, pos_L, cfg):
        """Alone (analysis, the contract lab), the sequence is taken to end at the last
        position."""
        return scaled(rotate(x_LxHxD, pos_L, freqs(cfg, jnp.max(pos_L) + 1)), cfg)

    def rot_qk(q_LxHxD, k_LxHxD, pos_L, length, cfg):
        """The sequence has `length` tokens (the rest is padding): seq_len = pos[length-1] + 1."""
        freqs_F = freqs(cfg, jnp.take(pos_L, length - 1) + 1)
        return (scaled(rotate(q_LxHxD, pos_L, freqs_F), cfg),
                scaled(rotate(k_LxHxD, pos_L, freqs_F), cfg))

    def kernel(params, q_pos, k_pos, cfg):
        q_pos, k_pos = jnp.asarray(q_pos), jnp.asarray(k_pos)
        freqs_F = freqs(cfg, jnp.maximum(q_pos.max(), k_pos.max()) + 1)
        return rotary_kernel(q_pos, k_pos, freqs_F, cfg.heads, gain(cfg))

    return rot, rot_qk, kernel


dynamic_rotate, dynamic_rotate_qk, dynamic_kernel = length_rotary(dynamic_freqs)
longrope_rotate, longrope_rotate_qk, longrope_kernel = length_rotary(
    longrope_freqs, longrope_attention_factor)


# ---- xPos ---------------------------------------------------------------------------------


def xpos_zeta64(cfg) -> np.ndarray:
    d = d_head(cfg)
    return (2.0 * np.arange(d // 2) / d + cfg.enc.gamma) / (1.0 + cfg.enc.gamma)


def xpos_scale(pos_L, cfg, sign: float):
    """zeta_i^(sign * pos / scale_base) per position and pair, repeated onto both members."""
    expo = sign * jnp.asarray(pos_L).astype(float_dtype())[:, None] / cfg.enc.scale_base
    scale_LxF = jnp.asarray(xpos_zeta64(cfg), float_dtype())[None, :] ** expo
    return jnp.repeat(scale_LxF, 2, axis=-1)[:, None, :]  # [L, 1, d_head]: x[2i], x[2i+1]


def _xpos_turn(x_LxHxD, pos_L, cfg, sign):
    freqs = jnp.asarray(_plain64(cfg.enc.base, d_head(cfg)), float_dtype())
    return rotate(x_LxHxD, pos_L, freqs) * xpos_scale(pos_L, cfg, sign)


def xpos_rotate(x_LxHxD, pos_L, cfg):
    """The query side (alone, e.g. in the analysis, x is taken as a query)."""
    return _xpos_turn(x_LxHxD, pos_L, cfg, 1.0)


def xpos_rotate_qk(q_LxHxD, k_LxHxD, pos_L, length, cfg):
    return _xpos_turn(q_LxHxD, pos_L, cfg, 1.0), _xpos_turn(k_LxHxD, pos_L, cfg, -1.0)


def xpos_kernel(params, q_pos, k_pos, cfg):
    """sum_i zeta_i^((n - m)/scale_base) cos((m - n) theta_i) for a query at n and key at m."""
    theta = jnp.asarray(_plain64(cfg.enc.base, d_head(cfg)), float_dtype())
    zeta = jnp.asarray(xpos_zeta64(cfg), float_dtype())
    return rotary_kernel(q_pos, k_pos, theta, cfg.heads,
                         pair_gain=lambda delta: zeta ** (-delta / cfg.enc.scale_base))


def xpos_fast_rotation(L, cfg):
    """RoPE's rotation per offset delta = m - n, scaled by zeta_i^(-delta/scale_base)."""
    delta = np.arange(L) - (L - 1)
    gain_LxF = xpos_zeta64(cfg)[None, :] ** (-delta[:, None] / cfg.enc.scale_base)
    rot = rotation_tensor(L, _plain64(cfg.enc.base, d_head(cfg)))
    return rot * gain_LxF[:, :, None, None].astype(np.float32)


# ---- validation ---------------------------------------------------------------------------


def _validate_factor(m) -> None:
    require(finite(m.enc.factor) and m.enc.factor > 0, "model.enc.factor",
            f"must be a finite number > 0 (the extension factor s; 1 = plain RoPE), got "
            f"{m.enc.factor}")


def _validate_original(m) -> None:
    L0 = m.enc.original_max_position
    require(isinstance(L0, int) and not isinstance(L0, bool) and L0 >= 1,
            "model.enc.original_max_position", f"must be an integer >= 1 (the length the "
            f"frequencies were trained for, e.g. train.lmax), got {L0!r}")


def _validate_ramp(o, low: str, high: str, low_note: str, high_note: str,
                   unit: str = "number") -> None:
    """The two ends of a ramp between frequency regimes (YaRN's betas, Llama 3's factors):
    finite, 0 < low < high."""
    lo, hi = getattr(o, low), getattr(o, high)
    require(finite(lo) and lo > 0, f"model.enc.{low}",
            f"must be a finite {unit} > 0 ({low_note}), got {lo}")
    require(finite(hi) and hi > lo, f"model.enc.{high}",
            f"must be a finite {unit} > {low} = {lo} ({high_note}), got {hi}")


def _validate_linear(m, t, max_len) -> None:
    validate_rotary(m)
    _validate_factor(m)


def _validate_ntk(m, t, max_len) -> None:
    validate_rotary(m, extra_dims=True)
    _validate_factor(m)


def _validate_dynamic(m, t, max_len) -> None:
    _validate_ntk(m, t, max_len)
    _validate_original(m)


def _validate_yarn(m, t, max_len) -> None:
    _validate_linear(m, t, max_len)
    _validate_original(m)
    o = m.enc
    _validate_ramp(o, "beta_slow", "beta_fast", "HF's default 1", "HF's default 32",
                   "number of turns")
    require(finite(o.attention_factor) and o.attention_factor >= 0, "model.enc.attention_factor",
            f"must be a finite gain > 0, or 0 for the default 0.1 ln(s) + 1; got "
            f"{o.attention_factor}")
    for name in ("mscale", "mscale_all_dim"):
        v = getattr(o, name)
        require(finite(v) and v >= 0, f"model.enc.{name}", f"must be a finite number >= 0 (0: "
                f"absent; the gain is m(mscale)/m(mscale_all_dim) when both are > 0), got {v}")
    require(isinstance(o.truncate, bool), "model.enc.truncate", "must be true or false")


def _validate_longrope(m, t, max_len) -> None:
    _validate_linear(m, t, max_len)
    _validate_original(m)
    o, F = m.enc, d_head(m) // 2
    require(o.original_max_position >= 2 or o.factor <= 1 or o.attention_factor,
            "model.enc.original_max_position", "must be >= 2: the default attention factor "
            "divides by ln(original_max_position)")
    for name in ("short_factor", "long_factor"):
        v = getattr(o, name)
        require(isinstance(v, tuple) and len(v) in (0, F) and all(finite(x) and x > 0 for x in v),
                f"model.enc.{name}", f"must be {F} finite numbers > 0 (one per rotary pair, "
                f"d_head/2 = {F}), or empty for all 1; got {v!r}")
    require(finite(o.attention_factor) and o.attention_factor >= 0, "model.enc.attention_factor",
            f"must be a finite gain > 0, or 0 for the default sqrt(1 + ln s / ln L_orig); got "
            f"{o.attention_factor}")


def _validate_llama3(m, t, max_len) -> None:
    _validate_linear(m, t, max_len)
    _validate_original(m)
    o = m.enc
    _validate_ramp(o, "low_freq_factor", "high_freq_factor", "Llama 3.1: 1", "Llama 3.1: 4")


def _validate_prope(m, t, max_len) -> None:
    validate_rotary(m)
    require(finite(m.enc.p) and 0 < m.enc.p <= 1, "model.enc.p",
            f"must be a number in (0, 1] (the fraction of frequencies kept), got {m.enc.p}")
    require(prope_angles(m) >= 1, "model.enc.p", f"keeps int(p * d_head // 2) = "
            f"{prope_angles(m)} frequencies at d_head = {d_head(m)}; raise p or the head width")


def _validate_partial(m, t, max_len) -> None:
    validate_rotary(m)
    f = m.enc.partial_rotary_factor
    require(finite(f) and 0 < f <= 1, "model.enc.partial_rotary_factor",
            f"must be a number in (0, 1] (the fraction of each head's dims rotated), got {f}")
    r = rotary_width(m)
    require(r >= 2 and r % 2 == 0, "model.enc.partial_rotary_factor", f"rotates "
            f"int(d_head * factor) = {r} dimensions at d_head = {d_head(m)}; it must be even and "
            ">= 2 (pairs are turned)")


def _validate_xpos(m, t, max_len) -> None:
    validate_rotary(m)
    o = m.enc
    require(finite(o.gamma) and o.gamma > 0, "model.enc.gamma",
            f"must be a finite number > 0 (zeta_0 = gamma/(1+gamma) must be > 0; the paper's "
            f"0.4), got {o.gamma}")
    require(finite(o.scale_base) and o.scale_base > 0, "model.enc.scale_base",
            f"must be a finite number > 0 (the paper's 512), got {o.scale_base}")


# ---- registry -----------------------------------------------------------------------------


def _static_entry(freqs64, options, validate, gain=lambda cfg: 1.0) -> Encoding:
    rot, kernel, fast_rotation = static_rotary(freqs64, gain)
    return Encoding("rotary", kernel, rotate=rot, validate=validate, options=options,
                    fast_rotation=fast_rotation)


_ENTRIES = {
    "rope_linear": _static_entry(linear_freqs64, RopeLinearOptions, _validate_linear),
    "rope_ntk": _static_entry(ntk_freqs64, RopeNtkOptions, _validate_ntk),
    "rope_yarn": _static_entry(yarn_freqs64, RopeYarnOptions, _validate_yarn,
                               gain=yarn_attention_factor),
    "rope_llama3": _static_entry(llama3_freqs64, RopeLlama3Options, _validate_llama3),
    "prope": _static_entry(prope_freqs64, PRopeOptions, _validate_prope),
    "rope_partial": _static_entry(partial_freqs64, RopePartialOptions, _validate_partial),
    # the frequencies depend on the sequence length: the fast head (one table for the batch)
    # does not apply, the general head does
    "rope_dynamic": Encoding("rotary", dynamic_kernel, rotate=dynamic_rotate,
                             rotate_qk=dynamic_rotate_qk, validate=_validate_dynamic,
                             options=RopeDynamicOptions, length_free=lambda cfg: False),
    "rope_longrope": Encoding("rotary", longrope_kernel, rotate=longrope_rotate,
                              rotate_qk=longrope_rotate_qk, validate=_validate_longrope,
                              options=RopeLongropeOptions, length_free=lambda cfg: False),
    "xpos": Encoding("rotary", xpos_kernel, rotate=xpos_rotate, rotate_qk=xpos_rotate_qk,
                     validate=_validate_xpos, options=XposOptions,
                     fast_rotation=xpos_fast_rotation),
}
for _name, _entry in _ENTRIES.items():
    ENCODINGS.register(_name, _entry)
