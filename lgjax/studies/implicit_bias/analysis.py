"""Mechanism metrics of the one-layer head, as pure functions of one seed's params.

docs/studies/implicit-bias.md, the mechanism's measurements. Per head h (W_Q,h = wq[:, h].T in the
spec's notation):
  carrier fraction   ||E_v[W x_v]||^2 / E_v[||W x_v||^2], exact over the uniform vocabulary
  carrier profile    phi_c(delta) = m_Q^T R_delta m_K, delta = -(L-1)..0 (R = 1 unless rotary)
  alignment          cos(m_Q, R_{-K} m_K) and cos(m_Q, m_K)
  SV energy          sigma_1^2 / sum sigma_i^2 of W = W_Q^T W_K
  margin             mu = min_{delta != -K} phi(-K) - phi(delta), phi the content-averaged logit
                     profile (logit scaling included); bound 1 / (1 + (L-1) e^{-mu})
  APE rows           norms of table rows inside / beyond the trained range
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from lgjax import fast
from lgjax.config import ModelConfig
from lgjax.encodings import ENCODINGS, d_head, np_offsets


def carrier_fraction(x_NxD):
    """||mean row||^2 / mean ||row||^2 (1 for identical rows, 0 for zero-mean rows); numpy
    arrays stay numpy (array methods only)."""
    return (x_NxD.mean(0) ** 2).sum() / (x_NxD**2).sum(-1).mean()


def sv_energy(w_DxD: jax.Array) -> jax.Array:
    s = jnp.linalg.svd(w_DxD, compute_uv=False)
    return s[0] ** 2 / jnp.sum(s**2)


def _per_head(params, name: str, cfg: ModelConfig):
    """Projected vocabulary E W per head: [H, m, d_head] (content only, before rotation)."""
    x = params["embed"] @ params[name]
    return x.reshape(x.shape[0], cfg.heads, d_head(cfg)).transpose(1, 0, 2)


def _rotate_vec(v_D, delta, cfg: ModelConfig):
    """v rotated as a key at position delta would be (the encoding's own rotation)."""
    pos = jnp.reshape(jnp.asarray(delta, jnp.float32), (1,))
    return ENCODINGS[cfg.encoding].rotate(v_D[None, None, :], pos, cfg)[0, 0]


def _pair_logit(q_D, k_D, delta, L: int, cfg: ModelConfig):
    """q as the query at L-1 of a length-L sequence, k as the key at L-1+delta, turned the way
    a block turns them (rotate_pair: xPos scales the two sides apart, dynamic NTK reads L)."""
    pos = jnp.stack([L - 1 + delta, jnp.float32(L - 1)])  # the query last: seq_len = L
    two = lambda v: jnp.broadcast_to(v, (2, 1, v.shape[0]))
    q, k = ENCODINGS[cfg.encoding].rotate_pair(two(q_D), two(k_D), pos, 2, cfg)
    return q[1, 0] @ k[0, 0]


def carrier_profile(q_HxD, k_HxD, L: int, cfg: ModelConfig) -> jax.Array:
    """q_h^T R_delta k_h per head over delta = -(L-1)..0: [H, L] (R = 1 unless rotary)."""
    deltas = jnp.asarray(np_offsets(L), jnp.float32)
    if ENCODINGS[cfg.encoding].rotate_qk is None:  # one rotation by delta (RoPE and its kin)
        score = lambda q, k, dl: q @ _rotate_vec(k, dl, cfg)
    else:
        score = lambda q, k, dl: _pair_logit(q, k, dl, L, cfg)
    return jax.vmap(lambda q, k: jax.vmap(lambda dl: score(q, k, dl))(deltas))(q_HxD, k_HxD)


def cosine(a, b) -> jax.Array:
    a, b = a.ravel(), b.ravel()
    return a @ b / (jnp.linalg.norm(a) * jnp.linalg.norm(b))


# jitted: called op by op, each primitive of these small functions compiled on its own (a
# quick `mechanics` spent 9 s of its 37 s measuring in 13 calls of head_metrics)
@functools.partial(jax.jit, static_argnums=(1, 2, 3))
def head_metrics(params, cfg: ModelConfig, K: int, L: int) -> dict:
    """Content-only mechanism metrics per head; every value has a leading head axis."""
    q_HxMxD, k_HxMxD = _per_head(params, "wq", cfg), _per_head(params, "wk", cfg)
    m_q, m_k = q_HxMxD.mean(1), k_HxMxD.mean(1)
    profile = carrier_profile(m_q, m_k, L, cfg)
    dh = d_head(cfg)
    wq_HxDxK, wk_HxDxK = (params[w].reshape(cfg.d, cfg.heads, dh).transpose(1, 0, 2)
                          for w in ("wq", "wk"))
    w_HxDxD = jnp.einsum("hdk,hek->hde", wq_HxDxK, wk_HxDxK)  # W_Q^T W_K per head
    return {
        "carrier_key": jax.vmap(carrier_fraction)(k_HxMxD),
        "carrier_query": jax.vmap(carrier_fraction)(q_HxMxD),
        "carrier_profile": profile,  # [H, L] over delta = -(L-1)..0
        "carrier_argmax": jnp.argmax(profile, -1) - (L - 1),
        "align_shifted": jax.vmap(lambda a, b: cosine(a, _rotate_vec(b, -K, cfg)))(m_q, m_k),
        "align_plain": jax.vmap(cosine)(m_q, m_k),
        "sv_energy": jax.vmap(sv_energy)(w_HxDxD),
    }


def margin_undefined(cfg: ModelConfig) -> str | None:
    """None where the margin is defined; otherwise the one line that says why not."""
    if ENCODINGS[cfg.encoding].kind != "content":
        return None
    return (f"margin undefined for {cfg.encoding}: it is read off a logit table per (query "
            "token, key token, offset), and a content-aware encoding's logit of a key depends "
            "on the tokens between it and the query")


@functools.partial(jax.jit, static_argnums=(1, 2))
def logit_profile(params, cfg: ModelConfig, L: int) -> jax.Array:
    """Content-averaged logit of the last-position query vs each key position: [H, L]."""
    kind = ENCODINGS[cfg.encoding].kind
    if kind == "additive":
        tab_ZxZxH, _ = fast.additive_tables(params, L, cfg)
        m = tab_ZxZxH.shape[0] - L
        cc = tab_ZxZxH[:m, :m].mean((0, 1))
        cp = tab_ZxZxH[:m, m:].mean(0)  # [L, H]
        pc = tab_ZxZxH[m + L - 1, :m].mean(0)
        pp = tab_ZxZxH[m + L - 1, m:]
        return (cc + cp + pc + pp).T
    flat_NxH, val = fast.TABLES[kind](params, L, cfg)
    m = val.shape[1]
    return flat_NxH.reshape(m, m, L, -1).mean((0, 1)).T


@functools.partial(jax.jit, static_argnums=(1,))
def margin(profile_HxL: jax.Array, K: int) -> jax.Array:
    """mu = min over offsets other than -K of phi(-K) - phi(delta), per head."""
    L = profile_HxL.shape[-1]
    target = profile_HxL[:, L - 1 - K]
    others = jnp.where(jnp.arange(L) == L - 1 - K, jnp.inf, target[:, None] - profile_HxL)
    return others.min(-1)


def margin_bound(mu: jax.Array, L: int) -> jax.Array:
    return 1.0 / (1.0 + (L - 1) * jnp.exp(-mu))


def ape_row_norms(params, lmax: int) -> tuple[jax.Array, jax.Array]:
    """Mean L2 norm of APE rows inside [0, lmax) and beyond it."""
    norms = jnp.linalg.norm(params["ape"], axis=-1)
    inside = jnp.arange(norms.shape[0]) < lmax
    return (jnp.sum(norms * inside) / inside.sum(), jnp.sum(norms * ~inside) / (~inside).sum())


def decay_fit(lengths, peak_heights) -> dict:
    """Least squares 1/a*(L) = alpha + c (L-1): alpha the intercept (near 1), c the slope
    (the dilution rate), and R^2."""
    x = np.asarray(lengths, float) - 1
    y = 1.0 / np.asarray(peak_heights, float)
    c, alpha = np.polyfit(x, y, 1)
    resid = y - (alpha + c * x)
    r2 = 1 - resid @ resid / np.sum((y - y.mean()) ** 2)
    return {"alpha": float(alpha), "c": float(c), "r2": float(r2)}
