import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lgjax import models
from lgjax.checkpoints import CheckpointError, driver
from lgjax.harness.cli import main
from lgjax.runs import open_run
from lgjax.studies.implicit_bias import analysis, dynamics
from tests.conftest import tiny


def test_carrier_fraction_hand_cases():
    assert float(analysis.carrier_fraction(jnp.ones((5, 4)) * 3.0)) == pytest.approx(1.0)
    zero_mean = jnp.array([[1.0, 2.0], [-1.0, -2.0]])
    assert float(analysis.carrier_fraction(zero_mean)) == pytest.approx(0.0)
    # N independent random directions: about 1/N
    x = jax.random.normal(jax.random.key(0), (50, 4096))
    assert float(analysis.carrier_fraction(x)) == pytest.approx(1 / 50, rel=0.1)


def test_sv_energy_rank_one_and_identity():
    u, v = jnp.arange(1.0, 5.0), jnp.array([1.0, -1.0, 0.5, 2.0])
    assert float(analysis.sv_energy(jnp.outer(u, v))) == pytest.approx(1.0, abs=1e-5)
    assert float(analysis.sv_energy(jnp.eye(4))) == pytest.approx(0.25)


def test_margin_and_bound_on_constructed_profile():
    phi = jnp.array([[0.0, 1.0, 3.0, 0.5, 2.0]])  # offsets -4..0; K = 2 -> phi(-2) = 3.0
    mu = analysis.margin(phi, K=2)
    assert float(mu[0]) == pytest.approx(1.0)  # 3.0 - 2.0
    assert float(analysis.margin_bound(mu, 5)[0]) == pytest.approx(1 / (1 + 4 * np.exp(-1.0)))


def test_decay_fit_recovers_a_line():
    L = np.array([12, 16, 24, 48])
    fit = analysis.decay_fit(L, 1.0 / (0.05 * (L - 1) + 1.0))
    # alpha is the intercept, c the slope
    assert fit["alpha"] == pytest.approx(1.0) and fit["c"] == pytest.approx(0.05)
    assert fit["r2"] == pytest.approx(1.0)


def test_logit_profile_equals_mean_logit_over_content():
    for enc in ("rope", "ape", "alibi"):
        cfg = tiny(enc)
        p = models.init_params(jax.random.key(0), cfg)
        L, m = 6, cfg.task.vocab
        prof = analysis.logit_profile(p, cfg.model, L)
        # brute force: every (query token, key token) pair at every key position
        logits = []
        for u in range(m):
            for v in range(m):
                toks = jnp.full((L,), v).at[L - 1].set(u)
                q, k, _ = models.project(p, toks, L, cfg.model)
                lg = (k[:, 0] @ q[L - 1, 0]) / np.sqrt(cfg.model.d)
                if enc == "alibi":
                    lg = lg - (L - 1 - jnp.arange(L))
                logits.append(lg)
        want = np.mean(np.asarray(logits), 0)
        # the last position holds the query token itself, so only keys t < L-1 are comparable
        np.testing.assert_allclose(prof[0, :-1], want[:-1], atol=1e-4)


def test_carrier_profile_turns_q_and_k_as_a_block_does():
    """xPos: sum over pairs of zeta_i^(-delta/scale_base) times RoPE's term of the pair (the
    old single rotation had the sign of the exponent the other way); dynamic NTK past L_orig:
    RoPE at the base the length gives, b ((s L / L_orig) - (s - 1))^(d/(d-2))."""
    import dataclasses

    from lgjax.config import ModelConfig
    from lgjax.encodings import RopeOptions
    from lgjax.rope_scaling import RopeDynamicOptions, XposOptions

    dh, L = 8, 12
    q = jax.random.normal(jax.random.key(1), (1, dh))
    k = jax.random.normal(jax.random.key(2), (1, dh))
    rope = ModelConfig("rope", d=dh, heads=1)
    xpos = ModelConfig("xpos", d=dh, heads=1, enc=XposOptions(scale_base=4.0))
    delta = np.arange(-(L - 1), 1)
    zeta = (2 * np.arange(dh // 2) / dh + 0.4) / 1.4
    want = sum(zeta[i] ** (-delta / 4.0) * np.asarray(analysis.carrier_profile(
        q * (jnp.arange(dh) // 2 == i), k, L, rope))[0] for i in range(dh // 2))
    np.testing.assert_allclose(analysis.carrier_profile(q, k, L, xpos)[0], want, rtol=1e-4)
    s, L_orig = 2.0, 6
    dyn = ModelConfig("rope_dynamic", d=dh, heads=1,
                      enc=RopeDynamicOptions(factor=s, original_max_position=L_orig))
    base = 1e4 * ((s * L / L_orig) - (s - 1)) ** (dh / (dh - 2))
    at_base = dataclasses.replace(rope, enc=RopeOptions(base=base))
    np.testing.assert_allclose(analysis.carrier_profile(q, k, L, dyn),
                               analysis.carrier_profile(q, k, L, at_base), rtol=1e-4, atol=1e-5)


def test_head_metrics_at_init_near_one_over_m():
    cfg = tiny("rope", d=64)
    cfg = cfg.__class__(cfg.task.of("fixed_offset", vocab=20, offset=1), cfg.model,
                        cfg.train)
    p = models.init_params(jax.random.key(0), cfg)
    hm = analysis.head_metrics(p, cfg.model, K=1, L=16)
    assert 0.0 < float(hm["carrier_key"][0]) < 0.2
    assert hm["carrier_profile"].shape == (1, 16)


def test_dynamics_on_tiny_run(tmp_path, capsys):
    cfg = tiny("ape", steps=4)
    driver.train_run(cfg, tmp_path / "run")
    _, rows, damaged = dynamics.analyze(tmp_path / "run", lengths=(8, 12), n_eval=32)
    assert damaged == {}
    steps, grid = dynamics.series(rows, "carrier_key/h0")
    assert list(steps) == [0, 1, 2, 4] and grid.shape == (2, 4)
    assert {"accuracy@12", "margin/h0@12", "ape_norm_beyond", "sv_energy/h0"} <= {
        r["metric"] for r in rows}
    assert main(["dynamics", str(tmp_path / "run"), "--lengths", "8,12",
                 "--eval-sequences", "32"]) == 0
    assert (tmp_path / "run" / "dynamics" / "dynamics.png").stat().st_size > 0
    assert "carrier_key/h0" in capsys.readouterr().out
    # a damaged dynamics.json is lgjax's own error naming the file (and the row), never a
    # JSONDecodeError or a KeyError from the Python API
    file = tmp_path / "run" / "dynamics" / "dynamics.json"
    good = json.loads(file.read_text())
    for text, says in ((file.read_text()[:40], "is not valid JSON"),
                       ('{"seed": 0}', "holds a JSON dict"),
                       (json.dumps([good[0], {**good[1], "value": "x"}]),
                        "row 2 is not a dynamics row (damaged: 'value' is 'x', not a number)"),
                       (json.dumps([{k: v for k, v in good[0].items() if k != "seed"}]),
                        "row 1 is not a dynamics row (damaged: no 'seed')")):
        file.write_text(text)
        with open_run(tmp_path / "run") as run, \
                pytest.raises(CheckpointError, match=re.escape(f"{file}") + ".*" + re.escape(says)):
            run.dynamics()
