"""A positional-only head for any registered encoding, read off its `Encoding` behaviours, so that
alpha_L (score.py) needs no head written per encoding (docs/studies/realizability.md).

The score is linear in its free parameters w, built from the encoding's own features:
  additive part  S += Phi W Phi^T, Phi [L, D] the encoding's embedding rows; an embedding that
                 reads trainable parameters (a table) enters through d embed(i)_0 / d params,
                 i.e. one free row per table row it reads (clamped rows share one), W free [D, D]
  design part    S += X u, X [L, L, P] columns of
                   - the rotation: X[i, j, (a, b)] = <R_i e_a, R_j e_b>, R_p the encoding's
                     rotation of the identity at p; for a plain rotation (a group action,
                     R_i^T R_j = R_{j-i}, checked numerically) read at the offset j - i
                   - the logit bias: a fixed bias (one column, its coefficient >= 0, as the ALiBi
                     slope of the spec) and d bias / d params for the encoding's own bias
                     parameters (a learned table: one free scalar per bucket), fitted alongside
                 columns equal or opposite to an earlier one over the causal entries, and zero
                 ones, are dropped (RoPE's 4 entries per 2x2 block give its a_k cos + b_k sin)
  nothing        one constant column: every key ties (NoPE)
The features are the encoding's at the width the spec pins, m = 2 num (theta_k = base^(-2k/m) =
base^(-k/num)), one head; the pinned Adam path (score.fit_reference) runs on w, one array:
W [D, D] or u [P] alone, or both flattened into one vector (Adam is elementwise, so this is the
same path). For the five canonical encodings this reproduces the pinned maps' alpha cells
(tests/test_profile.py); it is linearised at init for an embedding or bias that is not linear in
its parameters, and read at the longest length for a length-dependent rotation (rope_dynamic).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from lgjax.config import ModelConfig
from lgjax.encodings import ENCODINGS, AlibiOptions, ApeOptions, RopeOptions, SinusoidalOptions
from lgjax.errors import ConfigError
from lgjax.studies.realizability import score as scoring


@dataclass(frozen=True)
class GenericHead:
    phi_LxD: np.ndarray | None  # additive features (None: no additive part)
    X_LxLxP: np.ndarray | None  # design columns (None: no design part)
    nonneg_P: np.ndarray  # bool [P]: coefficients held >= 0 (a fixed bias's scale)

    @property
    def D(self) -> int:
        return 0 if self.phi_LxD is None else self.phi_LxD.shape[1]

    @property
    def P(self) -> int:
        return 0 if self.X_LxLxP is None else self.X_LxLxP.shape[2]

    def shape(self) -> tuple[int, ...]:
        if self.P == 0:
            return (self.D, self.D)
        return (self.P,) if self.D == 0 else (self.D * self.D + self.P,)

    def arrays(self) -> dict:
        return {k: v for k, v in (("phi", self.phi_LxD), ("X", self.X_LxLxP)) if v is not None}


def kernel(arrays: dict, w, L: int):
    """S [L, L] = Phi W Phi^T + X u of the first L positions (w laid out as GenericHead.shape)."""
    phi, X = arrays.get("phi"), arrays.get("X")
    if X is None:
        return phi[:L] @ w @ phi[:L].T
    if phi is None:
        return X[:L, :L] @ w
    D = phi.shape[1]
    return phi[:L] @ w[:D * D].reshape(D, D) @ phi[:L].T + X[:L, :L] @ w[D * D:]


# ---- reading the encoding ------------------------------------------------------------------


def _jacobian_columns(fn, params) -> np.ndarray:
    """[..., N]: d fn(params) / d params, flattened over every parameter (N = 0 without any);
    forward or reverse mode, whichever pushes fewer vectors, in one compiled program."""
    out = jax.eval_shape(fn, params).shape
    n_in = sum(x.size for x in jax.tree.leaves(params))
    if not n_in:
        return np.zeros((*out, 0))
    jac = jax.jit(jax.jacfwd(fn) if n_in <= np.prod(out) else jax.jacrev(fn))(params)
    return np.concatenate([np.asarray(j).reshape(*out, -1) for j in jax.tree.leaves(jac)], -1)


def _nonzero_columns(cols, scored) -> np.ndarray:
    return cols[..., np.abs(cols[scored]).max(0) > 0] if cols.shape[-1] else cols


def _additive(enc, params, cfg, L: int) -> np.ndarray | None:
    pos, length = jnp.arange(L), jnp.asarray(L)
    embed = jax.jit(lambda p: enc.embed(p, pos, length, cfg))
    if np.shape(embed(params)) == ():
        return None  # the default: no embedding
    jac = _nonzero_columns(_jacobian_columns(lambda p: embed(p)[:, 0], params), slice(None))
    if jac.shape[-1]:
        return jac  # a trainable table: one free row per row it reads
    phi = np.asarray(embed(params), np.float32)
    return phi if np.abs(phi).max() > 0 else None


def _turned(enc, cfg, positions, L: int) -> np.ndarray:
    """[n, 2, m, m]: per position p, row b of [0] (the query side) and of [1] (the key side) is
    the encoding's rotation of e_b at p (one call for every position)."""
    m, n = cfg.d, len(positions)
    eye = np.tile(np.eye(m, dtype=np.float32), (n, 1))[:, None, :]
    at = np.repeat(np.asarray(positions), m)
    q, k = jax.jit(lambda e, p: enc.rotate_pair(e, e, p, jnp.asarray(L), cfg))(eye, at)
    return np.stack([np.asarray(q[:, 0]), np.asarray(k[:, 0])], 1).reshape(n, m, 2, m) \
        .transpose(0, 2, 1, 3)


def _rotation(enc, cfg, L: int) -> np.ndarray | None:
    """X [L, L, m*m] with X[i, j, a*m + b] = <q-rotation of e_a at i, k-rotation of e_b at j>."""
    m = cfg.d
    if enc.rotate is R_NO_ROTATION and enc.rotate_qk is None:
        return None
    i, j = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")
    T = _turned(enc, cfg, np.arange(-(L - 1), L), L)  # [2L - 1, 2, m, m]: every offset
    if _is_group_action(enc, cfg, L, T):  # R_i^T R_j = R_{j-i}: read at the offset (one
        X = np.transpose(T[j - i + L - 1, 1], (0, 1, 3, 2))  # rounding); [L, L, a, b]
    else:
        P = T[L - 1:]  # positions 0..L-1
        X = np.einsum("iac,jbc->ijab", P[:, 0], P[:, 1])
    return X.reshape(L, L, m * m)


def _is_group_action(enc, cfg, L: int, T) -> bool:
    """R_a^T R_b = R_{b-a} on a few pairs (row b of T at p is R_p e_b, keys' side)."""
    if enc.rotate_qk is not None or not enc.length_free(cfg):
        return False
    a, b = np.array([0, 3, L - 1, 5]), np.array([1, 7, 2, L - 1])
    R = lambda p: T[p + L - 1, 1]
    rel = R(b - a).transpose(0, 2, 1)
    return np.allclose(R(a) @ R(b).transpose(0, 2, 1), rel, atol=1e-5)


R_NO_ROTATION = ENCODINGS["nope"].rotate  # the default behaviour (identity)


def _bias(enc, params, cfg, L: int) -> tuple[np.ndarray, np.ndarray]:
    """(fixed [L, L, 0 or 1], learned [L, L, N]): the encoding's logit bias on head 0 at its
    params' init, and its derivative in those params (query i, key j)."""
    q, k = jnp.arange(L)[:, None], jnp.arange(L)[None, :]
    bias = lambda p: jnp.broadcast_to(enc.logit_bias(p, q, k, cfg), (L, L, cfg.heads))[..., 0]
    causal = np.tril(np.ones((L, L), bool))
    learned = _nonzero_columns(_jacobian_columns(bias, params), causal)
    fixed = np.asarray(jax.jit(bias)(params), np.float32)
    fixed = fixed[..., None] if np.abs(fixed[causal]).max() > 0 else np.zeros((L, L, 0))
    return fixed, learned


def _dedup(X_LxLxP, causal) -> np.ndarray:
    """The columns kept, in order: nonzero and neither equal nor opposite to an earlier one."""
    cols = np.asarray(X_LxLxP[causal], np.float64).T
    first = np.argmax(cols != 0, axis=1)
    signed = cols * np.where(cols[np.arange(len(cols)), first] < 0, -1.0, 1.0)[:, None]
    _, idx = np.unique(signed, axis=0, return_index=True)
    return np.array(sorted(p for p in idx if np.abs(cols[p]).max() > 0), int)


def generic_head(name: str, options, m: int, L: int, seed: int = 0) -> GenericHead:
    """The generic head of encoding `name` with `options` at width m over positions 0..L-1."""
    from lgjax.studies.realizability.alpha import alpha_undefined

    why = alpha_undefined(name)
    if why is not None:
        raise ConfigError(why)
    enc = ENCODINGS[name]
    cfg = ModelConfig(name, d=m, heads=1, enc=options)
    params = enc.init(jax.random.key(seed), cfg)
    causal = np.tril(np.ones((L, L), bool))
    phi = _additive(enc, params, cfg, L)
    fixed, learned = _bias(enc, params, cfg, L)
    rot = _rotation(enc, cfg, L)
    parts = [fixed, learned] + ([rot] if rot is not None else [])
    X = np.concatenate(parts, -1).astype(np.float32)
    nonneg = np.arange(X.shape[-1]) < fixed.shape[-1]
    keep = _dedup(X, causal)
    X, nonneg = X[..., keep], nonneg[keep]
    if phi is None and X.shape[-1] == 0:  # no position at all: one constant feature
        X, nonneg = np.ones((L, L, 1), np.float32), np.zeros(1, bool)
    return GenericHead(phi, X if X.shape[-1] else None, nonneg)


# ---- the canonical encodings at the spec's settings ----------------------------------------


def spec_options(name: str, L0: int, Lmax: int, base: float | None, scale: float | None):
    """The options under which encoding `name` is the spec's feature map at (base, scale): the
    learned table clamped past L0, ALiBi's one slope (the head scales it), RoPE and sinusoidal
    at that base; None where the encoding has no such setting (sinusoidal at scale != 1)."""
    if name == "ape":
        return ApeOptions(size=Lmax, oob="clamp", train_max=L0)
    if name == "alibi":
        return AlibiOptions(slope=1.0)
    if name == "rope":
        return RopeOptions(base=base, scale=scale)
    if name == "sinusoidal":
        return SinusoidalOptions(base=base) if scale == 1.0 else None
    if name in ENCODINGS:
        return ENCODINGS[name].options()
    raise ConfigError(f"encoding: unknown encoding {name!r}; choose from {sorted(ENCODINGS)} "
                      "(a plugin's: pass --plugin with its module)")


# ---- the pinned selection on a generic head ------------------------------------------------


@partial(jax.jit, static_argnames=("shape", "recipe"))
def reference_family(shape, recipe: scoring.Recipe, arrays_S: dict, nonneg_P, t_TxL0, rows_TxRxL):
    """score.reference_family on generic heads: hit fractions [S, T, R] and the CE path's
    start, end and largest one-step rise, for every (setting, task)."""
    L0, Lmax = t_TxL0.shape[1], rows_TxRxL.shape[2]
    D = arrays_S["phi"].shape[2] if "phi" in arrays_S else 0
    mask = jnp.concatenate([jnp.zeros(D * D, bool), nonneg_P]) if D and len(shape) == 1 \
        else jnp.broadcast_to(nonneg_P, shape) if len(shape) == 1 else jnp.zeros(shape, bool)
    proj = lambda w: jnp.where(mask, jnp.maximum(w, 0.0), w)

    def one(arrays, t_L0, rows_RxL):
        w, ce = scoring.fit_reference(lambda w: kernel(arrays, w, L0), jnp.zeros(shape), proj,
                                t_L0, recipe)
        return {"frac": scoring.fractions(kernel(arrays, w, Lmax), rows_RxL, recipe.tie),
                "ce_start": ce[0], "ce_end": ce[-1], "ce_max_rise": jnp.max(jnp.diff(ce))}

    over_tasks = jax.vmap(one, in_axes=(None, 0, 0))
    return jax.vmap(over_tasks, in_axes=(0, None, None))(arrays_S, t_TxL0, rows_TxRxL)


def fit_heads(heads: list[GenericHead], recipe: scoring.Recipe, t_TxL0, rows_TxRxL) -> dict:
    """The pinned selection on heads of one shape (one per setting), as numpy leaves [S, T, ...]."""
    arrays = jax.tree.map(lambda *a: jnp.asarray(np.stack(a)), *[h.arrays() for h in heads])
    out = reference_family(heads[0].shape(), recipe, arrays, jnp.asarray(heads[0].nonneg_P),
                           jnp.asarray(t_TxL0), jnp.asarray(rows_TxRxL))
    return jax.tree.map(np.asarray, out)


def alpha_rows(cfg, encodings=None, options=None) -> list[dict]:
    """The reference rows of realizability-alpha (alpha.measure's, main and sweeps) with the
    generic head in place of each pinned map: alpha.Config `cfg`; `options(name, base, scale)`
    gives an encoding's options at a setting (default: spec_options); a setting an encoding
    cannot express (None) is left out."""
    from lgjax.studies.realizability import alpha as alpha_command

    encodings = tuple(encodings or cfg.encodings)
    Lmax = max(cfg.lengths)
    opts = options or (lambda n, b, s: spec_options(n, cfg.L0, Lmax, b, s))
    scored = [n for n in cfg.tasks if scoring.positional(n)]
    t_TxL0 = np.stack([scoring.targets(n, cfg.L0) for n in scored])
    rows_TxRxL = np.stack([scoring.row_sets(n, cfg.L0, cfg.lengths, Lmax) for n in scored])
    rows = []
    for fam in _families(cfg, encodings):
        enc, num = fam["encoding"], fam["num"]
        settings = [s for s in fam["settings"] if opts(enc, *s) is not None]
        if not settings:
            continue
        heads = [generic_head(enc, opts(enc, *s), 2 * num, Lmax) for s in settings]
        out = fit_heads(heads, cfg.recipe(), t_TxL0, rows_TxRxL)
        pinned = scoring.HEADS.get(enc, scoring.Head(None, None))
        for k, (base, scale) in enumerate(settings):
            main = num == cfg.num and (base, scale) == (cfg.base, cfg.scale)
            setting = alpha_command._setting(pinned, num, base, scale)
            rows += alpha_command._rows(enc, "reference", setting, main, out, k, scored, cfg)
    return rows


def _families(cfg, encodings) -> list[dict]:
    """alpha.families for the pinned maps' encodings (their sweeps); any other at the main
    setting only."""
    from lgjax.studies.realizability import alpha as alpha_command

    pinned = [e for e in encodings if e in scoring.HEADS]
    fams = (alpha_command.families(dataclasses.replace(cfg, encodings=tuple(pinned)))
            if pinned else [])
    return fams + [{"encoding": e, "num": cfg.num, "settings": [(cfg.base, cfg.scale)]}
                   for e in encodings if e not in scoring.HEADS]
