"""The one-layer attention head (H heads, no MLP, no LayerNorm), written for one sequence.

Params are a plain dict pytree (so a seed axis stacks on every leaf):
  embed [m_in, d], wq/wk/wv [d, d] (x @ w, so the spec's W_Q is wq.T), readout [m_out, d],
  plus the encoding's own leaves.
`apply(params, tokens, length, cfg) -> (logits, attention)`:
  query="last": logits [m_out], attention [H, L] (over key positions of the query n = L-1);
  query="all":  logits [L, m_out], attention [H, L, L] (causal).
`apply` uses the exact fast form of `lgjax.fast` when one exists (query "last" and a length-free
encoding), otherwise the general form below; `head_path(cfg)` says which.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from lgjax import fast
from lgjax.attention import causal_attention
from lgjax.config import ModelConfig, RunConfig
from lgjax.encodings import ENCODINGS, heads_split
from lgjax.tasks import TASKS


def _transformer():
    # imported on first use: flax costs every head-only command ~0.2 s of import
    from lgjax import transformer
    return transformer


def vocab_sizes(cfg: RunConfig) -> tuple[int, int]:
    task = TASKS[cfg.task.name]
    return task.input_vocab(cfg.task), task.num_classes(cfg.task)


def init_params(key, cfg: RunConfig) -> dict:
    """Head: PyTorch-default init (N(0,1) tables, U(+-1/sqrt(fan_in)) projections)."""
    if cfg.model.arch == "transformer":
        return _transformer().init_params(key, cfg.model, *vocab_sizes(cfg))
    m = cfg.model
    m_in, m_out = vocab_sizes(cfg)
    k_emb, k_q, k_k, k_v, k_out, k_enc = jax.random.split(key, 6)
    bound = 1.0 / math.sqrt(m.d)
    uni = lambda k, shape: jax.random.uniform(k, shape, jnp.float32, -bound, bound)
    return {
        "embed": jax.random.normal(k_emb, (m_in, m.d), jnp.float32),
        "wq": uni(k_q, (m.d, m.d)),
        "wk": uni(k_k, (m.d, m.d)),
        "wv": uni(k_v, (m.d, m.d)),
        "readout": uni(k_out, (m_out, m.d)),
        **ENCODINGS[m.encoding].init(k_enc, m),
    }


def states(params, tokens_L, length, cfg: ModelConfig, pos_L=None):
    """The states [L, d] q, k and v are projected from: token embedding plus the encoding's."""
    enc = ENCODINGS[cfg.encoding]
    pos = jnp.arange(tokens_L.shape[0]) if pos_L is None else pos_L
    x_LxD = jax.nn.one_hot(tokens_L, params["embed"].shape[0]) @ params["embed"]
    return x_LxD + enc.embed(params, pos, length, cfg)


def project(params, tokens_L, length, cfg: ModelConfig, pos_L=None):
    """q, k, v per position [L, H, dh] with the encoding applied (rotation or addition), the
    tokens sitting at positions `pos_L` (None: 0..L-1; randomized positions pass others)."""
    enc = ENCODINGS[cfg.encoding]
    pos = jnp.arange(tokens_L.shape[0]) if pos_L is None else pos_L
    x_LxD = states(params, tokens_L, length, cfg, pos_L)
    q, k, v = (heads_split(x_LxD @ params[w], cfg) for w in ("wq", "wk", "wv"))
    return *enc.rotate_pair(q, k, pos, length, cfg), v


def general_apply(params, tokens_L, length, cfg: ModelConfig, pos_L=None):
    """Reference formulation: project every position, then attend (any query rows)."""
    L = tokens_L.shape[0]
    x_LxD = (states(params, tokens_L, length, cfg, pos_L)
             if ENCODINGS[cfg.encoding].content is not None else None)
    o_LxHxD, att_HxLxL = causal_attention(*project(params, tokens_L, length, cfg, pos_L), length,
                                          params, cfg, pos_L, x_LxD)
    logits_LxM = o_LxHxD.reshape(L, cfg.d) @ params["readout"].T
    if cfg.query == "last":
        return logits_LxM[length - 1], att_HxLxL[:, length - 1, :]
    return logits_LxM, att_HxLxL


def head_path(cfg: ModelConfig) -> str:
    """'fast:<kind>' when an exact fast form applies, 'general' or 'transformer' otherwise
    (`head_path_reason` says why not fast)."""
    if cfg.arch == "transformer":
        return "transformer"
    enc = ENCODINGS[cfg.encoding]
    if (cfg.query == "last" and enc.kind in fast.FAST_HEADS and enc.content is None
            and enc.length_free(cfg)):
        return f"fast:{enc.kind}"
    return "general"


def head_path_reason(cfg: ModelConfig) -> str:
    """One line: which head computes this model, and why not an exact fast form."""
    path = head_path(cfg)
    if path != "general":
        return path
    enc = ENCODINGS[cfg.encoding]
    if enc.content is not None:
        why = ("content-aware encoding: its logits read q, k or the token states, which the "
               "fast forms' per-offset tables do not hold")
    elif enc.kind not in fast.FAST_HEADS:
        why = f"no exact fast form for kind {enc.kind!r}"
    elif cfg.query != "last":
        why = "every query row is read (query=all); the fast forms compute the last row"
    else:
        why = "the encoding depends on the sequence length; the fast forms share one table"
    return f"general ({why})"


def make_apply(run_cfg: RunConfig, path: str | None = None, forward_only: bool = False):
    """A batched apply(params, tokens [B, L], lengths [B]) -> (logits, attention).

    Per-step tables (projected vocabulary, offset tables) are built once per call and shared
    by every sequence of the batch; the per-sequence part is vmapped. `forward_only`: the
    caller takes no gradient (evaluation), so a fast form may use the form that is faster
    without a backward pass (`fast.FORWARD_HEADS`).
    """
    cfg = run_cfg.model
    path = path or head_path(cfg)
    if path == "transformer":
        # query="last" reads one row: the last block computes that row alone, in training too
        return _transformer().make_apply(cfg, *vocab_sizes(run_cfg),
                                         query_row=cfg.query == "last")
    if path == "general":
        return jax.vmap(lambda p, t, n: general_apply(p, t, n, cfg), in_axes=(None, 0, 0))
    kind = path.split(":", 1)[1]
    return (fast.FORWARD_HEADS if forward_only else fast.FAST_HEADS)[kind](cfg)


def make_apply_at(run_cfg: RunConfig):
    """A batched apply(params, tokens [B, L], lengths [B], positions [B, L]) -> (logits,
    attention): every sequence's tokens sit at its own positions (increasing; randomized
    positions in training). The general head or the transformer; never a fast form, whose tables
    assume the positions 0..L-1."""
    cfg = run_cfg.model
    if cfg.arch == "transformer":
        return _transformer().make_apply_at(cfg, *vocab_sizes(run_cfg),
                                            query_row=cfg.query == "last")
    return jax.vmap(lambda p, t, n, pos: general_apply(p, t, n, cfg, pos),
                    in_axes=(None, 0, 0, 0))
