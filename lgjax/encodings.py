"""Positional-encoding registry: each encoding is a few pure functions.

Every encoding supplies the same behaviours; each defaults to doing nothing, so the heads, the
transformer and the analyzer call all of them and never ask which ones an encoding has:
  embed(params, pos [L], length, cfg) -> [L, d]   added to the token embedding (default 0)
  rotate(x [L, H, dh], pos [L], cfg) -> x         applied to q and k (default identity)
  bias(params, dist [...], cfg) -> [..., H]       added to the logits, dist = n - t >= 0
                                                  (default 0)
  kernel(params, q_pos, k_pos, cfg) -> [..., H]   the positional-only logit (content left out)
  validate(model_cfg, train_cfg, max_len)         raises ConfigError before any compile
  horizon(model_cfg, train_cfg) -> int | None     first position whose kernel reads a parameter
                                                  never trained (None: defined everywhere)
Three optional behaviours, for encodings the ones above cannot state (None: the defaults, which
are exactly the calls above, so an encoding without them computes what it did before them):
  rotate_qk(q, k, pos [L], length, cfg) -> (q, k) q and k turned differently (xPos) or by the
                                                  sequence length (dynamic NTK); default
                                                  (rotate(q), rotate(k))
  pair_bias(params, q_pos, k_pos, cfg) -> [..., H] a bias that reads the query position too
                                                  (FIRE); default bias(params, q_pos - k_pos)
  fast_rotation(L, cfg) -> R [L, F, 2, 2]         the rotary fast head's map per offset (numpy);
                                                  default the rotation by delta * rope_freqs
One optional behaviour for encodings whose positional term reads content (kind "content": CoPE,
the forgetting gate, DAPE, lgjax.content):
  content(params, view: ContentView, cfg) -> logits [H, L, L]   the attention logits, replacing
                                                  the content logits view.logits (an additive
                                                  term is returned as view.logits + term);
                                                  default: view.logits unchanged
  The view holds, for one sequence, everything a causal computation of row i may read: q and k
  per head after projection (and rotation), the states x they were projected from, the content
  logits with every key after its query zeroed, the causal mask, positions and length. Causal by
  construction: the attention masks the returned logits after the call (keys j > i never reach
  the softmax), the logits it is given hold no entry j > i, and reductions over keys read
  `view.causal`; the plugin check verifies on a tiny model that no row's logits depend on later
  tokens. The exact fast heads never apply to this kind (the general head and the transformer
  do); it has no positional-only kernel (`kernel` raises, and the training-free instruments say
  so instead of reading it).
The call sites use `enc.rotate_pair(...)`, `enc.logit_bias(...)` and `enc.content_logits(...)`,
which dispatch to them.
`per_layer`: the transformer gives every block its own copy of the encoding's params (FIRE's
MLP); otherwise one copy is shared by the blocks.
`kind` says which behaviour carries the position ("additive", "rotary", "bias", "none",
"content"); the exact fast head (lgjax.fast), which has one form per positional-only kind, and the
training-free instruments (which read `kernel`, undefined for "content") read it.
An encoding's hyperparameters are its own `options`, a frozen dataclass with defaults (RoPE's
base and scale, the APE table's size, ...); `ModelConfig.enc` holds the chosen encoding's
options, and its behaviours read them as `cfg.enc.<option>`. Adding an encoding, knobs and all,
is one options dataclass and one entry in ENCODINGS; the heads and the trainer never read its
name.
An encoding defined outside the package registers at import of its own module:
  lgjax.register_encoding("my_bias", Encoding("bias", bias_kernel(my_bias), init=my_init,
                                              bias=my_bias))
and `lgjax --plugin my_pkg.my_module <command>` imports it first, checks the entry against this
interface and records the module with the runs (lgjax.plugins; tests/example_encoding.py is one).
The kernels follow jax's float width (`float_dtype`):
float32 in training, float64 under `jax.enable_x64(True)`, where the contract lab reads them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from lgjax.errors import ConfigError, finite, require
from lgjax.registry import Registry

# lgjax.config's ModelConfig and TrainConfig, as the behaviours' signatures name them (config
# imports this registry for the options' defaults, so this module imports nothing of config)
ModelConfig = TrainConfig = Any

Params = dict


def _no_embed(params, pos, length, cfg):
    return jnp.float32(0.0)


def _no_rotation(x, pos, cfg):
    return x


def _no_bias(params, dist, cfg):
    return jnp.float32(0.0)


class ContentView(NamedTuple):
    """What a content-aware encoding reads, for one sequence of L slots (H heads, d_head dh)."""
    q: jax.Array  # [L, H, dh] queries after projection (and the encoding's rotation)
    k: jax.Array  # [L, H, dh] keys, likewise
    x: jax.Array  # [L, d] the states q, k and v were projected from (the block's normed input)
    logits: jax.Array  # [H, L, L] content logits q_i.k_j * logit_scale, 0 where key j > query i
    causal: jax.Array  # [L, L] bool, key j <= query i: what row i may read
    pos: jax.Array  # [L] positions (randomized positions pass others than 0..L-1)
    length: jax.Array  # scalar int: the sequence's tokens are the first `length` slots


def content_view(q_LxHxD, k_LxHxD, x_LxD, pos_L, length, cfg: ModelConfig) -> ContentView:
    """The view of a sequence: the content logits computed once, future keys zeroed."""
    idx = jnp.arange(q_LxHxD.shape[0])
    causal_LxL = idx[None, :] <= idx[:, None]
    logits_HxLxL = jnp.einsum("qhd,khd->hqk", q_LxHxD, k_LxHxD) * logit_scale(cfg)
    return ContentView(q_LxHxD, k_LxHxD, x_LxD, jnp.where(causal_LxL, logits_HxLxL, 0.0),
                       causal_LxL, pos_L, length)


def no_kernel(params, q_pos, k_pos, cfg):
    """A content-aware encoding has no positional-only logit: its positional term reads q, k,
    the logits or the states, which a kernel of positions alone does not have."""
    raise ConfigError(f"encoding {cfg.encoding!r} is content-aware: it has no positional-only "
                      "kernel (its positional term reads queries, keys or token states)")


def kernel_undefined(name: str, enc) -> str | None:
    """None when the encoding has a positional-only kernel; otherwise the one line that says why
    not (what the training-free instruments print in place of its numbers)."""
    if enc.kind != "content":
        return None
    return (f"undefined for {name}: a content-aware encoding (kind content) has no "
            "positional-only kernel; its positional term reads queries, keys or token states")


@dataclass(frozen=True)
class NoOptions:
    """An encoding without hyperparameters."""


@dataclass(frozen=True)
class Encoding:
    """A positional encoding: the behaviours it supplies (each defaults to doing nothing), its
    positional-only `kernel` and its `options`.

    Register one with `lgjax.register_encoding(name, Encoding(kind, kernel, ...))`. `kind`
    names the behaviour that carries position: `"additive"` (`embed`), `"rotary"` (`rotate`),
    `"bias"` (`bias`), `"content"` (`content`) or `"none"`. The module docstring of
    `lgjax.encodings` gives every behaviour's signature.
    """

    # which behaviour carries position: "additive" | "rotary" | "bias" | "none" | "content"
    kind: str
    kernel: Callable  # (params, q_pos, k_pos, cfg) -> [..., H]: the positional-only logit
    init: Callable[[jax.Array, ModelConfig], Params] = lambda key, cfg: {}
    embed: Callable = _no_embed  # (params, pos [L], length, cfg) -> [L, d] added to the input
    rotate: Callable = _no_rotation  # (x [L, H, dh], pos [L], cfg) -> x, applied to q and k
    bias: Callable = _no_bias  # (params, dist int [...], cfg) -> [..., H] added to the logits
    validate: Callable[[ModelConfig, TrainConfig, int], None] = lambda m, t, n: None
    options: type = NoOptions  # its hyperparameters: a frozen dataclass with defaults
    # True when the embedding (or rotation) does not depend on the sequence length (the fast
    # head needs it; rope_dynamic's rotation does)
    length_free: Callable[[ModelConfig], bool] = lambda cfg: True
    # first position whose kernel reads a parameter never trained (None: defined everywhere)
    horizon: Callable[[ModelConfig, TrainConfig], int | None] = lambda m, t: None
    # (q, k, pos [L], length, cfg) -> (q, k); None: rotate(q), rotate(k)
    rotate_qk: Callable | None = None
    # (params, q_pos [...], k_pos [...], cfg) -> [..., H]; None: bias(params, q_pos - k_pos)
    pair_bias: Callable | None = None
    # rotary fast head: (L, cfg) -> R [L, F, 2, 2]; None: rotation_tensor(L, rope_freqs(cfg))
    fast_rotation: Callable | None = None
    per_layer: bool = False  # transformer: each block owns its params (False: shared by blocks)
    # a variant of the registered encoding of this name, other options as its defaults (`profile
    # --set`'s `rope[base=500.0]`): configs save that name and the options, so its runs read
    # back in any process, where the variant is not registered
    variant_of: str | None = None
    # (params, view: ContentView, cfg) -> logits [H, L, L]; None: view.logits (content alone)
    content: Callable | None = None
    # a content-aware encoding's principled positional restriction, where one exists:
    # (its options) -> (a positional-only encoding, that encoding's options, a label saying
    # which restriction); alpha_L is then read on it and labelled (None: alpha_L undefined)
    positional_restriction: Callable | None = None

    def rotate_pair(self, q, k, pos, length, cfg):
        """q and k [L, H, dh] of a sequence of `length` tokens at positions `pos`, turned."""
        if self.rotate_qk is None:
            return self.rotate(q, pos, cfg), self.rotate(k, pos, cfg)
        return self.rotate_qk(q, k, pos, length, cfg)

    def logit_bias(self, params, q_pos, k_pos, cfg):
        """The logit bias [..., H] between queries at q_pos and keys at k_pos (broadcast)."""
        if self.pair_bias is None:
            return self.bias(params, q_pos - k_pos, cfg)
        return self.pair_bias(params, q_pos, k_pos, cfg)

    def content_logits(self, params, view: ContentView, cfg):
        """The logits [H, L, L] of one sequence before the causal mask: the content logits, or
        those the content-aware behaviour makes of the view."""
        if self.content is None:
            return view.logits
        return self.content(params, view, cfg)


def float_dtype():
    """float64 under jax x64 (the contract lab reads kernels there), float32 otherwise (training:
    the values are exactly those of the float32 code)."""
    return jax.dtypes.canonicalize_dtype(np.float64)


def d_head(cfg: ModelConfig) -> int:
    return cfg.d // cfg.heads


def heads_split(x, cfg: ModelConfig):
    """[..., d] -> [..., H, d_head]."""
    return x.reshape(*x.shape[:-1], cfg.heads, d_head(cfg))


def logit_scale(cfg: ModelConfig) -> float:
    return 1.0 / (math.sqrt(d_head(cfg)) * cfg.temperature)


# ---- rotary -------------------------------------------------------------------------------

@dataclass(frozen=True)
class RopeOptions:
    base: float = 1e4  # rotary base: theta_i = base^(-2i/d_head)
    scale: float = 1.0  # rotary frequency scale: angles are pos * theta_i * scale


def rope_freqs64(cfg: ModelConfig) -> np.ndarray:
    """theta_i * scale in float64, a constant of the config (numpy, so it folds into the
    program)."""
    i = np.arange(d_head(cfg) // 2)
    return cfg.enc.scale * cfg.enc.base ** (-2.0 * i / d_head(cfg))


def rope_freqs(cfg: ModelConfig) -> np.ndarray:
    return rope_freqs64(cfg).astype(np.float32)


def rotate(x_LxHxD, pos_L, freqs_F):
    """Rotate consecutive pairs (x[2i], x[2i+1]) by pos * freqs[i]."""
    ang_LxF = pos_L[:, None].astype(float_dtype()) * freqs_F[None, :]
    cos, sin = jnp.cos(ang_LxF)[:, None, :], jnp.sin(ang_LxF)[:, None, :]
    x1, x2 = x_LxHxD[..., 0::2], x_LxHxD[..., 1::2]
    out = jnp.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)
    return out.reshape(x_LxHxD.shape)


def rotation_tensor(L: int, freqs_F: np.ndarray) -> np.ndarray:
    """R[l, f, a, b]: the 2x2 rotation by delta_l * theta_f, delta_l = l - (L-1) (a constant)."""
    ang_LxF = np_offsets(L)[:, None] * freqs_F.astype(np.float64)[None, :]
    c, s = np.cos(ang_LxF), np.sin(ang_LxF)
    return np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2).astype(np.float32)


def rotary_kernel(q_pos, k_pos, freqs_F, heads: int, gain: float = 1.0, pair_gain=None):
    """g(delta) = sum_i pair_gain_i(delta) cos(delta theta_i) * gain^2, delta = k_pos - q_pos: the
    content-free kernel of every rotary encoding, repeated per head. freqs_F: the theta_i;
    gain: on q and k after the rotation (the logit takes its square); pair_gain: a per-pair
    factor of delta [..., 1] (xPos's decay), None for none."""
    delta = (jnp.asarray(k_pos) - jnp.asarray(q_pos)).astype(float_dtype())[..., None]
    turns = jnp.cos(delta * freqs_F)
    g = (turns if pair_gain is None else pair_gain(delta) * turns).sum(-1)
    if gain != 1.0:
        g = g * gain**2
    return jnp.repeat(g[..., None], heads, axis=-1)


def static_rotary(freqs64, gain=lambda cfg: 1.0):
    """rotate, kernel and fast_rotation of a rotary encoding whose frequencies freqs64(cfg) are
    fixed by the config (RoPE, its fixed-frequency scalings), q and k multiplied by gain(cfg)
    after the rotation (the logit by its square)."""

    def rot(x_LxHxD, pos_L, cfg):
        out = rotate(x_LxHxD, pos_L, jnp.asarray(freqs64(cfg), float_dtype()))
        g = gain(cfg)
        return out if g == 1.0 else out * g

    def kernel(params, q_pos, k_pos, cfg):
        return rotary_kernel(q_pos, k_pos, jnp.asarray(freqs64(cfg), float_dtype()), cfg.heads,
                             gain(cfg))

    def fast_rotation(L, cfg):
        rot_LxFx2x2 = rotation_tensor(L, freqs64(cfg))
        g = gain(cfg)
        return rot_LxFx2x2 if g == 1.0 else rot_LxFx2x2 * np.float32(g * g)

    return rot, kernel, fast_rotation


# RoPE is the plain case: its fast head keeps the default rotation_tensor(L, rope_freqs(cfg))
rope_rotate, rope_kernel, _ = static_rotary(rope_freqs64)


def validate_rotary(m: ModelConfig, extra_dims: bool = False) -> None:
    """What every rotary encoding needs: pairs of dimensions to turn and a base > 1 (and, for
    the NTK exponent d_head/(d_head-2), `extra_dims`: d_head > 2)."""
    require(d_head(m) % 2 == 0, "model.d", f"rotary encodings turn pairs of dimensions but "
            f"d_head = d/heads = {d_head(m)} is odd; use an even width per head")
    if extra_dims:
        require(d_head(m) > 2, "model.d", f"the NTK exponent d_head/(d_head-2) needs d_head > 2, "
                f"got {d_head(m)}; use a wider head")
    require(finite(m.enc.base) and m.enc.base > 1.0, "model.enc.base",
            f"must be a finite number > 1, got {m.enc.base}")


def _validate_rope(m: ModelConfig, t: TrainConfig, max_len: int) -> None:
    validate_rotary(m)
    require(finite(m.enc.scale) and m.enc.scale > 0, "model.enc.scale",
            f"must be > 0 and finite (1: the plain rotary angles), got {m.enc.scale}")


# ---- additive -----------------------------------------------------------------------------

@dataclass(frozen=True)
class ApeOptions:
    size: int = 64  # rows in the learned absolute table (>= max eval length)
    oob: str = "error"  # past the trained range: error|untrained|clamp|interp|rescale
    train_max: int = 0  # trained lmax, required by clamp/interp/rescale


def ape_init(key, cfg: ModelConfig) -> Params:
    return {"ape": jax.random.normal(key, (cfg.enc.size, cfg.d), jnp.float32)}


def ape_positions(pos, length, cfg: ModelConfig):
    """Effective (possibly fractional) table index of each position under cfg.enc.oob."""
    last = cfg.enc.train_max - 1
    stretch = jnp.maximum(length - 1, 1).astype(float_dtype())
    fractional = pos.astype(float_dtype()) * jnp.minimum(1.0, last / stretch)
    return {
        "error": pos,  # validation keeps every position inside the trained range
        "untrained": pos,  # read rows past the trained range as they are (never trained)
        "clamp": jnp.minimum(pos, last),
        "rescale": jnp.round(fractional).astype(jnp.int32),
        "interp": fractional,
    }[cfg.enc.oob]


def ape_table(params, pos, length, cfg: ModelConfig):
    idx = ape_positions(pos, length, cfg)
    table = params["ape"]
    lo = jnp.floor(idx).astype(jnp.int32)
    frac = (idx - lo)[:, None]
    hi = jnp.minimum(lo + 1, table.shape[0] - 1)
    return table[lo] * (1 - frac) + table[hi] * frac


def trained_rows(t: TrainConfig) -> int:
    """Positions 0..n-1 seen in training: train.lmax, or M under randomized positions."""
    return max(t.lmax, t.random_positions)


def ape_horizon(m: ModelConfig, t: TrainConfig) -> int | None:
    """error/untrained read rows from train.lmax on, which never received gradient; clamp maps
    every position onto trained rows; interp/rescale map positions past the table beyond it."""
    n = trained_rows(t)
    return {"error": n, "untrained": n, "clamp": None}.get(m.enc.oob, m.enc.size)


def _validate_ape(m: ModelConfig, t: TrainConfig, max_len: int) -> None:
    """Rows past the trained range never get gradient: reading them is a choice, never silent."""
    a = m.enc
    require(a.oob in ("error", "untrained", "clamp", "interp", "rescale"), "model.enc.oob",
            "use error, untrained, clamp, interp or rescale")
    require(t.lmax <= a.size, "model.enc.size", f"the APE table has {a.size} rows but "
            f"training uses length {t.lmax}; raise its size")
    require(max_len <= a.size, "model.enc.size/eval lengths", f"evaluation length "
            f"{max_len} is beyond the APE table ({a.size} rows); raise its size or pick "
            "an inference-time fix (oob clamp|interp|rescale)")
    if a.oob == "error":
        rp = f", train.random_positions={t.random_positions}" if t.random_positions else ""
        require(max_len <= trained_rows(t), "model.enc.oob/eval lengths", f"evaluation length "
                f"{max_len} reads table rows past the trained range (train.lmax={t.lmax}{rp}), "
                "which never received gradient; set oob=untrained to measure them (as the "
                "implicit-bias study does) or clamp|interp|rescale")
    elif a.oob != "untrained":
        require(1 <= a.train_max <= t.lmax, "model.enc.train_max", f"set it to the trained "
                f"lmax (1..{t.lmax}) for clamp/interp/rescale; a larger value maps positions "
                "onto untrained rows")


@dataclass(frozen=True)
class SinusoidalOptions:
    base: float = 1e4  # sinusoidal encoding base


def sinusoidal_table(params, pos, length, cfg: ModelConfig):
    i = jnp.arange(cfg.d // 2, dtype=float_dtype())
    ang = pos[:, None].astype(float_dtype()) * cfg.enc.base ** (-2.0 * i / cfg.d)
    return jnp.stack([jnp.sin(ang), jnp.cos(ang)], axis=-1).reshape(pos.shape[0], -1)


def _validate_sinusoidal(m: ModelConfig, t: TrainConfig, max_len: int) -> None:
    require(m.d % 2 == 0, "model.d", f"sinusoidal pairs sin/cos but d={m.d} is odd; use even d")
    require(finite(m.enc.base) and m.enc.base > 0, "model.enc.base",
            f"must be > 0 and finite, got {m.enc.base}")


def additive_kernel(table_fn, length=lambda cfg: 1):
    """Positional-only score (W_Q p_n) . (W_K p_t) per head, in the logit scaling; the table
    is read as for a sequence of `length(cfg)` positions."""

    def kernel(params, q_pos, k_pos, cfg):
        q_pos, k_pos = jnp.broadcast_arrays(jnp.asarray(q_pos), jnp.asarray(k_pos))
        flat_q, flat_k = q_pos.reshape(-1), k_pos.reshape(-1)
        big = jnp.asarray(length(cfg))
        pq = table_fn(params, flat_q, big, cfg) @ params["wq"]
        pk = table_fn(params, flat_k, big, cfg) @ params["wk"]
        H = cfg.heads
        s = (pq.reshape(-1, H, d_head(cfg)) * pk.reshape(-1, H, d_head(cfg))).sum(-1)
        return (s * logit_scale(cfg)).reshape(*q_pos.shape, H)

    return kernel


# ---- logit biases -------------------------------------------------------------------------

@dataclass(frozen=True)
class AlibiOptions:
    slope: float = 1.0  # ALiBi slope s: bias -s * (n - t) ("fixed" slopes)
    # "fixed": `slope` on every head; "geometric": the reference slopes (Press et al.'s
    # get_slopes, Bloom's build_alibi_tensor); "evenly_spaced": 2^(-8h/H) for every H (not the
    # reference when H is not a power of two)
    slopes: str = "fixed"


def _pow2_slopes(n: int) -> np.ndarray:
    """2^(-8h/n), h = 1..n: the reference's slopes when n is a power of two."""
    return 2.0 ** (-8.0 * np.arange(1, n + 1) / n)


def reference_alibi_slopes(H: int) -> np.ndarray:
    """ALiBi's slopes for H heads as the reference code draws them: those of the nearest power
    of two P <= H, then every other slope of 2P (its 1st, 3rd, ...) for the H - P heads left,
    which keeps the P heads' slopes whatever heads are added (the reference's workaround for
    head counts the paper did not train)."""
    P = 1 << (H.bit_length() - 1)
    return np.concatenate([_pow2_slopes(P), _pow2_slopes(2 * P)[0::2][:H - P]])


def alibi_slopes(cfg: ModelConfig) -> np.ndarray:
    """Per-head slopes (float64): one fixed slope, the reference's geometric slopes, or
    2^(-8h/H) evenly spaced (equal to the reference when H is a power of two)."""
    if cfg.enc.slopes == "geometric":
        return reference_alibi_slopes(cfg.heads)
    if cfg.enc.slopes == "evenly_spaced":
        return _pow2_slopes(cfg.heads)
    return np.full(cfg.heads, cfg.enc.slope, np.float64)


def alibi_bias(params, dist, cfg):
    slopes = jnp.asarray(alibi_slopes(cfg), float_dtype())
    return -slopes * jnp.asarray(dist, float_dtype())[..., None]


def _validate_alibi(m: ModelConfig, t: TrainConfig, max_len: int) -> None:
    require(m.enc.slopes in ("fixed", "geometric", "evenly_spaced"), "model.enc.slopes",
            "use fixed (`slope` on every head), geometric (the reference ALiBi slopes) or "
            "evenly_spaced (2^(-8h/H), not the reference unless heads is a power of two)")
    require(m.enc.slopes != "fixed" or finite(m.enc.slope) and m.enc.slope >= 0,
            "model.enc.slope", f"must be >= 0 and finite (a recency penalty), got {m.enc.slope}")


@dataclass(frozen=True)
class T5Options:
    buckets: int = 32  # T5 bias: number of causal buckets
    max_distance: int = 128  # T5 bias: distance where the log buckets end


def t5_bucket(dist, cfg: ModelConfig):
    """Causal T5 bucketing of a non-negative distance (numpy or jax int arrays)."""
    n, exact = cfg.enc.buckets, cfg.enc.buckets // 2
    d = jnp.maximum(dist, 1).astype(jnp.float32)
    log_b = exact + jnp.log(d / exact) / math.log(cfg.enc.max_distance / exact) * (n - exact)
    log_b = jnp.minimum(log_b.astype(jnp.int32), n - 1)
    return jnp.where(dist < exact, dist, log_b)


def table_bias(n_rows, bucket_fn):
    """A learned scalar per (bucket, head), read through a one-hot (no scatter in backward)."""

    def init(key, cfg):
        return {"relbias": jnp.zeros((n_rows(cfg), cfg.heads), jnp.float32)}

    def bias(params, dist, cfg):
        onehot = jax.nn.one_hot(bucket_fn(dist, cfg), n_rows(cfg), dtype=jnp.float32)
        return onehot @ params["relbias"]

    return init, bias


@dataclass(frozen=True)
class RelClipOptions:
    clip: int = 16  # offsets beyond this share the last learned scalar


t5_init, t5_bias = table_bias(lambda c: c.enc.buckets, t5_bucket)
clip_init, clip_bias = table_bias(lambda c: c.enc.clip + 1, lambda d, c: jnp.minimum(d, c.enc.clip))


def bias_kernel(bias_fn):
    """The positional-only kernel of a bias encoding: `kernel(params, q_pos, k_pos, cfg)` is
    `bias_fn(params, q_pos - k_pos, cfg)`, a logit per head `[..., H]`."""
    def kernel(params, q_pos, k_pos, cfg):
        return bias_fn(params, jnp.asarray(q_pos) - jnp.asarray(k_pos), cfg)

    return kernel


def zero_kernel(params, q_pos, k_pos, cfg):
    shape = jnp.broadcast_shapes(jnp.shape(q_pos), jnp.shape(k_pos))
    return jnp.zeros((*shape, cfg.heads), jnp.float32)


def _validate_t5(m: ModelConfig, t: TrainConfig, max_len: int) -> None:
    require(m.enc.buckets >= 2, "model.enc.buckets", "need at least 2 buckets")
    require(m.enc.max_distance > m.enc.buckets // 2, "model.enc.max_distance",
            f"must exceed buckets/2 = {m.enc.buckets // 2} (where the log buckets start)")


def _validate_clip(m: ModelConfig, t: TrainConfig, max_len: int) -> None:
    require(m.enc.clip > 0, "model.enc.clip", "must be > 0")


ENCODINGS: Registry = Registry("encoding", {
    "ape": Encoding("additive", additive_kernel(ape_table, lambda c: c.enc.size), init=ape_init,
                    embed=ape_table, validate=_validate_ape, options=ApeOptions,
                    horizon=ape_horizon,
                    length_free=lambda c: c.enc.oob in ("error", "untrained", "clamp")),
    "sinusoidal": Encoding("additive", additive_kernel(sinusoidal_table),
                           embed=sinusoidal_table, validate=_validate_sinusoidal,
                           options=SinusoidalOptions),
    "rope": Encoding("rotary", rope_kernel, rotate=rope_rotate, validate=_validate_rope,
                     options=RopeOptions),
    "alibi": Encoding("bias", bias_kernel(alibi_bias), bias=alibi_bias,
                      validate=_validate_alibi, options=AlibiOptions),
    "t5": Encoding("bias", bias_kernel(t5_bias), init=t5_init, bias=t5_bias,
                   validate=_validate_t5, options=T5Options),
    "relclip": Encoding("bias", bias_kernel(clip_bias), init=clip_init, bias=clip_bias,
                        validate=_validate_clip, options=RelClipOptions),
    "nope": Encoding("none", zero_kernel),
})


def np_offsets(L: int) -> np.ndarray:
    """Offsets delta = t - n for a query at the last of L positions: -(L-1) .. 0."""
    return np.arange(L) - (L - 1)
