"""A user's content-aware encoding outside lgjax, with options, through the public path:
`lgjax --plugin example_content_plugin <command>` (this folder on PYTHONPATH).

soft_count: the logit of query i and key j minus `slope` times a soft count of the keys between
them (j, i] that the query matches, sigmoid(q_i . k_l / sqrt(d_head)): a recency penalty that
counts only what the query looks for (CoPE's idea, as a bias). It reads the content logits, so
it is kind "content": the general head and the transformer run it, the training-free
instruments say it has no positional-only kernel."""

from dataclasses import dataclass

import jax
import jax.numpy as jnp

import lgjax
from lgjax.encodings import Encoding, no_kernel
from lgjax.errors import require


@dataclass(frozen=True)
class SoftCountOptions:
    slope: float = 0.5  # logit penalty per matched key between the key and the query


def soft_count(params, view, cfg):
    """logits_ij - slope * sum_{l=j+1}^{i} sigmoid(logits_il), per head; reductions over keys
    read view.causal, so row i never reads a key after it."""
    gates_HxLxL = jnp.where(view.causal, jax.nn.sigmoid(view.logits), 0.0)
    from_j_HxLxL = jnp.flip(jnp.cumsum(jnp.flip(gates_HxLxL, -1), -1), -1)  # l in [j, i]
    return view.logits - cfg.enc.slope * (from_j_HxLxL - gates_HxLxL)


def _validate(m, t, max_len):
    require(m.enc.slope >= 0, "model.enc.slope", f"must be >= 0, got {m.enc.slope}")


lgjax.register_encoding("soft_count", Encoding("content", no_kernel, content=soft_count,
                                               validate=_validate, options=SoftCountOptions))
