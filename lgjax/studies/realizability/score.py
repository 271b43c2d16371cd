"""Positional realizability alpha_L: can one positional-only head, fitted at the training length
L0, carry a task's target pattern to a longer length L? (docs/studies/realizability.md)

A head is a kernel S_L[i, j] (query row i, key j <= i) that is linear in its free parameters w:
  additive (ape: learned absolute, sinusoidal, NoPE)  S = Phi_L W Phi_L^T
  RoPE        S[i, j] = sum_k a_k cos((j - i) theta_k) + b_k sin((j - i) theta_k)
  ALiBi       S[i, j] = -s (i - j),  s >= 0
Selection at L0 (one per call, each for one task and one frequency setting; vmap adds the axes):
  reference  zero init, Adam (lr 0.1, coupled weight decay 1e-4), exactly 400 full-batch steps of
             the mean causal cross-entropy over the scored rows (the pinned recipe)
  lbfgs      the same objective, mean CE + wd/2 ||w||^2, to convergence with L-BFGS
  min_norm   the minimum-norm least-squares fit of S onto the 0/1 target pattern (causal entries)
  margin     the wd -> 0 limit: min ||w|| s.t. S[i, t(i)] - S[i, j] >= 1, solved exactly as a
             least-distance program by NNLS (FISTA on the dual, as in the implicit-bias
             selector, needed 1e4+ iterations on the ill-conditioned sinusoidal Gram matrices)
The reference path runs in each head's own parameters (Adam is not rotation invariant), one
program per shape family; the ablations are optima and run in float64 (`ablations`).
Transfer: the same w on length L; S_L's top-left L0 x L0 block is S_L0 (every kernel is a
function of the two positions alone), so under the causal mask old rows keep their argmax and
alpha_L scores the new rows i in [L0, L) only: a hit is a strict argmax at t(i), a key within
`tie` of the target's score counts as a miss.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import optax.tree_utils as otu

from lgjax.config import ConfigError, TaskConfig
from lgjax.tasks import TASKS

# ---- feature maps --------------------------------------------------------------------------


def frequencies(num: int, base: float = 1e4, scale: float = 1.0) -> np.ndarray:
    """theta_k = scale * base^(-k/num), k = 0..num-1 (float64; jnp.asarray casts it to the
    working precision: float32, or float64 inside jax.enable_x64)."""
    return scale * base ** (-np.arange(num) / num)


def sinusoidal_features(L: int, theta_F, size: int) -> jax.Array:
    """[L, 2 num]: (sin(i theta_k), cos(i theta_k))."""
    ang_LxF = jnp.arange(L, dtype=theta_F.dtype)[:, None] * theta_F[None, :]
    return jnp.concatenate([jnp.sin(ang_LxF), jnp.cos(ang_LxF)], axis=1)


def learned_features(L: int, theta_F, size: int) -> jax.Array:
    """[L, L0] one-hot rows; a position past the table (>= L0 = size) takes the last row."""
    return jax.nn.one_hot(jnp.minimum(jnp.arange(L), size - 1), size, dtype=theta_F.dtype)


def constant_features(L: int, theta_F, size: int) -> jax.Array:
    return jnp.ones((L, 1), theta_F.dtype)


# ---- positional-only heads -----------------------------------------------------------------


def additive(features: Callable) -> Callable:
    def kernel(W, L: int, theta_F):
        phi_LxD = features(L, theta_F, W.shape[0])
        return phi_LxD @ W @ phi_LxD.T
    return kernel


def _offsets(L: int, dtype) -> jax.Array:
    pos = jnp.arange(L)
    return (pos[None, :] - pos[:, None]).astype(dtype)  # j - i


def rope_kernel(ab_2xF, L: int, theta_F):
    ang_LxLxF = _offsets(L, theta_F.dtype)[..., None] * theta_F
    return jnp.cos(ang_LxLxF) @ ab_2xF[0] + jnp.sin(ang_LxLxF) @ ab_2xF[1]


def alibi_kernel(s_1, L: int, theta_F):
    return s_1[0] * _offsets(L, theta_F.dtype)  # -s (i - j)


class Head(NamedTuple):
    shape: Callable[[int, int], tuple[int, ...]]  # (num, L0) -> shape of the free parameters
    kernel: Callable  # (w, L, theta_F) -> S [L, L]
    nonneg: bool = False  # parameters constrained to >= 0 (the ALiBi slope)
    frequencies: bool = False  # the feature map reads theta (num, base and scale sweeps apply)


HEADS: dict[str, Head] = {
    "ape": Head(lambda num, L0: (L0, L0), additive(learned_features)),
    "sinusoidal": Head(lambda num, L0: (2 * num, 2 * num), additive(sinusoidal_features),
                       frequencies=True),
    "rope": Head(lambda num, L0: (2, num), rope_kernel, frequencies=True),
    "alibi": Head(lambda num, L0: (1,), alibi_kernel, nonneg=True),
    "nope": Head(lambda num, L0: (1, 1), additive(constant_features)),
}


def project(head: Head, w):
    """Onto the feasible set. ALiBi has one parameter: the constrained minimiser of a convex
    objective in one variable is the projection of the unconstrained one, so projecting the
    L-BFGS and least-squares solutions is exact (the Adam path is projected every step)."""
    return jnp.maximum(w, 0.0) if head.nonneg else w


# ---- tasks as target rules -----------------------------------------------------------------

# the study's ten tasks (its trained grid and alpha_L both): "skip-k" reads i-k, "pos-k" slot k
TASK_NAMES = ("prev", "skip-2", "skip-3", "skip-5", "copy", "reverse", "first", "pos-2", "pos-5",
              "induction")
_PARAM = {"skip": "offset", "pos": "slot"}  # "skip-3" -> TaskConfig.of("skip", offset=3)


def task_config(name: str, vocab: int = TaskConfig.vocab) -> TaskConfig:
    base, _, k = name.partition("-")
    if base not in TASKS or (k and (base not in _PARAM or not k.isdigit())):
        raise ConfigError(f"--tasks: unknown task {name!r}; use a name in {sorted(TASKS)} or "
                          f"{'/'.join(f'{b}-k' for b in _PARAM)} with an integer k >= 0")
    return TaskConfig.of(base, vocab=vocab, **({_PARAM[base]: int(k)} if k else {}))


def min_length(name: str) -> int:
    cfg = task_config(name)
    return TASKS[cfg.name].min_length(cfg)


def positional(name: str) -> bool:
    """False for content-dependent tasks (induction): alpha_L := 0 by definition."""
    return TASKS[task_config(name).name].rule is not None


def targets(name: str, length: int) -> np.ndarray:
    cfg = task_config(name)
    return TASKS[cfg.name].targets(length, cfg)


def row_sets(name: str, L0: int, lengths, Lmax: int) -> np.ndarray:
    """int [1 + len(lengths), Lmax], -1 = not scored: the rows i < L0 of length L0 (the in-range
    accuracy), then per L the new rows i in [L0, L) of length L."""
    pad = lambda t: np.pad(t, (0, Lmax - len(t)), constant_values=-1)
    new = [np.where(np.arange(L) >= L0, targets(name, L), -1) for L in lengths]
    return np.stack([pad(t) for t in (targets(name, L0), *new)])


# ---- objective and scoring -----------------------------------------------------------------


def causal_logits(S_LxL) -> jax.Array:
    causal = jnp.tril(jnp.ones(S_LxL.shape, bool))  # keys j <= i
    return jnp.where(causal, S_LxL, -jnp.inf)


def mean_ce(S_LxL, t_L) -> jax.Array:
    """Mean over scored rows of -log softmax_{j <= i}(S[i])[t(i)] (no temperature)."""
    scored = t_L >= 0
    lse = jax.nn.logsumexp(causal_logits(S_LxL), axis=1)
    s_t = jnp.take_along_axis(S_LxL, jnp.maximum(t_L, 0)[:, None], axis=1)[:, 0]
    return jnp.sum(jnp.where(scored, lse - s_t, 0.0)) / jnp.maximum(jnp.sum(scored), 1)


def hits(S_LxL, t_L, tie: float) -> jax.Array:
    """bool [L]: row i's strict argmax over j <= i is t(i), with a margin over `tie` (ties miss)."""
    t = jnp.maximum(t_L, 0)
    others = jnp.where(jnp.arange(len(t))[None, :] == t[:, None], -jnp.inf, causal_logits(S_LxL))
    s_t = jnp.take_along_axis(S_LxL, t[:, None], axis=1)[:, 0]
    return (t_L >= 0) & (s_t > jnp.max(others, axis=1) + tie)


def fractions(S_LxL, rows_RxL, tie: float) -> jax.Array:
    """[R]: the fraction of each row set's scored rows that are hits."""
    win = jax.vmap(lambda t: hits(S_LxL, t, tie))(rows_RxL)
    return jnp.sum(win, 1) / jnp.maximum(jnp.sum(rows_RxL >= 0, 1), 1)


# ---- the selections: each fits one task at L0 ----------------------------------------------
# kernel0(w) -> S_L0 is the head at L0 (its own kernel, or B0 @ u in row-space coordinates);
# proj maps onto the feasible set.


@dataclass(frozen=True)
class Recipe:
    lr: float = 0.1  # reference Adam learning rate
    weight_decay: float = 1e-4  # coupled (torch-style) decay; lbfgs minimises CE + wd/2 |w|^2
    steps: int = 400  # reference Adam steps, no convergence test
    lbfgs_tol: float = 1e-8  # L-BFGS (float64) stops when the gradient 2-norm is below this
    lbfgs_iters: int = 5000  # ... or after this many iterations
    rcond: float = 1e-6  # min-norm fit: singular values below rcond * largest count as zero
    rtol: float = 1e-12  # row-space basis: singular values below rtol * largest are rounding
    tie: float = 1e-6  # a key within this of the target's score makes the row a miss


def reference_optimizer(r: Recipe) -> optax.GradientTransformation:
    """torch's Adam(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=wd): the gradient g + wd w
    (that of CE + wd/2 |w|^2) enters the moments; not AdamW's decoupled decay."""
    return optax.chain(optax.add_decayed_weights(r.weight_decay),
                       optax.scale_by_adam(b1=0.9, b2=0.999, eps=1e-8), optax.scale(-r.lr))


def fit_reference(kernel0: Callable, w0, proj: Callable, t_L, r: Recipe):
    """(w, ce [steps + 1]): the pinned early-stopped Adam path from w0 = 0."""
    loss = lambda w: mean_ce(kernel0(w), t_L)
    opt = reference_optimizer(r)

    def step(carry, _):
        w, state = carry
        ce, g = jax.value_and_grad(loss)(w)
        u, state = opt.update(g, state, w)
        return (proj(optax.apply_updates(w, u)), state), ce

    (w, _), ce = jax.lax.scan(step, (w0, opt.init(w0)), None, length=r.steps)
    return w, jnp.append(ce, loss(w))


def fit_lbfgs(kernel0: Callable, w0, proj: Callable, t_L, r: Recipe):
    """(w, gradient norm at the end, iterations): mean CE + wd/2 |w|^2 to convergence."""
    obj = lambda w: mean_ce(kernel0(w), t_L) + 0.5 * r.weight_decay * jnp.sum(w * w)
    opt = optax.lbfgs()
    value_and_grad = optax.value_and_grad_from_state(obj)

    def body(carry):
        w, state = carry
        v, g = value_and_grad(w, state=state)
        u, state = opt.update(g, state, w, value=v, grad=g, value_fn=obj)
        return optax.apply_updates(w, u), state

    def going(carry):
        k = otu.tree_get(carry[1], "count")
        gnorm = otu.tree_norm(otu.tree_get(carry[1], "grad"))
        return (k == 0) | ((k < r.lbfgs_iters) & (gnorm >= r.lbfgs_tol))

    w, state = jax.lax.while_loop(going, body, (w0, opt.init(w0)))
    return proj(w), jnp.linalg.norm(jax.grad(obj)(w)), otu.tree_get(state, "count")


# ---- programs ------------------------------------------------------------------------------


@partial(jax.jit, static_argnames=("encoding", "shape", "recipe"))
def reference_family(encoding: str, shape, recipe: Recipe, theta_SxF, t_TxL0, rows_TxRxL):
    """The reference selection for every (setting, task) of one head shape in one program:
    hit fractions [S, T, R] and the CE path's start, end and largest one-step rise."""
    head = HEADS[encoding]
    L0, Lmax = t_TxL0.shape[1], rows_TxRxL.shape[2]

    def one(theta_F, t_L0, rows_RxL):
        w, ce = fit_reference(lambda w: head.kernel(w, L0, theta_F), jnp.zeros(shape),
                              partial(project, head), t_L0, recipe)
        return {"frac": fractions(head.kernel(w, Lmax, theta_F), rows_RxL, recipe.tie),
                "ce_start": ce[0], "ce_end": ce[-1], "ce_max_rise": jnp.max(jnp.diff(ce))}

    over_tasks = jax.vmap(one, in_axes=(None, 0, 0))
    return jax.vmap(over_tasks, in_axes=(0, None, None))(theta_SxF, t_TxL0, rows_TxRxL)


# ---- ablations: optima, fitted in float64 --------------------------------------------------


@partial(jax.jit, static_argnames=("head", "shape", "L"))
def design(head: Head, shape, theta_F, L: int) -> jax.Array:
    """X [L, L, P] with S = X w (every kernel is linear in its parameters)."""
    eye = jnp.eye(int(np.prod(shape)), dtype=theta_F.dtype)
    return jnp.moveaxis(jax.vmap(lambda e: head.kernel(e.reshape(shape), L, theta_F))(eye), 0, -1)


def _causal_scored(t_L) -> np.ndarray:
    """bool [L, L]: the entries the fits see, scored rows i and keys j <= i."""
    return (np.asarray(t_L)[:, None] >= 0) & np.tril(np.ones((len(t_L), len(t_L)), bool))


def min_norm_fit(X0_LxLxP, t_L, rcond: float) -> tuple[np.ndarray, float]:
    """(w, rms residual): min |w| among least-squares fits of S[i, j] to [j = t(i)] over the
    scored causal entries; singular values below rcond * the largest count as zero (the design's
    spectrum decays with no gap, so the result depends on rcond: see the sensitivity report)."""
    keep = _causal_scored(t_L)
    A = np.asarray(X0_LxLxP, np.float64)[keep]
    y = (np.arange(len(t_L))[None, :] == np.asarray(t_L)[:, None])[keep].astype(np.float64)
    w = np.linalg.pinv(A, rcond=rcond) @ y
    return w, float(np.sqrt(np.mean((A @ w - y) ** 2)))


def margin_fit(X0_LxLxP, t_L, nonneg: bool) -> tuple[np.ndarray, float]:
    """(w, min margin): the hard-margin selector min |w| s.t. S[i, t(i)] - S[i, j] >= 1 for
    scored i and keys j <= i, j != t(i) (and w >= 0 for a constrained head). Least-distance
    programming by NNLS (Lawson & Hanson 1974, ch. 23): with E = [G^T; h^T], f = e_last,
    u = argmin_{u >= 0} |E u - f| and rho = E u - f, w = -rho[:-1] / rho[-1]; |rho| = 0 means
    the constraints are inconsistent (then w = 0, min margin 0 or below: flagged)."""
    X = np.asarray(X0_LxLxP, np.float64)
    t = np.asarray(t_L)
    i_c, j_c = np.nonzero(_causal_scored(t) & (np.arange(len(t))[None, :] != t[:, None]))
    G = X[i_c, t[i_c]] - X[i_c, j_c]
    h = np.ones(len(G))
    if nonneg:
        G, h = np.vstack([G, np.eye(G.shape[1])]), np.concatenate([h, np.zeros(G.shape[1])])
    E = np.vstack([G.T, h[None, :]])
    f = np.eye(E.shape[0])[-1]
    from scipy.optimize import nnls  # on first use: a heavy import no command's start should pay

    u, _ = nnls(E, f, maxiter=50 * E.shape[1])
    rho = E @ u - f  # |rho| below 1e-9: the constraints are inconsistent
    w = -rho[:-1] / rho[-1] if np.linalg.norm(rho) > 1e-9 else np.zeros(G.shape[1])
    return w, float(np.min(G[: len(i_c)] @ w))


def row_space(X0_LxLxP, nonneg: bool, rtol: float) -> np.ndarray:
    """V [P, r]: an orthonormal basis of the span of the causal rows of the L0 design (singular
    values above rtol * the largest). Every ablation's solution lies in it (the objective and
    the constraints see w only through the causal entries of S_L0, and |w| is rotation
    invariant), so w = V u loses nothing, every encoding's L-BFGS fit has one shape, and the
    host solves shrink to r <= L0 (L0 + 1) / 2 columns. A constrained head keeps its own
    coordinates (V = I) so that its sign constraint stays a box."""
    X = np.asarray(X0_LxLxP, np.float64)
    if nonneg:
        return np.eye(X.shape[-1])
    _, sv, Vt = np.linalg.svd(X[np.tril(np.ones(X.shape[:2], bool))], full_matrices=False)
    return Vt[sv > rtol * sv[0]].T


@partial(jax.jit, static_argnames=("recipe",))
def _lbfgs_all(recipe: Recipe, B0_ExL0xL0xR, nonneg_ExR, t_TxL0):
    def one(B0, nonneg_R, t_L0):
        proj = lambda u: jnp.where(nonneg_R, jnp.maximum(u, 0.0), u)
        return fit_lbfgs(lambda u: B0 @ u, jnp.zeros(B0.shape[-1], B0.dtype), proj, t_L0, recipe)

    over_tasks = jax.vmap(one, in_axes=(None, None, 0))
    return jax.lax.map(lambda x: over_tasks(*x, t_TxL0), (B0_ExL0xL0xR, nonneg_ExR))


@partial(jax.jit, static_argnames=("tie",))
def _score_all(S_NxLxL, rows_NxRxL, tie: float):
    return jax.vmap(fractions, in_axes=(0, 0, None))(S_NxLxL, rows_NxRxL, tie)


def ablations(recipe: Recipe, encodings, num: int, theta_F: np.ndarray, t_TxL0, rows_TxRxL,
              rconds=()) -> dict:
    """lbfgs, min_norm and margin for every (encoding, task) at one frequency setting, in
    float64 (they are optima, fitted to tolerances float32 cannot resolve), in row-space
    coordinates. L-BFGS: one program for all encodings (zero-padded to one r; a zero coordinate
    stays zero), encodings one after another (lax.map) so each loop stops with its own slowest
    task. min_norm (at recipe.rcond and at each of `rconds`) and margin: small host solves.
    Every fit is scored in one vmapped program. Leaves [E, T, ...]."""
    t_TxL0, rows_TxRxL = np.asarray(t_TxL0), np.asarray(rows_TxRxL)
    L0, Lmax = t_TxL0.shape[1], rows_TxRxL.shape[2]
    with jax.enable_x64(True):
        theta = jnp.asarray(theta_F, jnp.float64)
        heads = [HEADS[enc] for enc in encodings]
        XLs = [np.asarray(design(h, h.shape(num, L0), theta, Lmax)) for h in heads]
        X0s = [X[:L0, :L0] for X in XLs]  # S_L0 is the top-left block of S_Lmax
        Vs = [row_space(X0, h.nonneg, recipe.rtol) for X0, h in zip(X0s, heads)]
        r = max(V.shape[1] for V in Vs)
        pad = lambda x: np.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, r - x.shape[-1])])
        B0s = [X @ V for X, V in zip(X0s, Vs)]  # every fit below lies in the row space
        nonneg = np.stack([pad(np.full(V.shape[1], h.nonneg)) for h, V in zip(heads, Vs)])
        u, gnorm, iters = jax.tree.map(np.asarray, _lbfgs_all(
            recipe, np.stack([pad(B) for B in B0s]), nonneg, t_TxL0))
        fits = {"lbfgs": [[V @ u[e, k, :V.shape[1]] for k in range(len(t_TxL0))]
                          for e, V in enumerate(Vs)]}
        diag = {"lbfgs": {"grad_norm": gnorm, "iters": iters}}
        for rc in dict.fromkeys((recipe.rcond, *rconds)):
            key = "min_norm" if rc == recipe.rcond else f"min_norm@{rc:g}"
            mn = [[min_norm_fit(B, t, rc) for t in t_TxL0] for B in B0s]
            fits[key] = [[np.asarray(project(h, V @ u)) for u, _ in row]
                         for h, V, row in zip(heads, Vs, mn)]
            diag[key] = {"rms_residual": np.array([[res for _, res in row] for row in mn])}
        mm = [[margin_fit(B, t, h.nonneg) for t in t_TxL0] for h, B in zip(heads, B0s)]
        fits["margin"] = [[V @ u for u, _ in row] for V, row in zip(Vs, mm)]
        diag["margin"] = {"min_margin": np.array([[m for _, m in row] for row in mm])}
        S = np.stack([X @ w for sel in fits for X, ws in zip(XLs, fits[sel]) for w in ws])
        rows = np.tile(rows_TxRxL, (len(fits) * len(encodings), 1, 1))
        frac = np.asarray(_score_all(S, rows, recipe.tie))
    frac = frac.reshape(len(fits), len(encodings), len(t_TxL0), -1)
    return {sel: {"frac": frac[n], **diag[sel]} for n, sel in enumerate(fits)}
