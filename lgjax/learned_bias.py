"""Learned logit biases: Kerple (log and power kernels) and FIRE.

Kerple (Chi et al. 2022, "KERPLE: Kernelized Relative Positional Embedding for Length
Extrapolation"), per head h, distance |i - j|:
  kerple_log    -r1 log(1 + r2 |i - j|)        r1, r2 > 0
  kerple_power  -r1 |i - j|^r2                 r1 > 0, 0 < r2 < 2 (the paper's r2 in (0, 2])
Positivity by parametrisation, not by clamping: r = softplus(raw), and the power's exponent
r2 = 2 sigmoid(raw) (so it never reaches 2 itself). The reference code (chijames/KERPLE,
ParallelKerpleLog / ParallelKerplePower) draws r1, r2 uniformly per head (log: r1 ~ U(0, 2),
r2 ~ U(0, 1); power: r1 ~ U(0, 1), r2 ~ U(0, 2)) and clamps them at 0.01 (and r2 at 2); here every
head starts at those distributions' means, log (r1, r2) = (1, 0.5), power (0.5, 1) (options).
Both are shared by the transformer's blocks, as ALiBi and T5 here.

FIRE (Li et al. 2023, "Functional interpolation for relative positions improves long context
transformers"), query i, key j:
  b(i, j) = f_theta(psi(i - j) / psi(max(L_thr, i))),  psi(x) = log(c x + 1),
f_theta: 1 -> hidden (ReLU) -> H, with biases, PyTorch-default init (U(+-1/sqrt(fan_in))).
c = softplus(raw_c) > 0 and L_thr = softplus(raw_L) > 0 are learned (init c = 0.1, as the
reference implementations; L_thr = 8, this study's scale, where they use hundreds). i - j is read
as max(i - j, 0) (keys after the query are masked anyway) and the denominator as
max(psi(max(L_thr, i)), 1e-6) (a guard that acts only if c L_thr underflows): the argument is in
[0, 1]. Not translation invariant: b(i + s, j + s) = b(i, j) exactly when
psi(max(L_thr, i + s)) = psi(max(L_thr, i)), i.e. when i + s <= L_thr (for s >= 0). FIRE reads the
query position, so it is a `pair_bias`; every transformer block has its own f_theta, c, L_thr
(`per_layer`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from lgjax.encodings import ENCODINGS, Encoding, bias_kernel, float_dtype
from lgjax.errors import finite, require


def softplus_inverse(y: float) -> float:
    """raw with softplus(raw) = y > 0 (float64, stable for large y)."""
    return y + math.log(-math.expm1(-y))


def logit(p: float) -> float:
    return math.log(p) - math.log1p(-p)


# ---- Kerple -------------------------------------------------------------------------------


@dataclass(frozen=True)
class KerpleLogOptions:
    r1_init: float = 1.0  # r1 of every head at init (bias -r1 log(1 + r2 |i-j|)), > 0
    r2_init: float = 0.5  # r2 of every head at init, > 0


@dataclass(frozen=True)
class KerplePowerOptions:
    r1_init: float = 0.5  # r1 of every head at init (bias -r1 |i-j|^r2), > 0
    r2_init: float = 1.0  # r2 of every head at init, in (0, 2) (2 sigmoid(raw))


def kerple_init(r2_inverse):
    def init(key, cfg):
        o, H = cfg.enc, cfg.heads
        return {"kerple_r1": jnp.full((H,), softplus_inverse(o.r1_init), jnp.float32),
                "kerple_r2": jnp.full((H,), r2_inverse(o.r2_init), jnp.float32)}

    return init


def kerple_log_params(params):
    """(r1, r2) per head."""
    return jax.nn.softplus(params["kerple_r1"]), jax.nn.softplus(params["kerple_r2"])


def kerple_power_params(params):
    return jax.nn.softplus(params["kerple_r1"]), 2.0 * jax.nn.sigmoid(params["kerple_r2"])


def kerple_log_bias(params, dist, cfg):
    r1, r2 = kerple_log_params(params)
    d = jnp.abs(jnp.asarray(dist)).astype(float_dtype())[..., None]
    return -r1 * jnp.log1p(r2 * d)


def kerple_power_bias(params, dist, cfg):
    """-r1 |d|^r2, written exp(r2 log |d|) away from d = 0 (0 there): a finite gradient in r2
    at d = 0, where d^r2 has r2-derivative 0 * log 0."""
    r1, r2 = kerple_power_params(params)
    d = jnp.abs(jnp.asarray(dist)).astype(float_dtype())[..., None]
    power = jnp.where(d > 0, jnp.exp(r2 * jnp.log(jnp.where(d > 0, d, 1.0))), 0.0)
    return -r1 * power


def _validate_kerple(r2_max: float | None):
    def validate(m, t, max_len) -> None:
        o = m.enc
        require(finite(o.r1_init) and o.r1_init > 0, "model.enc.r1_init",
                f"must be a finite number > 0 (r1 is kept positive), got {o.r1_init}")
        if r2_max is None:
            require(finite(o.r2_init) and o.r2_init > 0, "model.enc.r2_init",
                    f"must be a finite number > 0 (r2 is kept positive), got {o.r2_init}")
        else:
            require(finite(o.r2_init) and 0 < o.r2_init < r2_max, "model.enc.r2_init",
                    f"must be a finite number in (0, {r2_max:g}) (the exponent is "
                    f"{r2_max:g} sigmoid(raw)), got {o.r2_init}")

    return validate


# ---- FIRE ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FireOptions:
    hidden: int = 32  # width of the MLP f_theta: 1 -> hidden (ReLU) -> one output per head
    c_init: float = 0.1  # c at init in psi(x) = log(c x + 1) (learned, softplus-parametrised)
    threshold_init: float = 8.0  # L_thr at init in psi(max(L_thr, i)) (learned, softplus)


def fire_init(key, cfg):
    o, H = cfg.enc, cfg.heads
    k1, k2, k3, k4 = jax.random.split(key, 4)
    uni = lambda k, shape, fan_in: jax.random.uniform(k, shape, jnp.float32, -1.0, 1.0) / (
        math.sqrt(fan_in))
    return {"fire": {
        "w1": uni(k1, (o.hidden,), 1), "b1": uni(k2, (o.hidden,), 1),
        "w2": uni(k3, (o.hidden, H), o.hidden), "b2": uni(k4, (H,), o.hidden),
        "c": jnp.float32(softplus_inverse(o.c_init)),
        "threshold": jnp.float32(softplus_inverse(o.threshold_init)),
    }}


def fire_constants(params):
    """(c, L_thr), both > 0."""
    p = params["fire"]
    return jax.nn.softplus(p["c"]), jax.nn.softplus(p["threshold"])


def fire_argument(params, q_pos, k_pos):
    """psi(max(i - j, 0)) / psi(max(L_thr, i)) in [0, 1], broadcast over q_pos, k_pos."""
    c, threshold = fire_constants(params)
    i = jnp.asarray(q_pos).astype(float_dtype())
    j = jnp.asarray(k_pos).astype(float_dtype())
    psi = lambda x: jnp.log1p(c * x)
    return psi(jnp.maximum(i - j, 0.0)) / jnp.maximum(psi(jnp.maximum(threshold, i)), 1e-6)


def fire_mlp(params, x):
    """f_theta(x) [..., H] for x [...]."""
    p = params["fire"]
    h = jax.nn.relu(x[..., None] * p["w1"] + p["b1"])
    return h @ p["w2"] + p["b2"]


def fire_bias(params, q_pos, k_pos, cfg):
    return fire_mlp(params, fire_argument(params, q_pos, k_pos))


def fire_kernel(params, q_pos, k_pos, cfg):
    return fire_bias(params, q_pos, k_pos, cfg)


def _validate_fire(m, t, max_len) -> None:
    o = m.enc
    require(isinstance(o.hidden, int) and not isinstance(o.hidden, bool) and o.hidden >= 1,
            "model.enc.hidden", f"must be an integer >= 1 (the MLP's width), got {o.hidden!r}")
    require(finite(o.c_init) and o.c_init > 0, "model.enc.c_init",
            f"must be a finite number > 0 (c is kept positive), got {o.c_init}")
    require(finite(o.threshold_init) and o.threshold_init > 0, "model.enc.threshold_init",
            f"must be a finite number > 0 (L_thr is kept positive), got {o.threshold_init}")


# ---- registry -----------------------------------------------------------------------------


_ENTRIES = {
    "kerple_log": Encoding("bias", bias_kernel(kerple_log_bias),
                           init=kerple_init(softplus_inverse), bias=kerple_log_bias,
                           validate=_validate_kerple(None), options=KerpleLogOptions),
    "kerple_power": Encoding("bias", bias_kernel(kerple_power_bias),
                             init=kerple_init(lambda r2: logit(r2 / 2.0)), bias=kerple_power_bias,
                             validate=_validate_kerple(2.0), options=KerplePowerOptions),
    "fire": Encoding("bias", fire_kernel, init=fire_init, pair_bias=fire_bias,
                     validate=_validate_fire, options=FireOptions, per_layer=True),
}
for _name, _entry in _ENTRIES.items():
    ENCODINGS.register(_name, _entry)
