"""Content-aware positional encodings (kind "content"): the positional term reads q, k, the
content logits or the token states, through `Encoding.content` (lgjax.encodings.ContentView).

fox — the forgetting gate of the Forgetting Transformer (Lin et al. 2025, "Forgetting
  Transformer: Softmax Attention with a Forget Gate"; authors' code zhixuan-lin/
  forgetting-transformer@883f260c, src/forgetting_transformer/model/forgetting_transformer/
  modeling_forgetting_transformer.py (fgate_proj, logsigmoid) and src/forgetting_transformer/ops/
  forgetting_attention.py (the reference: log_lambda = cumsum(log_fgate), decay_bias =
  log_lambda_i - log_lambda_j)). Per token t and head h, f_t = sigmoid(w_h . x_t + b_h), x_t the
  state q, k, v are projected from; the logit bias of query i and key j <= i is
  sum_{l = j+1}^{i} log f_l (the query's own gate counted, the key's not): a data-dependent ALiBi.
  Init as the authors' _init_weights: w ~ N(0, 0.02^2), b = 0 (options). Positions are not read
  (the gates decay with token order), so randomized positions leave it unchanged.

cope — Contextual Position Encoding (Golovneva et al. 2024, "Contextual Position Encoding:
  Learning to Count What's Important"; authors' code facebookresearch/RAM@5420e201,
  projects/cope/src/cope/context_position.py, ContextPosSelfAttn with its defaults (gates from
  q and k, cope_nodiv off)). Gates g_ij = sigmoid(q_i . k_j / sqrt(d_head)) for j <= i,
  positions p_ij = sum_{j'=j}^{i} g_ij' (both ends), clamped to max_pos, and the logit
  (q_i . k_j + z_ij) / sqrt(d_head) with z_ij = q_i . e[floor p] (1 - w) + q_i . e[ceil p] w,
  w = p - floor p; e: [max_pos + 1, d_head], shared by the heads of a block, zeros at init (the
  authors'). This is the authors' code, where the positional term is divided by sqrt(d_head)
  with the content; the paper's listing (and the copy of it in chuanyang-zheng/DAPE's
  positional_embeddings.py) adds z unscaled to the already scaled logits. lgjax's logit scale
  1/(sqrt(d_head) temperature) stands for 1/sqrt(d_head) in both (equal at temperature 1).

dape — Data-Adaptive Positional Encoding (Zheng et al. 2024, "DAPE: Data-Adaptive Positional
  Encoding for Length Extrapolation"; authors' code chuanyang-Zheng/DAPE@5667d281,
  megatron/model/positional_embeddings.py, ParallelKerpleLog_C, one per attention layer).
  At each (i, j): a = the H heads' content logits, b = the H base biases (Kerple log or ALiBi),
  logit = a + b + W2 LeakyReLU(W1 [a; b] + c1) + c2 (2H in, `width` hidden, H out; LeakyReLU's
  slope 0.01, PyTorch-default init). The authors feed the MLP the logits of keys after the
  query too (masked after it); here they are zero: the MLP acts on each (i, j) alone, so the
  attention is the same.

Every entry has its params per transformer block (`per_layer`), as each attention layer of the
authors' models owns its gate projection, CoPE table or DAPE MLP.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from lgjax.encodings import (
    ENCODINGS,
    Encoding,
    RelClipOptions,
    alibi_bias,
    d_head,
    logit_scale,
    no_kernel,
)
from lgjax.errors import finite, require
from lgjax.learned_bias import kerple_init, kerple_log_bias, softplus_inverse


def _positive_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 1


# ---- fox ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FoxOptions:
    w_std: float = 0.02  # gate projection w ~ N(0, w_std^2) at init (the authors' 0.02)
    b_init: float = 0.0  # gate bias b at init (the authors' 0: every gate starts at 1/2)


def fox_init(key, cfg):
    o = cfg.enc
    return {"fox_w": o.w_std * jax.random.normal(key, (cfg.d, cfg.heads), jnp.float32),
            "fox_b": jnp.full((cfg.heads,), o.b_init, jnp.float32)}


def fox_decay(params, x_LxD, causal_LxL):
    """D[h, i, j] = sum_{l=j+1}^{i} log f_l,h for j <= i (0 elsewhere), f = sigmoid(w.x + b)."""
    log_f_LxH = jax.nn.log_sigmoid(x_LxD @ params["fox_w"] + params["fox_b"])
    cum_HxL = jnp.cumsum(log_f_LxH, axis=0).T
    return jnp.where(causal_LxL, cum_HxL[:, :, None] - cum_HxL[:, None, :], 0.0)


def fox_content(params, view, cfg):
    return view.logits + fox_decay(params, view.x, view.causal)


def _validate_fox(m, t, max_len) -> None:
    o = m.enc
    require(finite(o.w_std) and o.w_std >= 0, "model.enc.w_std",
            f"must be a finite number >= 0 (the gate projection's init scale), got {o.w_std}")
    require(finite(o.b_init), "model.enc.b_init", f"must be a finite number, got {o.b_init}")


# ---- cope ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CopeOptions:
    max_pos: int = 64  # the largest contextual position: p_ij is clamped to it (table rows + 1)


def cope_init(key, cfg):
    return {"cope_e": jnp.zeros((cfg.enc.max_pos + 1, d_head(cfg)), jnp.float32)}


def cope_positions(logits_HxLxL, causal_LxL, max_pos: int):
    """p_ij = sum_{j'=j}^{i} sigmoid(logit_ij'), clamped to max_pos (0 where j > i)."""
    gates_HxLxL = jnp.where(causal_LxL, jax.nn.sigmoid(logits_HxLxL), 0.0)
    p_HxLxL = jnp.flip(jnp.cumsum(jnp.flip(gates_HxLxL, -1), -1), -1)
    return jnp.minimum(p_HxLxL, max_pos)


def cope_term(q_LxHxD, e_PxD, p_HxLxL):
    """z_ij = q_i . e[p_ij], linear between the rows floor(p) and ceil(p)."""
    qe_HxLxP = jnp.einsum("qhd,pd->hqp", q_LxHxD, e_PxD)
    lo = jnp.floor(p_HxLxL)
    w = p_HxLxL - lo  # the gradient reaches the gates through w, as in the authors' code
    at = lambda idx: jnp.take_along_axis(qe_HxLxP, idx.astype(jnp.int32), axis=-1)
    return at(jnp.ceil(p_HxLxL)) * w + at(lo) * (1.0 - w)


def cope_content(params, view, cfg):
    p_HxLxL = cope_positions(view.logits, view.causal, cfg.enc.max_pos)
    return view.logits + cope_term(view.q, params["cope_e"], p_HxLxL) * logit_scale(cfg)


def cope_restriction(options: CopeOptions):
    """CoPE with every gate at 1 is a relative encoding: p_ij = min(i - j + 1, max_pos), and
    with the content removed q_i . e[p] is a free logit per value of p, i.e. per offset
    i - j < max_pos - 1 and one shared past it: relclip with clip = max_pos - 1 (NoPE when
    max_pos = 1: every offset reads p = 1)."""
    mp = options.max_pos
    label = (f"of CoPE with every gate at 1 (p_ij = min(i - j + 1, {mp}): a learned logit per "
             f"offset, " + (f"shared from {mp - 1} on; relclip with clip = {mp - 1})"
                            if mp > 1 else "one for all; nope)"))
    if mp > 1:
        return "relclip", RelClipOptions(clip=mp - 1), label
    return "nope", None, label


def _validate_cope(m, t, max_len) -> None:
    require(_positive_int(m.enc.max_pos), "model.enc.max_pos",
            f"must be an integer >= 1 (the largest contextual position), got {m.enc.max_pos!r}")


# ---- dape ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DapeOptions:
    base: str = "kerple_log"  # the base bias the MLP reads and adds: kerple_log | alibi
    width: int = 32  # the MLP's hidden width (the authors' mlp_width; the paper's D_DAPE = 32)
    r1_init: float = 1.0  # kerple_log base: r1 of every head at init (lgjax.learned_bias)
    r2_init: float = 0.5  # kerple_log base: r2 of every head at init
    slopes: str = "geometric"  # alibi base: fixed | geometric | evenly_spaced (lgjax.encodings)
    slope: float = 1.0  # alibi base with slopes=fixed: the slope of every head


def _torch_linear(key, n_in, n_out):
    """PyTorch's nn.Linear default: weight and bias U(+-1/sqrt(n_in))."""
    bound = 1.0 / math.sqrt(n_in)
    kw, kb = jax.random.split(key)
    return (jax.random.uniform(kw, (n_in, n_out), jnp.float32, -bound, bound),
            jax.random.uniform(kb, (n_out,), jnp.float32, -bound, bound))


def dape_init(key, cfg):
    H, W = cfg.heads, cfg.enc.width
    k1, k2 = jax.random.split(key)
    (w1, c1), (w2, c2) = _torch_linear(k1, 2 * H, W), _torch_linear(k2, W, H)
    base = kerple_init(softplus_inverse)(key, cfg) if cfg.enc.base == "kerple_log" else {}
    return {"dape_w1": w1, "dape_c1": c1, "dape_w2": w2, "dape_c2": c2, **base}


def dape_base(params, pos_L, causal_LxL, cfg):
    """The base bias [H, L, L] between the rows' positions (distance 0 after the query, as the
    authors' tril'd distance matrix)."""
    dist_LxL = jnp.where(causal_LxL, pos_L[:, None] - pos_L[None, :], 0)
    bias = kerple_log_bias if cfg.enc.base == "kerple_log" else alibi_bias
    return jnp.moveaxis(bias(params, dist_LxL, cfg), -1, 0)


def dape_mlp(params, a_HxLxL, b_HxLxL):
    """W2 LeakyReLU(W1 [a; b] + c1) + c2 at every (i, j): [H, L, L] and [H, L, L] -> [H, L, L]."""
    ab_LxLx2H = jnp.moveaxis(jnp.concatenate([a_HxLxL, b_HxLxL], axis=0), 0, -1)
    hidden = jax.nn.leaky_relu(ab_LxLx2H @ params["dape_w1"] + params["dape_c1"], 0.01)
    return jnp.moveaxis(hidden @ params["dape_w2"] + params["dape_c2"], -1, 0)


def dape_content(params, view, cfg):
    b_HxLxL = dape_base(params, view.pos, view.causal, cfg).astype(view.logits.dtype)
    return view.logits + b_HxLxL + dape_mlp(params, view.logits, b_HxLxL)


def _validate_dape(m, t, max_len) -> None:
    o = m.enc
    require(o.base in ("kerple_log", "alibi"), "model.enc.base",
            f"use kerple_log or alibi (the base bias the MLP reads), got {o.base!r}")
    require(_positive_int(o.width), "model.enc.width",
            f"must be an integer >= 1 (the MLP's hidden width), got {o.width!r}")
    # the base's own checks of the options it reads (r1_init, r2_init or slopes, slope)
    ENCODINGS[o.base].validate(m, t, max_len)


# ---- registry -----------------------------------------------------------------------------


_ENTRIES = {
    "fox": Encoding("content", no_kernel, init=fox_init, content=fox_content,
                    validate=_validate_fox, options=FoxOptions, per_layer=True),
    "cope": Encoding("content", no_kernel, init=cope_init, content=cope_content,
                     validate=_validate_cope, options=CopeOptions, per_layer=True,
                     positional_restriction=cope_restriction),
    "dape": Encoding("content", no_kernel, init=dape_init, content=dape_content,
                     validate=_validate_dape, options=DapeOptions, per_layer=True),
}
for _name, _entry in _ENTRIES.items():
    ENCODINGS.register(_name, _entry)
