"""Exact fast forms of the last-query head, by how the encoding enters it.

The input vocabulary is tiny (m ~ 20) and the query sits at the last position, so every logit
is an entry of a small table built once per step from the parameters:

  relative kinds (rotary, bias, none), in offset coordinates delta = t - n:
      logit(u, v, delta) = (W_Q E_u)^T R_delta (W_K E_v) * scale + bias(-delta)
    a [m_q, m_k, H, L] table; a sequence reads entry (query token, key token, offset). R_delta
    is the encoding's `fast_rotation` (RoPE's rotation by default); a bias that reads the query
    position too (`pair_bias`, FIRE) is a second [n, delta, H] table read at the query's n.
  additive kind (absolute positions), with z = E_v + p_t split into a token part and a position
  part, logit = [E_u; p_n]-side row  x  [E_v; p_t]-side column of one [(m+L), (m+L), H] table.

The value path is a [m or m+L, m_out] table per head (U_h W_V,h z). Every entry is read through
a one-hot contraction (matmuls, no scatter in the backward pass). Nothing is approximated:
`tests/test_fast.py` checks these against `models.general_apply`.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from lgjax.attention import attend
from lgjax.config import ModelConfig
from lgjax.encodings import (
    ENCODINGS,
    d_head,
    heads_split,
    logit_scale,
    np_offsets,
    rope_freqs,
    rotation_tensor,
)


def _value_table(params, z_ZxD, cfg):
    """U_h W_V,h z for every row z: [H, Z, m_out]."""
    v_ZxHxD = heads_split(z_ZxD @ params["wv"], cfg)
    u_OxHxD = heads_split(params["readout"], cfg)
    return jnp.einsum("zhd,ohd->hzo", v_ZxHxD, u_OxHxD)


def rotary_content(q_UxHxFx2, k_VxHxFx2, L: int, cfg: ModelConfig):
    """(W_Q E_u)^T R_delta (W_K E_v) for every offset: [U, V, H, L]; R_delta is the encoding's
    own map between a query and a key delta apart (`fast_rotation`), RoPE's rotation by
    default."""
    fast_rotation = ENCODINGS[cfg.encoding].fast_rotation
    rot = fast_rotation(L, cfg) if fast_rotation else rotation_tensor(L, rope_freqs(cfg))
    k_VxHxLxFx2 = jnp.einsum("lfab,vhfb->vhlfa", rot, k_VxHxFx2)
    return jnp.einsum("uhfa,vhlfa->uvhl", q_UxHxFx2, k_VxHxLxFx2)


def plain_content(q_UxHxFx2, k_VxHxFx2, L: int, cfg: ModelConfig):
    """(W_Q E_u)^T (W_K E_v), the same at every offset: [U, V, H, 1]."""
    return jnp.einsum("uhfa,vhfa->uvh", q_UxHxFx2, k_VxHxFx2)[..., None]


def relative_tables(content, params, L: int, cfg: ModelConfig):
    """logit(u, v, delta) as a flat [(u, v, delta), H] table, and the value table."""
    enc = ENCODINGS[cfg.encoding]
    E = params["embed"]
    H, F = cfg.heads, d_head(cfg) // 2
    q_UxHxFx2 = (E @ params["wq"]).reshape(-1, H, F, 2)
    k_VxHxFx2 = (E @ params["wk"]).reshape(-1, H, F, 2)
    tab_UxVxHxL = content(q_UxHxFx2, k_VxHxFx2, L, cfg) * logit_scale(cfg)
    bias_LxH = enc.bias(params, jnp.asarray(-np_offsets(L)), cfg)
    tab_UxVxHxL = tab_UxVxHxL + jnp.broadcast_to(bias_LxH, (L, H)).T
    tab_UxVxHxL = jnp.broadcast_to(tab_UxVxHxL, (E.shape[0], E.shape[0], H, L))
    flat_NxH = tab_UxVxHxL.transpose(0, 1, 3, 2).reshape(-1, H)  # rows (u, v, delta)
    return flat_NxH, _value_table(params, E, cfg)


def query_bias_table(params, L: int, cfg: ModelConfig):
    """A bias that reads the query position too (`pair_bias`, FIRE): [n, delta, H] for every
    query n and offset column (key at n + delta); None for every other encoding."""
    enc = ENCODINGS[cfg.encoding]
    if enc.pair_bias is None:
        return None
    n_Nx1 = jnp.arange(L)[:, None]
    bias = enc.pair_bias(params, n_Nx1, n_Nx1 + jnp.asarray(np_offsets(L))[None, :], cfg)
    return jnp.broadcast_to(bias, (L, L, cfg.heads))


def relative_seq(tables, tokens_L, length, cfg: ModelConfig, query_bias_NxLxH=None):
    """Work in offset coordinates: column j holds the key at delta = j - (L-1)."""
    flat_NxH, val_HxVxO = tables
    L, V = tokens_L.shape[0], val_HxVxO.shape[1]
    pos = jnp.arange(L)
    n = length - 1
    src = n - (L - 1) + pos  # absolute position of the key in offset column j
    valid = src >= 0
    rel_tok = jnp.take(tokens_L, jnp.maximum(src, 0))
    # data-indexed read of the parameter table (its backward is a 4k-entry scatter-add,
    # measured cheaper on XLA CPU than the equivalent one-hot contraction)
    logits_HxL = jnp.take(flat_NxH, (tokens_L[n] * V + rel_tok) * L + pos, axis=0).T
    if query_bias_NxLxH is not None:  # the query's own row of the [n, delta, H] table
        logits_HxL = logits_HxL + jnp.take(query_bias_NxLxH, n, axis=0).T
    att_HxL = attend(logits_HxL, valid[None, :], cfg)
    onehot_LxV = jax.nn.one_hot(rel_tok, V) * valid[:, None]
    out_O = jnp.einsum("hv,hvo->o", att_HxL @ onehot_LxV, val_HxVxO)
    # back to absolute key positions for the caller: t <-> column t - n + L - 1
    col = pos - n + (L - 1)
    att_abs_HxL = jnp.where(col <= L - 1, jnp.take(att_HxL, jnp.minimum(col, L - 1), axis=1), 0.0)
    return out_O, att_abs_HxL


def additive_tables(params, L: int, cfg: ModelConfig):
    enc = ENCODINGS[cfg.encoding]
    pos = jnp.arange(L)
    z_ZxD = jnp.concatenate([params["embed"], enc.embed(params, pos, jnp.asarray(L), cfg)])
    q_ZxHxD, k_ZxHxD = (heads_split(z_ZxD @ params[w], cfg) for w in ("wq", "wk"))
    tab_ZxZxH = jnp.einsum("zhd,yhd->zyh", q_ZxHxD, k_ZxHxD) * logit_scale(cfg)
    return tab_ZxZxH, _value_table(params, z_ZxD, cfg)


def additive_seq(tables, tokens_L, length, cfg: ModelConfig, query_bias=None):
    """(query_bias: always None; an additive encoding has no pair_bias.)"""
    tab_ZxZxH, val_HxZxO = tables
    L = tokens_L.shape[0]
    m_in = tab_ZxZxH.shape[0] - L
    pos = jnp.arange(L)
    # one-hot over [tokens | positions]: z_t = E[s_t] + p_t is the sum of two table rows
    keyhot_LxZ = jnp.concatenate([jax.nn.one_hot(tokens_L, m_in), jnp.eye(L)], axis=1)
    queryhot_Z = keyhot_LxZ[length - 1]
    row_ZxH = jnp.einsum("z,zyh->yh", queryhot_Z, tab_ZxZxH)
    logits_HxL = (keyhot_LxZ @ row_ZxH).T
    att_HxL = attend(logits_HxL, (pos < length)[None, :], cfg)
    out_O = jnp.einsum("hl,lz,hzo->o", att_HxL, keyhot_LxZ, val_HxZxO)
    return out_O, att_HxL


def additive_seq_forward(tables, tokens_L, length, cfg: ModelConfig, query_bias=None):
    """`additive_seq` read by gathers, for callers that take no gradient (evaluation): the
    [L, Z] one-hot it contracts costs ~10x the gathers at evaluation sizes (4096 x 48: 30 ms vs
    3 ms here), while in training the gathers' scatter-add backward is the slower one (batch
    256 x 16: 0.58 vs 0.45 ms per value-and-grad). The logits of the attention are the same two
    table entries added (a one-hot contraction adds only zeros besides), so the attention is
    bitwise that of `additive_seq`; the output sums att x value in another order (2.4e-7 apart
    measured)."""
    tab_ZxZxH, val_HxZxO = tables
    L = tokens_L.shape[0]
    m_in = tab_ZxZxH.shape[0] - L
    pos = jnp.arange(L)
    n = length - 1
    row_ZxH = tab_ZxZxH[tokens_L[n]] + tab_ZxZxH[m_in + n]  # the query's z = E[s_n] + p_n
    logits_HxL = (jnp.take(row_ZxH, tokens_L, axis=0) + row_ZxH[m_in:]).T
    att_HxL = attend(logits_HxL, (pos < length)[None, :], cfg)
    v_HxLxO = jnp.take(val_HxZxO, tokens_L, axis=1) + val_HxZxO[:, m_in:]
    return jnp.einsum("hl,hlo->o", att_HxL, v_HxLxO), att_HxL


def _batched(make_tables, seq_fn):
    def factory(cfg: ModelConfig):
        def apply(params, tokens_BxL, lengths_B):
            L = tokens_BxL.shape[1]
            tables = make_tables(params, L, cfg)
            query_bias = query_bias_table(params, L, cfg)
            return jax.vmap(lambda t, n: seq_fn(tables, t, n, cfg, query_bias))(tokens_BxL,
                                                                                 lengths_B)

        return apply

    return factory


TABLES = {  # per kind of encoding: (params, L, cfg) -> (logit table, value table)
    "rotary": partial(relative_tables, rotary_content),
    "bias": partial(relative_tables, plain_content),
    "none": partial(relative_tables, plain_content),
    "additive": additive_tables,
}
FAST_HEADS = {kind: _batched(tables, additive_seq if kind == "additive" else relative_seq)
              for kind, tables in TABLES.items()}
# without a gradient (evaluation): the same, the additive kind read by gathers
FORWARD_HEADS = {**FAST_HEADS, "additive": _batched(additive_tables, additive_seq_forward)}
