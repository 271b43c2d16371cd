"""The kernel a trained content-aware encoding learned, as the lab can read it: its positional
term averaged over the run's evaluation data.

A content-aware encoding (kind "content": CoPE, the forgetting gate, DAPE) has no
positional-only kernel: the term it adds to query i's logit for key j reads q, k, the content
logits or the token states. What it learned is still a function of (i, j) once the content is
averaged out. The lab reads, for the one-layer head, per sequence

    term_ij = logits_ij - q_i . k_j * logit_scale      (j <= i)

(the attention logits the encoding made, bias included, minus the content logits: every
encoding's positional term, whatever it reads), averaged over `sequences` evaluation sequences
of the run's task at one length (the seed's own evaluation stream, lgjax.keys EVAL), each
sequence at positions 0..L-1. Its four metrics are those of a data-averaged kernel, labelled so
on every table; `content_sd` (the spread over sequences of score(0, d), averaged over d) says
how far one sequence's term is from that average (0 for a term that reads no content).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from lgjax import keys, models, tasks
from lgjax.attention import attention_logits
from lgjax.config import RunConfig
from lgjax.encodings import content_view
from lgjax.studies.contract import scores as contracts

LABEL = ("data-averaged positional term (logits minus content logits, mean over {n} evaluation "
         "sequences of length {L} of the run's task; not a positional-only kernel)")


def length(test: int, shift: int) -> int:
    """The sequence length that holds every pair the lab scores: (0, d < test) and the pair
    (2, 7) shifted by `shift`."""
    return max(test, max(contracts.PAIR) + shift + 1)


def positional_term(params, tokens_L, cfg) -> jax.Array:
    """[H, L, L] one full sequence's positional term: the attention logits the model makes
    (`lgjax.attention.attention_logits`) minus the content logits (0 where key j > query i)."""
    L = tokens_L.shape[0]
    x_LxD = models.states(params, tokens_L, L, cfg)
    q_LxHxD, k_LxHxD, _ = models.project(params, tokens_L, L, cfg)
    view = content_view(q_LxHxD, k_LxHxD, x_LxD, jnp.arange(L), L, cfg)
    logits_HxLxL = attention_logits(q_LxHxD, k_LxHxD, L, params, cfg, None, x_LxD)
    return jnp.where(view.causal, logits_HxLxL - view.logits, 0.0)


def term_stats(params, rc: RunConfig, seed: int, L: int, sequences: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """(mean, sd) [H, L, L] of the positional term over `sequences` evaluation sequences of
    length L of seed `seed` (its EVAL stream)."""
    batch = tasks.sample_batch(rc.task, keys.stream(keys.seed_key(seed), keys.EVAL, L),
                               sequences, L, L, L)
    term_BxHxLxL = jax.jit(jax.vmap(lambda t: positional_term(params, t, rc.model)))(
        batch.tokens)
    term = np.asarray(term_BxHxLxL, np.float64)
    return term.mean(0), term.std(0)


def matrix_score(term_LxL: np.ndarray) -> contracts.Score:
    """A lab score read off a [L, L] matrix (query row, key column) at the causal mirror."""
    def score(i, j):
        i, j = np.broadcast_arrays(np.asarray(i), np.asarray(j))
        return term_LxL[np.maximum(i, j), np.minimum(i, j)]
    return score


def profiles(params, rc: RunConfig, seed: int, test: int, shift: int, sequences: int
             ) -> list[dict]:
    """Per head: the lab's profile of the data-averaged term, with its `content_sd`."""
    L = length(test, shift)
    mean_HxLxL, sd_HxLxL = term_stats(params, rc, seed, L, sequences)
    d = np.arange(1, test)
    return [contracts.profile(matrix_score(m), test, shift)
            | {"content_sd": float(sd[d, 0].mean())} for m, sd in zip(mean_HxLxL, sd_HxLxL)]
