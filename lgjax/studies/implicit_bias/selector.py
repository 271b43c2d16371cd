"""The attention-SVM selector: the minimum-norm key-query parameter whose target logit beats
every other key's logit by at least 1 on every sequence (hard margin), solved in the dual.

Constraint a = (sequence, other key t): <Theta, Phi_a> >= 1, Phi_a = phi(n, tau) - phi(n, t),
with tau = n - K the target. Primal min 1/2 ||Theta||^2; dual
    max_{alpha >= 0} 1^T alpha - 1/2 alpha^T G alpha,   G_ab = <Phi_a, Phi_b>,
solved by FISTA with adaptive restart (accelerated projected gradient, step 1 / lambda_max(G)),
then exact primal-dual active-set rounds, to a stated tolerance (MARGIN_TOL, KKT_TOL);
Theta = sum alpha Phi.
Feature spaces:
  additive (APE): z = x + p, logit = z_n^T W z_t, Phi = z_n (z_tau - z_t)^T;
  rotary: logit = sum_i cos(delta theta_i) x_n^T A_i x_t + sin(delta theta_i) x_n^T B_i x_t, and
    G_ab = (x_n . x_n') sum_{p, q in {tau, t}} s_p s_q (x_p . x_q') g(delta_p - delta_q'),
    g(s) = sum_i cos(s theta_i), the rotary kernel (s_tau = +1, s_t = -1).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


class Constraints(NamedTuple):
    q_AxD: jax.Array  # query feature of each constraint's sequence
    pos_Ax2xD: jax.Array  # key features of (target, other)
    delta_Ax2: jax.Array  # offsets t - n of (target, other)
    valid_A: jax.Array  # padding constraints are inactive (alpha pinned at 0)


class Solution(NamedTuple):
    alpha_A: jax.Array
    min_margin: jax.Array  # min over valid constraints of <Theta, Phi_a> (>= 1 when feasible)
    duality_gap: jax.Array  # primal - dual objective
    kkt_residual: jax.Array  # max |min(alpha, grad)| over valid constraints
    steps: jax.Array  # FISTA steps taken (a multiple of CHECK_EVERY)
    rounds: jax.Array  # active-set rounds taken after FISTA


def constraints(z_LxD_fn, tokens_BxL, lengths_B, K: int) -> Constraints:
    """One constraint per (sequence, non-target key t <= n); z_LxD_fn(tokens, length) gives the
    features of every position of a sequence (embedding, plus positions for APE)."""

    def one(tokens, length):
        z = z_LxD_fn(tokens, length)
        L = tokens.shape[0]
        n, tau = length - 1, length - 1 - K
        t = jnp.arange(L)
        pair = jnp.stack([jnp.broadcast_to(z[tau], z.shape), z], 1)
        delta = jnp.stack([jnp.full((L,), tau - n), t - n], 1)
        return (jnp.broadcast_to(z[n], z.shape), pair, delta, (t <= n) & (t != tau))

    q, pair, delta, valid = jax.vmap(one)(tokens_BxL, lengths_B)
    flat = lambda x: x.reshape(-1, *x.shape[2:])
    return Constraints(flat(q), flat(pair), flat(delta), flat(valid))


def gram_additive(c: Constraints) -> jax.Array:
    diff = c.pos_Ax2xD[:, 0] - c.pos_Ax2xD[:, 1]
    return (c.q_AxD @ c.q_AxD.T) * (diff @ diff.T)


def gram_rotary(c: Constraints, freqs_F, L: int) -> jax.Array:
    """Rotary Gram matrix for sequences padded to L (offset differences lie in +-2L)."""
    sign = (1.0, -1.0)
    max_offset = 2 * L
    # offsets are integers in [-max_offset, max_offset]: tabulate g once, then index it
    shifts = jnp.arange(-max_offset, max_offset + 1, dtype=freqs_F.dtype)
    g_tab = jnp.cos(shifts[:, None] * freqs_F[None, :]).sum(-1)
    total = 0.0
    for p in range(2):
        for q in range(2):
            dots = c.pos_Ax2xD[:, p] @ c.pos_Ax2xD[:, q].T
            kern = g_tab[c.delta_Ax2[:, p][:, None] - c.delta_Ax2[:, q][None, :] + max_offset]
            total = total + sign[p] * sign[q] * dots * kern
    return (c.q_AxD @ c.q_AxD.T) * total


MARGIN_TOL = 1e-3  # converged: every valid margin >= 1 - MARGIN_TOL ...
KKT_TOL = 1e-4  # ... and max |min(alpha, grad)| <= KKT_TOL
CHECK_EVERY = 25  # FISTA steps between convergence checks (a check costs one step)
ACTIVE_SET_ROUNDS = 8  # most primal-dual active-set rounds after FISTA


def _report(G, alpha, valid_A, ones, steps=0, rounds=0) -> Solution:
    margins = G @ alpha
    grad = margins - ones
    quad = alpha @ margins
    gap = quad - ones @ alpha  # primal 1/2 q minus dual (1^T alpha - 1/2 q)
    return Solution(alpha, jnp.min(jnp.where(valid_A, margins, jnp.inf)), gap,
                    jnp.max(jnp.where(valid_A, jnp.abs(jnp.minimum(alpha, grad)), 0.0)),
                    jnp.asarray(steps), jnp.asarray(rounds))


def _converged(sol: Solution) -> jax.Array:
    return (sol.min_margin >= 1 - MARGIN_TOL) & (sol.kkt_residual <= KKT_TOL)


def _fista(G, valid_A, ones, iters: int):
    """FISTA with adaptive (gradient) restart, stopping early at the tolerance."""
    v = jnp.ones(G.shape[0]) * valid_A
    for _ in range(30):  # power iteration for the step size
        v = G @ v
        v = v / (jnp.linalg.norm(v) + 1e-30)
    step = 1.0 / (v @ G @ v + 1e-12)

    def fista_step(_, carry):
        a, y, t = carry
        a_new = jnp.maximum(y - step * (G @ y - ones), 0.0) * valid_A
        # restart the momentum when it points uphill (O'Donoghue & Candes 2015)
        restart = jnp.vdot(y - a_new, a_new - a) > 0
        t = jnp.where(restart, 1.0, t)
        t_new = (1 + jnp.sqrt(1 + 4 * t * t)) / 2
        y_new = jnp.where(restart, a_new, a_new + (t - 1) / t_new * (a_new - a))
        return a_new, y_new, t_new

    def cond(carry):
        (a, _, _), i = carry
        return (i < iters) & ~_converged(_report(G, a, valid_A, ones))

    def body(carry):
        state, i = carry
        return jax.lax.fori_loop(0, CHECK_EVERY, fista_step, state), i + CHECK_EVERY

    a0 = jnp.zeros(G.shape[0], G.dtype)
    (alpha, _, _), steps = jax.lax.while_loop(cond, body, ((a0, a0, jnp.ones((), G.dtype)), 0))
    return alpha, steps, step


def _active_set(G, valid_A, ones, alpha, scale):
    """Primal-dual active-set rounds (Hintermueller, Ito & Kunisch 2002) from FISTA's point:
    the support S = {alpha - scale * grad > 0}; solve G_SS alpha_S = 1 exactly, alpha = 0 off S.
    A round is kept only if it lowers the KKT residual (float32 solves of an ill-conditioned
    G can fail); the first round that does not ends the rounds."""
    eye = jnp.eye(G.shape[0], dtype=G.dtype)

    def cond(carry):
        alpha, r, improving = carry
        return (r < ACTIVE_SET_ROUNDS) & improving & ~_converged(
            _report(G, alpha, valid_A, ones))

    def body(carry):
        alpha, r, _ = carry
        S = (alpha - scale * (G @ alpha - ones) > 0) & valid_A
        both = S[:, None] & S[None, :]
        M = jnp.where(both, G, 0.0) + jnp.where(S, 0.0, 1.0) * eye
        a = jnp.maximum(jnp.linalg.solve(M, S.astype(G.dtype)), 0.0) * S
        better = jnp.all(jnp.isfinite(a)) & (_report(G, a, valid_A, ones).kkt_residual
                                             < _report(G, alpha, valid_A, ones).kkt_residual)
        return jnp.where(better, a, alpha), r + 1, better

    alpha, rounds, _ = jax.lax.while_loop(cond, body, (alpha, 0, jnp.bool_(True)))
    return alpha, rounds


def solve(G_AxA: jax.Array, valid_A: jax.Array, iters: int = 3000) -> Solution:
    """min 1/2 a^T G a - 1^T a over a >= 0 (invalid entries held at 0): FISTA with restart for
    at most `iters` steps, then exact active-set rounds, until min margin >= 1 - MARGIN_TOL and
    the KKT residual <= KKT_TOL (the Solution reports where it stopped either way)."""
    G = G_AxA * (valid_A[:, None] & valid_A[None, :])
    ones = valid_A.astype(G.dtype)
    alpha, steps, step = _fista(G, valid_A, ones, iters)
    alpha, rounds = _active_set(G, valid_A, ones, alpha, step)
    return _report(G, alpha, valid_A, ones, steps, rounds)


def selector_additive(c: Constraints, alpha_A) -> jax.Array:
    """W = sum_a alpha_a z_n (z_tau - z_t)^T: [D, D]."""
    diff = c.pos_Ax2xD[:, 0] - c.pos_Ax2xD[:, 1]
    return jnp.einsum("a,ad,ae->de", alpha_A, c.q_AxD, diff)


def selector_rotary(c: Constraints, alpha_A, freqs_F) -> jax.Array:
    """(A_i, B_i) per frequency: [2, F, D, D] (cos part, sin part)."""
    sign = jnp.array([1.0, -1.0])
    ang_Ax2xF = c.delta_Ax2[..., None].astype(freqs_F.dtype) * freqs_F
    out = []
    for trig in (jnp.cos, jnp.sin):
        w_Ax2xF = trig(ang_Ax2xF) * sign[None, :, None] * alpha_A[:, None, None]
        out.append(jnp.einsum("apf,ad,ape->fde", w_Ax2xF, c.q_AxD, c.pos_Ax2xD))
    return jnp.stack(out)


def trained_rotary(params, d_head_size: int) -> jax.Array:
    """The trained head's (A_i, B_i) = (Wq_i Wk_i^T, Wq_i M Wk_i^T), M the quarter turn: [2,F,D,D]
    (one head; Wq_i the two columns of block i, so the logit is x_n^T A_i x_t cos + ... sin)."""
    wq, wk = (params[w][:, :d_head_size].reshape(-1, d_head_size // 2, 2).transpose(1, 0, 2)
              for w in ("wq", "wk"))
    M = jnp.array([[0.0, -1.0], [1.0, 0.0]])
    return jnp.stack([jnp.einsum("fdi,fei->fde", wq, wk),
                      jnp.einsum("fdi,ij,fej->fde", wq, M, wk)])
