import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lgjax import models
from lgjax.encodings import rope_freqs
from lgjax.studies.implicit_bias import selector as mm
from tests.conftest import tiny


def _orthonormal_case():
    """One sequence of 3 orthonormal features, K = 1: keys 0 and 2 must lose to key 1."""
    z = jnp.eye(3)
    return mm.constraints(lambda t, n: z, jnp.zeros((1, 3), jnp.int32), jnp.array([3]), K=1)


def test_solver_matches_closed_form():
    c = _orthonormal_case()
    G = mm.gram_additive(c)
    sol = mm.solve(G, c.valid_A)
    # active constraints a=(t=0), b=(t=2): G = [[2, 1], [1, 2]] -> alpha = G^-1 1 = 1/3 each
    alpha = np.asarray(sol.alpha_A)[np.asarray(c.valid_A)]
    np.testing.assert_allclose(alpha, [1 / 3, 1 / 3], atol=1e-5)
    W = mm.selector_additive(c, sol.alpha_A)
    want = jnp.outer(jnp.array([0, 0, 1.0]), jnp.array([-1.0, 2.0, -1.0])) / 3
    chex.assert_trees_all_close(W, want, atol=1e-5)
    assert float(sol.min_margin) == pytest.approx(1.0, abs=1e-5)
    assert abs(float(sol.duality_gap)) < 1e-5 and float(sol.kkt_residual) < 1e-5


def test_rotary_gram_is_the_inner_product_of_lifted_features():
    cfg = tiny("rope", d=8)
    p = models.init_params(jax.random.key(0), cfg)
    toks = jax.random.randint(jax.random.key(1), (3, 6), 0, 8)
    c = mm.constraints(lambda t, n: p["embed"][t], toks, jnp.array([6, 4, 5]), K=2)
    freqs = jnp.asarray(rope_freqs(cfg.model))
    G = mm.gram_rotary(c, freqs, 6)
    A = c.valid_A.shape[0]
    phis = jnp.stack([mm.selector_rotary(c, jnp.eye(A)[a], freqs).ravel() for a in range(A)])
    chex.assert_trees_all_close(G, phis @ phis.T, rtol=1e-4, atol=1e-3)


def test_trained_rotary_parameters_reproduce_the_logits():
    cfg = tiny("rope", d=8)
    p = models.init_params(jax.random.key(0), cfg)
    toks = jax.random.randint(jax.random.key(2), (6,), 0, 8)
    q, k, _ = models.project(p, toks, 6, cfg.model)
    logits = k[:, 0] @ q[5, 0]
    AB = mm.trained_rotary(p, 8)
    x = p["embed"][toks]
    ang = (jnp.arange(6) - 5)[:, None] * jnp.asarray(rope_freqs(cfg.model))
    lifted = (jnp.einsum("d,fde,te->tf", x[5], AB[0], x) * jnp.cos(ang)
              + jnp.einsum("d,fde,te->tf", x[5], AB[1], x) * jnp.sin(ang)).sum(-1)
    chex.assert_trees_all_close(lifted, logits, rtol=1e-4, atol=1e-4)


def test_solver_reaches_the_stated_tolerance():
    """Separable data (random content plus one-hot positions, as APE features are): the loop
    stops only once every margin is within MARGIN_TOL of 1 and the KKT residual <= KKT_TOL."""
    k1, k2 = jax.random.split(jax.random.key(4))
    content = jax.random.normal(k1, (8, 4))
    tokens = jax.random.randint(k2, (16, 12), 0, 8)
    feats = lambda t, n: jnp.concatenate([content[t], jnp.eye(12)], axis=1)
    c = mm.constraints(feats, tokens, jnp.full((16,), 12), K=2)
    sol = mm.solve(mm.gram_additive(c), c.valid_A)
    assert float(sol.min_margin) >= 1 - mm.MARGIN_TOL
    assert float(sol.kkt_residual) <= mm.KKT_TOL
    assert abs(float(sol.duality_gap)) < 1e-2


def test_rotary_selector_uses_each_entry_frequencies_and_refuses_the_rest(capsys):
    from lgjax.config import ModelConfig
    from lgjax.harness.cli import main
    from lgjax.rope_scaling import RopeNtkOptions
    from lgjax.studies.implicit_bias import maxmargin as study

    m = ModelConfig("rope_ntk", d=64, heads=1, enc=RopeNtkOptions(factor=4.0))
    want = (1e4 * 4.0 ** (64 / 62)) ** (-2.0 * np.arange(32) / 64)  # b' = b s^(d/(d-2))
    np.testing.assert_allclose(study.rotary_freqs(m), want, rtol=1e-6)
    assert study.rotary_freqs(ModelConfig("rope", d=64, heads=1)).dtype == np.float32
    for name in ("alibi", "xpos", "rope_dynamic"):
        assert main(["maxmargin", "--encodings", f"rope,{name}", "--steps", "2",
                     "--out", "/nonexistent/never-written"]) == 2
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(err) == 1 and "--encodings" in err[0] and name in err[0], err
