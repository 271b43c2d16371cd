"""The length-extension zoo (lgjax.rope_scaling, lgjax.learned_bias) and randomized positions:
every formula at stated points, computed here independently of the modules; the invariances each
promises; bad options named; tiny end-to-end training through the head and the transformer.

(The fast-vs-general equivalence, the kernel-is-the-head's-logit identity and translation
invariance run over every registered encoding in test_models.py and test_identities.py.)"""

import dataclasses
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lgjax import learned_bias as LB
from lgjax import models, tasks, train, transformer
from lgjax import rope_scaling as RS
from lgjax.config import ConfigError, ModelConfig, RunConfig, TaskConfig, TrainConfig
from lgjax.encodings import ENCODINGS, ApeOptions, RopeOptions
from lgjax.validation import validate
from tests.conftest import tiny
from tests.test_identities import _carrier, _head_logits

NEW = ("rope_linear", "rope_ntk", "rope_dynamic", "rope_yarn", "rope_llama3", "rope_longrope",
       "xpos",
       "kerple_log", "kerple_power", "fire")

# ---- the RoPE family at d_head = 64, base 1e4, s = 4, L_orig = 32 --------------------------

D, B, S, L0 = 64, 1e4, 4.0, 32
I = np.arange(D // 2)
THETA = B ** (-2.0 * I / D)  # the unscaled frequencies, float64


def _cfg(name, **opts):
    return ModelConfig(name, d=D, heads=1, enc=ENCODINGS[name].options(**opts))


def _angles_and_gain(cfg, pos=1, length=None):
    """The frequency every pair turns by, read off the encoding's own rotation of the unit
    pair (1, 0) at position `pos` (angle / pos), and the gain (the rotated pair's norm)."""
    L = pos + 1 if length is None else max(length, pos + 1)
    x = jnp.tile(jnp.array([1.0, 0.0]), (L, 1, D // 2))  # [L, 1, D]
    positions = jnp.arange(L)
    n = jnp.int32(pos + 1 if length is None else length)
    with jax.enable_x64(True):
        q, _ = ENCODINGS[cfg.encoding].rotate_pair(x.astype(jnp.float64), x.astype(jnp.float64),
                                                    positions, n, cfg)
        pair = np.asarray(q[pos, 0]).reshape(-1, 2)
    return np.arctan2(pair[:, 1], pair[:, 0]) / pos, np.linalg.norm(pair, axis=-1)


def test_linear_interpolation_divides_every_angle():
    theta, gain = _angles_and_gain(_cfg("rope_linear", base=B, factor=S))
    np.testing.assert_allclose(theta, THETA / 4, rtol=1e-9)
    np.testing.assert_allclose(gain, 1.0)


def test_ntk_raises_the_base():
    theta, _ = _angles_and_gain(_cfg("rope_ntk", base=B, factor=S))
    b_new = 1e4 * 4.0 ** (64 / 62)
    np.testing.assert_allclose(theta, b_new ** (-2.0 * I / 64), rtol=1e-9)
    assert theta[0] == pytest.approx(1.0) and theta[-1] < THETA[-1] / 3.9  # lowest ~ / s


def test_dynamic_ntk_follows_the_sequence_length():
    cfg = _cfg("rope_dynamic", base=B, factor=S, original_max_position=L0)
    for L in (8, 32):  # up to L_orig: plain RoPE
        theta, _ = _angles_and_gain(cfg, pos=3, length=L)
        np.testing.assert_allclose(theta, THETA, rtol=1e-9)
    theta, _ = _angles_and_gain(cfg, pos=3, length=64)  # L = 64: b ((4*64/32) - 3)^(64/62)
    np.testing.assert_allclose(theta, (1e4 * 5.0 ** (64 / 62)) ** (-2.0 * I / 64), rtol=1e-9)
    assert models.head_path(cfg) == "general"  # one table per batch cannot follow each length


def test_yarn_frequencies_and_attention_factor():
    cfg = _cfg("rope_yarn", base=B, factor=S, original_max_position=L0)
    # correction range: pair d*ln(L0/(beta*2pi))/(2 ln b) for beta = 32 (floor) and 1 (ceil)
    lo = 64 * math.log(32 / (32 * 2 * math.pi)) / (2 * math.log(1e4))  # -6.39 -> floor -7 -> 0
    hi = 64 * math.log(32 / (1 * 2 * math.pi)) / (2 * math.log(1e4))  # 5.66 -> ceil 6
    assert (max(math.floor(lo), 0), min(math.ceil(hi), 63)) == (0, 6)
    ramp = np.minimum(I / 6.0, 1.0)  # 0 at pair 0 (kept), 1 from pair 6 on (divided by s)
    want = THETA / 4 * ramp + THETA * (1 - ramp)
    theta, gain = _angles_and_gain(cfg)
    np.testing.assert_allclose(theta, want, rtol=1e-9)
    assert theta[0] == pytest.approx(1.0) and theta[3] == pytest.approx(THETA[3] * (1 - 0.375))
    mscale = 0.1 * math.log(4) + 1  # 1.1386
    np.testing.assert_allclose(gain, mscale, rtol=1e-9)
    # the q.k logit carries the factor squared (HF: cos and sin both multiplied by it)
    k0 = float(ENCODINGS["rope_yarn"].kernel({}, 5, 5, cfg)[0])
    assert k0 == pytest.approx(32 * mscale**2, rel=1e-5)
    # without truncation the ramp runs between the real-valued ends [0, 5.66]
    theta_nt, _ = _angles_and_gain(_cfg("rope_yarn", base=B, factor=S, original_max_position=L0,
                                        truncate=False))
    ramp_nt = np.clip(I / hi, 0.0, 1.0)
    np.testing.assert_allclose(theta_nt, THETA / 4 * ramp_nt + THETA * (1 - ramp_nt), rtol=1e-9)


def test_yarn_attention_factor_is_one_when_not_extending():
    _, gain = _angles_and_gain(_cfg("rope_yarn", factor=1.0))
    np.testing.assert_allclose(gain, 1.0)
    _, gain = _angles_and_gain(_cfg("rope_yarn", factor=0.5))  # HF's get_mscale: 1 for s <= 1
    np.testing.assert_allclose(gain, 1.0)


def test_yarn_mscale_pair_sets_the_default_attention_factor():
    """Both set: (0.1 mscale ln s + 1) / (0.1 mscale_all_dim ln s + 1) (HF's get_mscale ratio);
    one of them 0 (HF: absent) leaves 0.1 ln s + 1; an explicit attention_factor wins."""
    m = lambda c: 0.1 * c * math.log(4) + 1
    gain = lambda **o: _angles_and_gain(_cfg("rope_yarn", factor=S, **o))[1]
    np.testing.assert_allclose(gain(mscale=0.707, mscale_all_dim=1.0), m(0.707) / m(1.0))
    np.testing.assert_allclose(gain(mscale=1.0, mscale_all_dim=1.0), 1.0)  # DeepSeek-V3's pair
    np.testing.assert_allclose(gain(mscale=0.707), m(1.0))
    np.testing.assert_allclose(gain(mscale=2.0, mscale_all_dim=1.0, attention_factor=1.5), 1.5)


def test_llama3_keeps_short_divides_long_and_blends_between():
    theta, gain = _angles_and_gain(_cfg("rope_llama3", base=B, factor=S, original_max_position=L0,
                                        low_freq_factor=1.0, high_freq_factor=4.0))
    wavelen = 2 * np.pi / THETA
    short, long = wavelen < 32 / 4, wavelen > 32 / 1
    assert short.tolist() == [True] + [False] * 31  # pair 0 only (wavelength 6.3 < 8)
    assert np.flatnonzero(long)[0] == 6  # pairs 6.. turn less than once within 32
    a = (32 / wavelen - 1) / (4 - 1)
    want = np.where(short, THETA, np.where(long, THETA / 4, (1 - a) * THETA / 4 + a * THETA))
    np.testing.assert_allclose(theta, want, rtol=1e-9)
    assert 0 < a[3] < 1 and THETA[3] / 4 < theta[3] < THETA[3]
    np.testing.assert_allclose(gain, 1.0)


def test_longrope_switches_factors_past_the_original_length():
    """Up to L_orig tokens theta_i / short_i, from L_orig + 1 on theta_i / long_i; q and k gain
    sqrt(1 + ln s / ln L_orig) (HF's default for LongRoPE), the logit its square."""
    short, long = 1 + I / 320, 1 + 3 * (I / 31) ** 2
    cfg = _cfg("rope_longrope", base=B, factor=S, original_max_position=L0,
               short_factor=tuple(short), long_factor=tuple(long))
    for L, want in [(16, THETA / short), (32, THETA / short), (33, THETA / long),
                    (64, THETA / long)]:
        theta, gain = _angles_and_gain(cfg, pos=1, length=L)
        np.testing.assert_allclose(theta, want, rtol=1e-9)
        np.testing.assert_allclose(gain, math.sqrt(1 + math.log(4) / math.log(32)), rtol=1e-9)
    assert models.head_path(cfg) == "general"
    _, gain = _angles_and_gain(_cfg("rope_longrope", factor=1.0))  # s <= 1: no gain, all 1
    np.testing.assert_allclose(gain, 1.0)


def test_longrope_options_read_back_from_json_stay_hashable():
    cfg = RunConfig(model=_cfg("rope_longrope", short_factor=(1.0,) * 32, long_factor=(2.0,) * 32))
    back = RunConfig.from_json(cfg.to_json())
    assert back == cfg and hash(back.model.enc) == hash(cfg.model.enc)


def test_xpos_scales_queries_up_and_keys_down_per_pair():
    cfg = _cfg("xpos", base=B, gamma=0.4, scale_base=512.0)
    zeta = (2 * I / 64 + 0.4) / 1.4
    n = 100
    x = jnp.tile(jnp.array([1.0, 0.0]), (n + 1, 1, D // 2))
    with jax.enable_x64(True):
        q, k = ENCODINGS["xpos"].rotate_pair(x.astype(jnp.float64), x.astype(jnp.float64),
                                             jnp.arange(n + 1), jnp.int32(n + 1), cfg)
        qn = np.linalg.norm(np.asarray(q[n, 0]).reshape(-1, 2), axis=-1)
        kn = np.linalg.norm(np.asarray(k[n, 0]).reshape(-1, 2), axis=-1)
        qa = np.asarray(q[1, 0]).reshape(-1, 2)
    np.testing.assert_allclose(qn, zeta ** (100 / 512), rtol=1e-9)
    np.testing.assert_allclose(kn, zeta ** (-100 / 512), rtol=1e-9)
    np.testing.assert_allclose(np.arctan2(qa[:, 1], qa[:, 0]), THETA, rtol=1e-9)  # RoPE's turn
    assert zeta[0] == pytest.approx(0.4 / 1.4) and zeta[-1] < 1
    # the logit of a query at n and a key at m: sum_i zeta_i^((n-m)/512) cos((m-n) theta_i)
    got = float(ENCODINGS["xpos"].kernel({}, 40, 10, cfg)[0])
    assert got == pytest.approx((zeta ** (30 / 512) * np.cos(-30 * THETA)).sum(), rel=1e-5)


def test_dynamic_kernel_is_the_heads_logit_past_the_original_length():
    """The automatic identity runs at L = 12 < the default L_orig; here L_orig = 4."""
    cfg = ModelConfig("rope_dynamic", d=8, heads=2,
                      enc=RS.RopeDynamicOptions(original_max_position=4))
    L = 12
    params = {"wq": jnp.eye(8), "wk": jnp.eye(8)}  # unused: rotary kernels are content-free
    got = _head_logits(params, cfg, _carrier("rope_dynamic", 8, L))
    i, j = np.tril_indices(L)
    want = ENCODINGS["rope_dynamic"].kernel({}, jnp.asarray(i), jnp.asarray(j), cfg)
    chex.assert_trees_all_close(got[:, i, j].T, want, atol=1e-4, rtol=1e-4)


def test_dynamic_head_reads_the_real_length_not_the_padding():
    """A sequence of 10 tokens padded to 14 turns as one of 10 (pos[length-1] + 1), and equals
    plain RoPE with the raised base b ((s 10/L0) - (s-1))^(d/(d-2))."""
    opts = RS.RopeDynamicOptions(factor=2.0, original_max_position=6)
    cfg = tiny("rope_dynamic", enc=opts)
    p = models.init_params(jax.random.key(0), cfg)
    b = tasks.sample_batch(cfg.task, jax.random.key(1), 4, 10, 10, 14)
    # jitted: a whole apply compiles once, where op by op each primitive compiled on its own
    logits, att = jax.jit(models.make_apply(cfg))(p, b.tokens, b.length)
    base = 1e4 * ((2 * 10 / 6) - 1) ** (16 / 14)
    rope = tiny("rope", enc=RopeOptions(base=base))
    logits_r, att_r = jax.jit(models.make_apply(rope, "general"))(p, b.tokens, b.length)
    chex.assert_trees_all_close((logits, att), (logits_r, att_r), atol=1e-5, rtol=1e-5)
    plain, _ = jax.jit(models.make_apply(tiny("rope"), "general"))(p, b.tokens, b.length)
    assert float(jnp.abs(plain - logits).max()) > 1e-3  # the base did move
    short = tasks.sample_batch(cfg.task, jax.random.key(1), 4, 6, 6, 14)  # <= L_orig: plain
    chex.assert_trees_all_close(jax.jit(models.make_apply(cfg))(p, short.tokens, short.length),
                                jax.jit(models.make_apply(tiny("rope")))(p, short.tokens,
                                                                        short.length),
                                atol=1e-5, rtol=1e-5)


# ---- Kerple ---------------------------------------------------------------------------------


def _kerple_params(name, r1, r2):
    r2_raw = LB.softplus_inverse(r2) if name == "kerple_log" else LB.logit(r2 / 2)
    return {"kerple_r1": jnp.asarray([LB.softplus_inverse(r1)] * 2, jnp.float32),
            "kerple_r2": jnp.asarray([r2_raw] * 2, jnp.float32)}


def test_kerple_biases_at_chosen_distances():
    dist = np.array([0, 1, 2, 5, 17, 100])
    cfg = ModelConfig("kerple_log", heads=2)
    got = np.asarray(ENCODINGS["kerple_log"].bias(_kerple_params("kerple_log", 0.7, 0.3),
                                                   jnp.asarray(dist), cfg))[:, 0]
    np.testing.assert_allclose(got, -0.7 * np.log(1 + 0.3 * dist), rtol=1e-5, atol=1e-6)
    cfg = ModelConfig("kerple_power", heads=2)
    got = np.asarray(ENCODINGS["kerple_power"].bias(_kerple_params("kerple_power", 0.7, 1.5),
                                                     jnp.asarray(dist), cfg))[:, 0]
    np.testing.assert_allclose(got, -0.7 * dist ** 1.5, rtol=1e-5, atol=1e-6)


def test_kerple_init_is_stated_and_parametrisation_keeps_range():
    for name, want in (("kerple_log", (1.0, 0.5)), ("kerple_power", (0.5, 1.0))):
        cfg = ModelConfig(name, heads=3)
        p = ENCODINGS[name].init(jax.random.key(0), cfg)
        r1, r2 = (LB.kerple_log_params if name == "kerple_log" else LB.kerple_power_params)(p)
        np.testing.assert_allclose(np.asarray(r1), want[0], rtol=1e-6)
        np.testing.assert_allclose(np.asarray(r2), want[1], rtol=1e-6)
    huge = {"kerple_r1": jnp.full((1,), -50.0), "kerple_r2": jnp.full((1,), 50.0)}
    r1, r2 = LB.kerple_power_params(huge)
    assert float(r1[0]) > 0 and 0 < float(r2[0]) <= 2


def test_kerple_power_gradient_is_finite_at_distance_zero():
    cfg = ModelConfig("kerple_power", heads=2)
    p = _kerple_params("kerple_power", 0.7, 1.5)
    g = jax.grad(lambda q: ENCODINGS["kerple_power"].bias(q, jnp.arange(-3, 4), cfg).sum())(p)
    assert all(np.isfinite(np.asarray(v)).all() for v in jax.tree.leaves(g))


@settings(deadline=None, max_examples=25)
@given(i=st.integers(0, 80), back=st.integers(0, 80), c=st.integers(0, 500),
       name=st.sampled_from(["kerple_log", "kerple_power"]))
def test_kerple_is_shift_invariant(i, back, c, name):
    cfg = ModelConfig(name, heads=2)
    p = _kerple_params(name, 0.9, 0.8)
    j = max(i - back, 0)
    kern = lambda a, b: ENCODINGS[name].kernel(p, jnp.asarray(a), jnp.asarray(b), cfg)
    chex.assert_trees_all_close(kern(i + c, j + c), kern(i, j), rtol=1e-6)


# ---- FIRE -----------------------------------------------------------------------------------


def _fire_params(c=0.3, threshold=6.0, hidden=5, H=2, seed=0):
    ks = jax.random.split(jax.random.key(seed), 4)
    return {"fire": {"w1": jax.random.normal(ks[0], (hidden,)),
                     "b1": jax.random.normal(ks[1], (hidden,)),
                     "w2": jax.random.normal(ks[2], (hidden, H)),
                     "b2": jax.random.normal(ks[3], (H,)),
                     "c": jnp.float32(LB.softplus_inverse(c)),
                     "threshold": jnp.float32(LB.softplus_inverse(threshold))}}


def _fire_numpy(p, i, j, c, threshold):
    f = {k: np.asarray(v, np.float64) for k, v in p["fire"].items()}
    psi = lambda x: np.log(c * x + 1)
    x = psi(i - j) / psi(max(threshold, i))
    return np.maximum(x * f["w1"] + f["b1"], 0) @ f["w2"] + f["b2"]


def test_fire_bias_at_chosen_points():
    p, cfg = _fire_params(), ModelConfig("fire", heads=2, enc=LB.FireOptions(hidden=5))
    for i, j in [(0, 0), (3, 1), (6, 0), (9, 2), (40, 39), (40, 0)]:
        got = np.asarray(ENCODINGS["fire"].kernel(p, i, j, cfg))
        np.testing.assert_allclose(got, _fire_numpy(p, i, j, 0.3, 6.0), rtol=1e-5, atol=1e-5)


def test_fire_is_shift_invariant_exactly_below_the_threshold():
    """b(i + s, j + s) = b(i, j) when i + s <= L_thr (both normalisers psi(L_thr)); above it the
    normaliser psi(i) grows with i and the bias moves."""
    p = _fire_params(threshold=10.0, hidden=16)
    cfg = ModelConfig("fire", heads=2, enc=LB.FireOptions(hidden=16))
    kern = lambda a, b: np.asarray(ENCODINGS["fire"].kernel(p, jnp.asarray(a), jnp.asarray(b),
                                                            cfg))
    i, j = np.tril_indices(7)  # i <= 6
    np.testing.assert_allclose(kern(i + 4, j + 4), kern(i, j), rtol=1e-6)  # i + 4 <= 10
    moved = np.abs(kern(i + 30, j + 30) - kern(i, j)).max(-1)  # per pair, the larger head
    assert (moved[i > j] > 1e-4).all() and (moved[i == j] < 1e-6).all()  # f(0) at distance 0


def test_fire_constants_stay_positive_and_init_as_stated():
    cfg = ModelConfig("fire", heads=3)
    p = ENCODINGS["fire"].init(jax.random.key(0), cfg)
    c, threshold = LB.fire_constants(p)
    assert float(c) == pytest.approx(0.1, rel=1e-5) and float(threshold) == pytest.approx(8.0)
    assert p["fire"]["w2"].shape == (32, 3)
    low = {"fire": dict(p["fire"], c=jnp.float32(-30.0), threshold=jnp.float32(-30.0))}
    c, threshold = LB.fire_constants(low)
    assert float(c) > 0 and float(threshold) > 0
    out = ENCODINGS["fire"].kernel(low, jnp.arange(5), jnp.zeros(5, int), cfg)
    assert np.isfinite(np.asarray(out)).all()


def test_fire_has_its_own_params_in_every_transformer_block():
    cfg = ModelConfig("fire", arch="transformer", layers=2, d=16, heads=2, query="all")
    p = transformer.init_params(jax.random.key(0), cfg, 8, 8)
    assert "encoding" not in p and {"block0", "block1"} <= set(p)
    w0, w1 = p["block0"]["encoding"]["fire"]["w1"], p["block1"]["encoding"]["fire"]["w1"]
    assert w0.shape == (32,) and not np.allclose(w0, w1)
    shared = transformer.init_params(jax.random.key(0), dataclasses.replace(cfg,
                                     encoding="kerple_log", enc=LB.KerpleLogOptions()), 8, 8)
    assert "encoding" in shared and "encoding" not in shared["block0"]


# ---- bad options ----------------------------------------------------------------------------


@pytest.mark.parametrize("name, opts, field", [
    ("rope_linear", {"factor": 0.0}, "model.enc.factor"),
    ("rope_linear", {"factor": -2.0}, "model.enc.factor"),
    ("rope_ntk", {"factor": float("nan")}, "model.enc.factor"),
    ("rope_yarn", {"factor": float("inf")}, "model.enc.factor"),
    ("rope_dynamic", {"original_max_position": 0}, "model.enc.original_max_position"),
    ("rope_yarn", {"original_max_position": -4}, "model.enc.original_max_position"),
    ("rope_llama3", {"original_max_position": 0}, "model.enc.original_max_position"),
    ("rope_yarn", {"beta_fast": 1.0, "beta_slow": 2.0}, "model.enc.beta_fast"),
    ("rope_yarn", {"beta_slow": 0.0}, "model.enc.beta_slow"),
    ("rope_yarn", {"attention_factor": float("nan")}, "model.enc.attention_factor"),
    ("rope_yarn", {"mscale": -1.0}, "model.enc.mscale"),
    ("rope_longrope", {"short_factor": (1.0, 2.0)}, "model.enc.short_factor"),
    ("rope_longrope", {"long_factor": (0.0,) * 32}, "model.enc.long_factor"),
    ("rope_longrope", {"long_factor": "1,2"}, "model.enc.long_factor"),
    ("rope_longrope", {"original_max_position": 1}, "model.enc.original_max_position"),
    ("rope_longrope", {"attention_factor": -1.0}, "model.enc.attention_factor"),
    ("rope_yarn", {"mscale_all_dim": float("inf")}, "model.enc.mscale_all_dim"),
    ("rope_llama3", {"low_freq_factor": 4.0, "high_freq_factor": 4.0},
     "model.enc.high_freq_factor"),
    ("rope_llama3", {"low_freq_factor": 0.0}, "model.enc.low_freq_factor"),
    ("rope_linear", {"base": 1.0}, "model.enc.base"),
    ("xpos", {"gamma": 0.0}, "model.enc.gamma"),
    ("xpos", {"scale_base": float("inf")}, "model.enc.scale_base"),
    ("kerple_log", {"r1_init": -1.0}, "model.enc.r1_init"),
    ("kerple_log", {"r2_init": float("inf")}, "model.enc.r2_init"),
    ("kerple_power", {"r2_init": 2.0}, "model.enc.r2_init"),
    ("kerple_power", {"r2_init": 0.0}, "model.enc.r2_init"),
    ("fire", {"c_init": 0.0}, "model.enc.c_init"),
    ("fire", {"threshold_init": float("nan")}, "model.enc.threshold_init"),
    ("fire", {"hidden": 0}, "model.enc.hidden"),
])
def test_bad_options_name_the_field(name, opts, field):
    bad = RunConfig(model=ModelConfig(name, enc=ENCODINGS[name].options(**opts)))
    with pytest.raises(ConfigError, match=field.replace(".", r"\.") + ": .*must"):
        validate(bad, eval_lengths=(32,))
    validate(RunConfig(model=ModelConfig(name)), eval_lengths=(32,))  # the defaults pass


def test_ntk_needs_a_head_wider_than_two():
    with pytest.raises(ConfigError, match=r"model\.d: .*d_head > 2"):
        validate(RunConfig(model=ModelConfig("rope_ntk", d=4, heads=2)))


# ---- end to end: the transformer (the head: tests/test_train.py::test_every_encoding_trains) -


@pytest.mark.parametrize("encoding", ["rope_dynamic", "xpos", "kerple_power", "fire"])
def test_new_encoding_trains_through_the_transformer(encoding):
    layers = 2 if ENCODINGS[encoding].per_layer else 1
    cfg = RunConfig(TaskConfig.of("shift", vocab=8, offset=2),
                    ModelConfig(encoding, arch="transformer", layers=layers, heads=2, d=16,
                                query="all"),
                    TrainConfig(steps=3, batch=8, lr=1e-2, lmin=6, lmax=10, seeds=(0,),
                                ckpt_every=4, ckpt_early=2, chunk=3))
    validate(cfg, eval_lengths=(24,))
    start = train.init_states(cfg)
    states = train.train(cfg)
    assert int(states.step[0]) == 3 and int(states.bad_step[0]) == -1
    moved = jax.tree.map(lambda a, b: float(jnp.abs(a - b).max()), states.params, start.params)
    enc_leaves = [v for path, v in jax.tree_util.tree_leaves_with_path(moved)
                  if any(getattr(k, "key", None) == "encoding" for k in path)]
    assert all(v > 0 for v in enc_leaves)  # the encoding's own params (if any) are trained


# ---- randomized positions -------------------------------------------------------------------


def test_random_positions_sorted_distinct_in_range_and_deterministic():
    lengths = jnp.array([3, 10, 7, 10, 1])
    pos = np.asarray(train.random_positions(jax.random.key(4), lengths, 10, 40))
    for row, n in zip(pos, np.asarray(lengths), strict=True):
        real = row[:n]
        assert (np.diff(real) > 0).all() and real.min() >= 0 and real.max() < 40
        assert (row[n:] == 39).all()
    again = np.asarray(train.random_positions(jax.random.key(4), lengths, 10, 40))
    other = np.asarray(train.random_positions(jax.random.key(5), lengths, 10, 40))
    assert (pos == again).all() and (pos != other).any()
    # the draw is a uniform subset: every position of [0, M) turns up, not only the first L
    many = np.asarray(train.random_positions(jax.random.key(0), jnp.full(400, 10), 10, 40))
    assert set(np.unique(many)) == set(range(40)) and many[:, 0].mean() < 8


def _rp(encoding="rope", M=32, arch="head", seeds=(0,), **model):
    cfg = tiny(encoding, steps=4, seeds=seeds, arch=arch, **model)
    return dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, random_positions=M))


def test_random_positions_train_deterministically_and_change_the_training():
    def two_steps(cfg):
        step = jax.jit(train.make_seed_step(cfg))
        state = train.init_states(cfg)
        state = jax.tree.map(lambda x: x[0], state)
        return [state := step(state)[0] for _ in range(2)]

    a, b = two_steps(_rp()), two_steps(_rp())
    chex.assert_trees_all_equal(a, b)
    off = two_steps(_rp(M=0))
    assert float(jnp.abs(a[-1].params["wq"] - off[-1].params["wq"]).max()) > 1e-6
    # the positions' key is the step's data key folded with POSITIONS: fresh every step and
    # never the sampler's own (split(data key) = fold_in(data key, 0 or 1))
    from lgjax.keys import DATA, stream

    data = stream(a[0].key, DATA, 0)
    kd = lambda k: tuple(np.asarray(jax.random.key_data(k)))
    used = {kd(k) for k in jax.random.split(data)} | {kd(stream(a[0].key, DATA, 1))}
    assert kd(jax.random.fold_in(data, train.POSITIONS)) not in used


def test_random_positions_leave_evaluation_at_zero_to_L():
    """Evaluation (models.make_apply) reads positions 0..L-1 whatever train.random_positions
    is, and equals the positional apply at those positions."""
    cfg = _rp("fire", M=64)
    p = models.init_params(jax.random.key(0), cfg)
    b = tasks.sample_batch(cfg.task, jax.random.key(1), 6, 4, 12, 12)
    # jitted: a whole apply compiles once, where op by op each primitive compiled on its own
    ev = jax.jit(models.make_apply(cfg))(p, b.tokens, b.length)
    off = jax.jit(models.make_apply(_rp("fire", M=0)))(p, b.tokens, b.length)
    chex.assert_trees_all_equal(ev, off)
    apply_at = jax.jit(models.make_apply_at(cfg))
    at = apply_at(p, b.tokens, b.length, jnp.tile(jnp.arange(12), (6, 1)))
    chex.assert_trees_all_close(at, ev, atol=2e-5, rtol=1e-4)
    shifted = apply_at(p, b.tokens, b.length, jnp.tile(jnp.arange(12) * 3 + 20, (6, 1)))
    assert float(jnp.abs(shifted[0] - ev[0]).max()) > 1e-4  # FIRE sees the positions


@pytest.mark.parametrize("encoding, arch", [("ape", "head"), ("rope", "transformer")])
def test_random_positions_train_any_encoding(encoding, arch):
    cfg = _rp(encoding, M=32, arch=arch, enc=ApeOptions(size=32) if encoding == "ape" else None,
              heads=2, layers=1)
    validate(cfg, eval_lengths=(16,))
    states = train.train(cfg)
    assert int(states.step[0]) == 4 and (np.asarray(states.bad_step) == -1).all()
    if encoding == "ape":  # rows beyond lmax = 10 received gradient
        init = train.init_states(cfg)
        moved = np.abs(np.asarray(states.params["ape"][0] - init.params["ape"][0])).sum(-1)
        assert (moved[10:] > 0).any()


@pytest.mark.parametrize("M, evals, ape, match", [
    (8, (), False, "training length 10"),  # lmax = 10
    (16, (24,), False, "evaluation length 24"),
    (-1, (), False, "integer >= 0"),
    (40, (16,), True, "model.enc.size = 32"),
])
def test_random_positions_validation(M, evals, ape, match):
    cfg = _rp("ape" if ape else "rope", M=M, enc=ApeOptions(size=32) if ape else None)
    field = r"train\.random_positions \(--random-positions\): "  # the config's and the flag's
    with pytest.raises(ConfigError, match=field + ".*" + match):
        validate(cfg, eval_lengths=evals)
