import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lgjax import encodings as E
from lgjax.config import ConfigError, ModelConfig, RunConfig, TrainConfig
from lgjax.validation import validate


@settings(deadline=None, max_examples=40)
@given(n=st.integers(0, 60), t=st.integers(0, 60), c=st.integers(0, 200),
       seed=st.integers(0, 2**16))
def test_rope_logit_depends_only_on_offset(n, t, c, seed):
    cfg = ModelConfig(d=16, heads=2)
    kq, kk = jax.random.split(jax.random.key(seed))
    q = jax.random.normal(kq, (1, 2, 8))
    k = jax.random.normal(kk, (1, 2, 8))
    f = E.rope_freqs(cfg)
    logit = lambda a, b: (E.rotate(q, jnp.array([a]), f) * E.rotate(k, jnp.array([b]), f)).sum(-1)
    chex.assert_trees_all_close(logit(n, t), logit(n + c, t + c), atol=2e-4, rtol=1e-4)


def test_rope_rotation_preserves_norm_and_is_identity_at_zero():
    x = jax.random.normal(jax.random.key(0), (5, 1, 8))
    f = E.rope_freqs(ModelConfig(d=8))
    chex.assert_trees_all_close(E.rotate(x, jnp.zeros(5, jnp.int32), f), x)
    chex.assert_trees_all_close(jnp.linalg.norm(E.rotate(x, jnp.arange(5), f), axis=-1),
                                jnp.linalg.norm(x, axis=-1), rtol=1e-5)


def test_rope_kernel_is_sum_of_cosines():
    cfg = ModelConfig(d=8, enc=E.RopeOptions(base=100.0))
    theta = 100.0 ** (-np.arange(4) * 2 / 8)
    g = np.asarray(E.rope_kernel({}, 5, np.arange(6), cfg))[:, 0]
    np.testing.assert_allclose(g, np.cos(np.outer(np.arange(6) - 5, theta)).sum(1), rtol=1e-5)
    assert g[5] == pytest.approx(4.0)


def test_t5_buckets_hand_computed():
    cfg = ModelConfig("t5", enc=E.T5Options(buckets=32, max_distance=128))
    got = np.asarray(E.t5_bucket(jnp.array([0, 1, 15, 16, 32, 64, 127, 500]), cfg))
    # exact below 16; then 16 + floor(log(d/16)/log(8) * 16), capped at 31
    want = [0, 1, 15, 16, 16 + int(np.log(2) / np.log(8) * 16),
            16 + int(np.log(4) / np.log(8) * 16), 16 + int(np.log(127 / 16) / np.log(8) * 16), 31]
    assert got.tolist() == want


def test_alibi_and_clip_biases():
    alibi = ModelConfig("alibi", heads=2, enc=E.AlibiOptions(slope=0.5))
    np.testing.assert_allclose(E.alibi_bias({}, jnp.arange(4), alibi)[:, 0], [0, -0.5, -1, -1.5])
    params = {"relbias": jnp.arange(8.0).reshape(4, 2)}
    clip = ModelConfig("relclip", heads=2, enc=E.RelClipOptions(clip=3))
    np.testing.assert_allclose(E.clip_bias(params, jnp.array([0, 2, 3, 9]), clip)[:, 1],
                               [1, 5, 7, 7])


# Press et al.'s get_slopes (ofirpress/attention_with_linear_biases, fairseq/models/
# transformer.py) and Bloom's build_alibi_tensor, worked by hand: the slopes of the nearest power
# of two P <= H, then the 1st, 3rd, ... slopes of 2P
REFERENCE_SLOPES = {
    1: [2**-8],
    3: [2**-4, 2**-8, 2**-2],
    4: [2**-2, 2**-4, 2**-6, 2**-8],
    6: [2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3],
    12: [2.0 ** (-h) for h in range(1, 9)] + [2**-0.5, 2**-1.5, 2**-2.5, 2**-3.5],
}


@pytest.mark.parametrize("H", sorted(REFERENCE_SLOPES))
def test_alibi_geometric_slopes_are_the_references_for_every_head_count(H):
    got = E.alibi_slopes(ModelConfig("alibi", d=4 * H, heads=H,
                                     enc=E.AlibiOptions(slopes="geometric")))
    np.testing.assert_allclose(got, REFERENCE_SLOPES[H], rtol=1e-15)


@pytest.mark.parametrize("H", [3, 6, 12, 4])
def test_alibi_evenly_spaced_keeps_the_old_rule_equal_at_powers_of_two(H):
    cfg = ModelConfig("alibi", d=4 * H, heads=H, enc=E.AlibiOptions(slopes="evenly_spaced"))
    np.testing.assert_allclose(E.alibi_slopes(cfg), 2.0 ** (-8.0 * np.arange(1, H + 1) / H))
    assert (H & (H - 1) == 0) == np.allclose(E.alibi_slopes(cfg), REFERENCE_SLOPES[H])


def test_ape_positions_beyond_table_error_names_field():
    cfg = RunConfig(model=ModelConfig(encoding="ape", enc=E.ApeOptions(size=32, oob="untrained")))
    with pytest.raises(ConfigError, match=r"model\.enc\.size"):
        validate(cfg, eval_lengths=(48,))
    validate(cfg, eval_lengths=(32,))


def test_ape_untrained_rows_are_read_only_when_asked():
    """Rows past train.lmax never get gradient: the default refuses to evaluate there."""
    cfg = RunConfig(model=ModelConfig(encoding="ape"))  # lmax 16, oob "error"
    with pytest.raises(ConfigError, match=r"model\.enc\.oob"):
        validate(cfg, eval_lengths=(17,))
    validate(cfg, eval_lengths=(16,))
    clamp_past = RunConfig(model=ModelConfig("ape", enc=E.ApeOptions(oob="clamp", train_max=20)))
    with pytest.raises(ConfigError, match=r"model\.enc\.train_max"):  # clamps onto untrained rows
        validate(clamp_past, eval_lengths=(48,))


def test_ape_inference_fixes_map_into_trained_range():
    ape = lambda oob: ModelConfig("ape", enc=E.ApeOptions(train_max=16, oob=oob))
    pos = jnp.arange(32)
    assert int(E.ape_positions(pos, 32, ape("clamp")).max()) == 15
    assert int(E.ape_positions(pos, 32, ape("rescale")).max()) == 15
    frac = E.ape_positions(pos, 32, ape("interp"))
    assert float(frac[-1]) == pytest.approx(15.0)
    table = {"ape": jnp.arange(64.0)[:, None] * jnp.ones((1, 4))}
    interp = E.ape_table(table, jnp.array([31]), 63, ape("interp"))
    assert float(interp[0, 0]) == pytest.approx(31 * 15 / 62)


@pytest.mark.parametrize("model, field", [
    (ModelConfig(encoding="rope", d=18, heads=2), "model.d"),  # d_head 9 is odd
    (ModelConfig(d=30, heads=4), "model.d"),
    (ModelConfig(encoding="sinusoidal", d=15), "model.d"),
    (ModelConfig(encoding="nosuch"), "model.encoding"),
])
def test_model_config_errors_name_the_field(model, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        validate(RunConfig(model=model, train=TrainConfig()))


def test_every_encoding_has_a_kernel():
    """... except the content-aware ones, whose kernel says it is undefined
    (tests/test_content.py)."""
    for name, enc in E.ENCODINGS.items():
        if enc.kind == "content":
            continue
        cfg = ModelConfig(encoding=name, d=8)
        params = {"wq": jnp.eye(8), "wk": jnp.eye(8), **enc.init(jax.random.key(0), cfg)}
        out = jax.jit(enc.kernel, static_argnums=3)(params, jnp.array([3, 3]),
                                                    jnp.array([1, 3]), cfg)
        chex.assert_shape(out, (2, 1))
