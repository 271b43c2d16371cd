"""Content-aware encodings (lgjax.content) and the partial rotaries (lgjax.rope_scaling):
each entry's attention through the one-layer head against the paper's equations worked here in
numpy, loop by loop; causality; seed-batched equals seed-alone; bad options named.

Sources (the formulas below are written from these, not from lgjax):
  fox   Lin et al. 2025, "Forgetting Transformer: Softmax Attention with a Forget Gate", eq. for
        D_ij = sum_{l=j+1}^{i} log f_l; zhixuan-lin/forgetting-transformer@883f260c,
        src/forgetting_transformer/ops/forgetting_attention.py (the reference attention:
        decay_bias = log_lambda_i - log_lambda_j, log_lambda = cumsum(logsigmoid(fgate_logit)))
        and model/forgetting_transformer/modeling_forgetting_transformer.py (fgate_proj).
  cope  Golovneva et al. 2024, "Contextual Position Encoding", eqs. (3)-(5);
        facebookresearch/RAM@5420e201, projects/cope/src/cope/context_position.py
        (ContextPosSelfAttn, cope_nodiv off: (q.k + q.e[p]) / sqrt(d_head)).
  dape  Zheng et al. 2024, "DAPE: Data-Adaptive Positional Encoding for Length Extrapolation",
        A + B + f(A, B); chuanyang-Zheng/DAPE@5667d281, megatron/model/positional_embeddings.py
        (ParallelKerpleLog_C: x + bias + mlp2(cat(x, bias)), Linear(2H, w), LeakyReLU,
        Linear(w, H)).
  prope Barbero et al. 2025, "Round and Round We Go! What makes Rotary Positional Encodings
        useful?", apply_p_rope (rope_angles = int(p d_head // 2)); the same in transformers
        5.23.0 modeling_rope_utils._compute_proportional_rope_parameters.
  rope_partial  transformers 5.23.0 modeling_rope_utils._compute_default_rope_parameters
        (dim = int(head_dim * partial_rotary_factor), inv_freq = base^(-arange(0, dim, 2)/dim))
        and models/stablelm/modeling_stablelm.py (q[..., :rotary_ndims] rotated, the rest not).
"""

import dataclasses
import json
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lgjax import content as CT
from lgjax import models, plugins, train, transformer
from lgjax import rope_scaling as RS
from lgjax.config import ConfigError, ModelConfig, RunConfig, TaskConfig
from lgjax.encodings import ENCODINGS
from lgjax.validation import validate
from tests.conftest import tiny

CONTENT = ("fox", "cope", "dape")
L, D, H = 6, 8, 2
DH = D // H


def _sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def _setup(name, **opts):
    """A head with query=all, its params (random where the init is zeros), tokens; and the
    head's states, queries and keys computed here in float64."""
    cfg = RunConfig(TaskConfig("shift", vocab=8),
                    ModelConfig(name, d=D, heads=H, query="all",
                                enc=ENCODINGS[name].options(**opts)))
    params = models.init_params(jax.random.key(0), cfg)
    if "cope_e" in params:  # zeros at init (the authors'); random to exercise the term
        params["cope_e"] = jax.random.normal(jax.random.key(7), params["cope_e"].shape)
    if "fox_w" in params:  # gates away from 1/2
        params["fox_w"] = jax.random.normal(jax.random.key(8), params["fox_w"].shape)
        params["fox_b"] = jnp.array([0.5, -1.0])
    tokens = jnp.array([3, 1, 4, 1, 5, 2])
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    x = p["embed"][np.asarray(tokens)]
    q = (x @ p["wq"]).reshape(L, H, DH)
    k = (x @ p["wk"]).reshape(L, H, DH)
    return cfg, params, tokens, p, x, q, k


def _softmax_rows(logits):
    """Causal softmax of hand logits [H, L, L] (keys j <= i)."""
    att = np.zeros_like(logits)
    for h in range(H):
        for i in range(L):
            z = logits[h, i, :i + 1]
            e = np.exp(z - z.max())
            att[h, i, :i + 1] = e / e.sum()
    return att


def _head_attention(cfg, params, tokens):
    _, att = jax.jit(lambda p: models.general_apply(p, tokens, jnp.int32(L), cfg.model))(params)
    return np.asarray(att)


def test_fox_is_the_sum_of_log_forget_gates_after_the_key_up_to_the_query():
    cfg, params, tokens, p, x, q, k = _setup("fox")
    logits = np.zeros((H, L, L))
    for h in range(H):
        f = _sig(x @ p["fox_w"][:, h] + p["fox_b"][h])  # f_t per token
        for i in range(L):
            for j in range(i + 1):
                decay = sum(math.log(f[l]) for l in range(j + 1, i + 1))  # l in (j, i]
                logits[h, i, j] = q[i, h] @ k[j, h] / math.sqrt(DH) + decay
    np.testing.assert_allclose(_head_attention(cfg, params, tokens), _softmax_rows(logits),
                               atol=2e-6)
    # the diagonal carries no decay: the key's own gate is not counted
    f0 = _sig(x @ p["fox_w"][:, 0] + p["fox_b"][0])
    assert abs(logits[0, 3, 3] - q[3, 0] @ k[3, 0] / math.sqrt(DH)) < 1e-12
    assert abs(logits[0, 3, 2] - q[3, 0] @ k[2, 0] / math.sqrt(DH) - math.log(f0[3])) < 1e-12


@pytest.mark.parametrize("max_pos", [2, 64])  # 2: positions clamped; 64: never
def test_cope_counts_gates_from_key_to_query_and_interpolates_the_table(max_pos):
    cfg, params, tokens, p, x, q, k = _setup("cope", max_pos=max_pos)
    e = p["cope_e"]  # [max_pos + 1, d_head], shared by the heads
    logits = np.zeros((H, L, L))
    clamped = 0
    for h in range(H):
        for i in range(L):
            gates = [_sig(q[i, h] @ k[jj, h] / math.sqrt(DH)) for jj in range(i + 1)]
            for j in range(i + 1):
                pos = sum(gates[j:i + 1])  # both ends included
                clamped += pos > max_pos
                pos = min(pos, max_pos)
                lo, hi = math.floor(pos), math.ceil(pos)
                z = (q[i, h] @ e[lo]) * (1 - (pos - lo)) + (q[i, h] @ e[hi]) * (pos - lo)
                logits[h, i, j] = (q[i, h] @ k[j, h] + z) / math.sqrt(DH)
    assert (clamped > 0) == (max_pos == 2)
    np.testing.assert_allclose(_head_attention(cfg, params, tokens), _softmax_rows(logits),
                               atol=2e-6)


@pytest.mark.parametrize("base", ["kerple_log", "alibi"])
def test_dape_adds_the_base_bias_and_an_mlp_of_both_across_heads(base):
    cfg, params, tokens, p, x, q, k = _setup("dape", base=base, width=5)
    if base == "kerple_log":
        r1, r2 = np.log1p(np.exp(p["kerple_r1"])), np.log1p(np.exp(p["kerple_r2"]))
        bias = lambda h, dist: -r1[h] * math.log(1 + r2[h] * dist)
        assert np.allclose(r1, 1.0) and np.allclose(r2, 0.5)  # the options' defaults
    else:  # Press et al.'s geometric slopes for 2 heads: 2^-4, 2^-8
        bias = lambda h, dist: -(2.0 ** (-8.0 * (h + 1) / H)) * dist
    leaky = lambda z: np.where(z > 0, z, 0.01 * z)
    logits = np.zeros((H, L, L))
    for i in range(L):
        for j in range(i + 1):
            a = np.array([q[i, h] @ k[j, h] / math.sqrt(DH) for h in range(H)])
            b = np.array([bias(h, i - j) for h in range(H)])
            hidden = leaky(np.concatenate([a, b]) @ p["dape_w1"] + p["dape_c1"])  # 2H -> w
            logits[:, i, j] = a + b + hidden @ p["dape_w2"] + p["dape_c2"]  # w -> H
    np.testing.assert_allclose(_head_attention(cfg, params, tokens), _softmax_rows(logits),
                               atol=2e-6)


def test_prope_keeps_the_highest_frequencies_over_the_full_width():
    m = ModelConfig("prope", d=32, heads=2, enc=RS.PRopeOptions(base=100.0, p=0.5))
    dh = 16  # rope_angles = int(0.5 * 16 // 2) = 4 of the 8 pairs
    want = [100.0 ** (-2.0 * i / dh) if i < 4 else 0.0 for i in range(dh // 2)]
    np.testing.assert_allclose(RS.prope_freqs64(m), want, rtol=1e-15)
    m = dataclasses.replace(m, enc=RS.PRopeOptions(base=100.0, p=0.3))  # int(2.4) = 2 pairs
    assert (RS.prope_freqs64(m) > 0).sum() == 2


def test_rope_partial_rotates_the_leading_dims_with_frequencies_over_that_width():
    m = ModelConfig("rope_partial", d=32, heads=2,
                    enc=RS.RopePartialOptions(base=100.0, partial_rotary_factor=0.5))
    r = 8  # int(16 * 0.5): dims 0..7 (pairs 0..3) rotated by base^(-2i/8)
    want = [100.0 ** (-2.0 * i / r) if i < 4 else 0.0 for i in range(8)]
    np.testing.assert_allclose(RS.partial_freqs64(m), want, rtol=1e-15)
    # through the rotation: dims past r are untouched, the leading pairs turn by pos * theta
    x = jax.random.normal(jax.random.key(0), (5, 2, 16))
    out = np.asarray(ENCODINGS["rope_partial"].rotate(x, jnp.arange(5), m))
    np.testing.assert_array_equal(out[..., r:], np.asarray(x)[..., r:])
    ang = 3 * want[1]
    x1, x2 = np.asarray(x)[3, :, 2], np.asarray(x)[3, :, 3]
    np.testing.assert_allclose(out[3, :, 2], x1 * math.cos(ang) - x2 * math.sin(ang), atol=1e-5)
    # the two readings differ: p-RoPE's kept frequencies are the full width's
    mp = ModelConfig("prope", d=32, heads=2, enc=RS.PRopeOptions(base=100.0, p=0.5))
    assert not np.allclose(RS.prope_freqs64(mp), RS.partial_freqs64(m))


@pytest.mark.parametrize("name", CONTENT)
def test_content_entries_are_causal(name):
    """The gradient of each row's logits with respect to the queries, keys and states of later
    tokens is zero (the plugin check), and through the head and the transformer a row's output
    does not move when later tokens change."""
    cfg, params, tokens, *_ = _setup(name)
    plugins.check_content(ENCODINGS[name], params, cfg.model, L)
    later = tokens.at[3:].set(jnp.array([7, 0, 6]))
    a, b = (jax.jit(lambda t: models.general_apply(params, t, jnp.int32(L), cfg.model))(t)
            for t in (tokens, later))
    np.testing.assert_array_equal(np.asarray(a[0][:3]), np.asarray(b[0][:3]))
    assert float(jnp.abs(a[0][3:] - b[0][3:]).max()) > 1e-4
    m = dataclasses.replace(cfg.model, arch="transformer", layers=2)
    tp = transformer.init_params(jax.random.key(0), m, 8, 8)
    run = jax.jit(lambda t: transformer.Transformer(m, 8, 8).apply({"params": tp}, t,
                                                                    jnp.int32(L))[0])
    np.testing.assert_allclose(np.asarray(run(tokens)[:3]), np.asarray(run(later)[:3]),
                               atol=1e-6)


def test_a_leaking_content_behaviour_is_refused_by_the_check():
    cfg, params, *_ = _setup("fox")
    leak = dataclasses.replace(
        ENCODINGS["fox"], content=lambda params, v, cfg: v.logits + v.x.sum())
    with pytest.raises(ValueError, match="not causal: row 0's logits depend on the states"):
        plugins.check_content(leak, params, cfg.model, L)
    # a content behaviour under a positional kind would be skipped by the fast heads
    with pytest.raises(ValueError, match="has a content behaviour but kind 'bias'"):
        plugins.check_encoding("mislabelled", dataclasses.replace(ENCODINGS["fox"], kind="bias"))


@pytest.mark.parametrize("name", CONTENT)
def test_head_path_is_general_and_says_why(name):
    m = tiny(name).model
    assert models.head_path(m) == "general"
    assert models.head_path_reason(m).startswith("general (content-aware encoding")


@pytest.mark.parametrize("name", CONTENT)
def test_seed_batched_equals_seed_alone(name):
    """Under vmap, the path a few seeds take (lax.map's bit-for-bit equality does not depend on
    the encoding: tests/test_train.py). vmap reorders float sums, which Adam's normalised step
    lifts to ~1e-4 on parameters whose gradient is near 0 (DAPE's MLP biases)."""
    def run(seeds):
        cfg = tiny(name, seeds=seeds, steps=3, heads=2)
        return train.train(cfg, runner=train.make_chunk_runner(cfg, strategy="vmap")).params

    both, alone = run((0, 1)), run((1,))
    one = jax.tree.map(lambda a: a[1], both), jax.tree.map(lambda a: a[0], alone)
    chex.assert_trees_all_close(*one, atol=1e-3)
    # and the two seeds trained apart (not one seed's params copied)
    assert float(jnp.abs(both["wq"][0] - both["wq"][1]).max()) > 1e-2


@pytest.mark.parametrize("name, opts, field", [
    ("fox", {"w_std": -1.0}, "model.enc.w_std"),
    ("fox", {"b_init": float("nan")}, "model.enc.b_init"),
    ("cope", {"max_pos": 0}, "model.enc.max_pos"),
    ("dape", {"base": "t5"}, "model.enc.base"),
    ("dape", {"width": 0}, "model.enc.width"),
    ("dape", {"r1_init": -1.0}, "model.enc.r1_init"),
    ("prope", {"p": 0.0}, "model.enc.p"),
    ("prope", {"p": 0.01}, "model.enc.p"),
    ("rope_partial", {"partial_rotary_factor": 1.5}, "model.enc.partial_rotary_factor"),
    ("rope_partial", {"partial_rotary_factor": 0.05}, "model.enc.partial_rotary_factor"),
])
def test_bad_options_name_the_field(name, opts, field):
    bad = RunConfig(model=ModelConfig(name, enc=ENCODINGS[name].options(**opts)))
    with pytest.raises(ConfigError, match=field.replace(".", r"\.") + ": "):
        validate(bad, eval_lengths=(32,))
    validate(RunConfig(model=ModelConfig(name)), eval_lengths=(32,))  # the defaults pass


def test_content_kernel_says_it_is_undefined():
    with pytest.raises(ConfigError, match="content-aware: it has no positional-only kernel"):
        ENCODINGS["cope"].kernel({}, 0, 0, ModelConfig("cope"))
    assert CT.FoxOptions().w_std == 0.02 and CT.CopeOptions().max_pos == 64


def test_profile_of_a_content_encoding_says_why_the_kernel_instruments_do_not_apply(
        tmp_path, capsys, tiny_quick):
    """The training-free instruments give one line each (card, profile.json), never a number;
    the trained ones run and are compared with the canonical encodings; the kernels learned are
    read as the data-averaged term, labelled, the same as contract-lab --run-dir reads them."""
    from lgjax.harness import cli
    from lgjax.profile import command, compare

    tiny_quick(ib_eval=32, rz_eval=32, ib_steps=5, rz_steps=5)
    assert command.main(command.Config("fox", quick=True, out=str(tmp_path / "p"))) == 0
    printed = capsys.readouterr().out
    got = json.loads((tmp_path / "p" / "profile.json").read_text())
    s = got["summary"]
    assert s["contract"] == {"undefined": "undefined for fox: a content-aware encoding (kind "
                             "content) has no positional-only kernel; its positional term reads "
                             "queries, keys or token states"}
    assert s["alpha"]["undefined"].startswith("alpha_L undefined for fox: it is defined on a "
                                              "positional-only head")
    learned = s["contract_learned"]["K1"]  # the data-averaged term of each seed, labelled
    assert learned["averaged"].startswith("data-averaged positional term (logits minus content")
    assert learned["kernels"] == 1 and learned["content_sd"] >= 0.0
    assert f"as its {learned['averaged']}: K=1: shift error" in printed
    # the comparison with every canonical encoding, in profile.json and on the card
    comp = got["comparison"]
    assert set(comp["implicit_bias"]["vs"]) == {"ape", "nope", "alibi", "sinusoidal", "rope"}
    assert comp["implicit_bias"]["vs"]["rope"]["verdict"] in ("better", "worse",
                                                              "indistinguishable")
    assert comp["realizability_1L1H"]["vs"]["rope"]["method"] == "none"  # one task, one seed
    assert got["comparison_rule"] == compare.RULE
    assert "Comparison, implicit bias (accuracy at L=48" in printed
    assert f"Contract (at init): {s['contract']['undefined']}." in printed
    assert f"Realizability (alpha_L, training-free): {s['alpha']['undefined']}." in printed
    ib = got["instruments"]["implicit_bias"]["K1"]
    assert np.asarray(ib["accuracy"]).shape == (1, len(got["instruments"]["implicit_bias"]
                                                       ["lengths"]))
    assert s["realizability"]["tasks"]["prev"]["train_acc"] >= 0.0
    assert "undefined (content-aware)" in (tmp_path / "p" / "profile.html").read_text()
    run_dir = tmp_path / "p" / "checkpoints" / "quick" / "multiseed-K1" / "fox"
    assert cli.main(["contract-lab", "--run-dir", str(run_dir),
                     "--out", str(tmp_path / "lab")]) == 0
    lab = json.loads((tmp_path / "lab" / "results.json").read_text())
    assert lab["trained"]["averaged"] == learned["averaged"]
    assert [[{k: h[k] for k in learned if k in h} for h in seed]
            for seed in lab["trained"]["profiles"]] == \
        got["instruments"]["implicit_bias"]["K1"]["contract"]
    assert lab["encodings"]["cope"]["undefined"].startswith("undefined for cope")


def test_the_lab_reads_a_content_encodings_term_averaged_over_the_evaluation_data():
    """fox's term at (query d, key 0) is sum_{l=1}^{d} log sigmoid(w.x_l + b), x_l the token's
    embedding: averaged here in numpy over the seed's evaluation sequences; with w = 0 every
    sequence gives d log sigmoid(b) (an ALiBi), spread 0, shift-invariant."""
    from lgjax import keys, tasks
    from lgjax.studies.contract import averaged

    rc = RunConfig(TaskConfig(), ModelConfig("fox", heads=2))
    params = models.init_params(jax.random.key(0), rc)
    params["fox_b"] = jnp.array([0.0, 1.5])
    test, shift, n = 12, 5, 16
    L = averaged.length(test, shift)
    assert L == 13  # the pair (2, 7) shifted by 5 needs positions up to 12
    tokens = np.asarray(tasks.sample_batch(rc.task, keys.stream(keys.seed_key(3), keys.EVAL, L),
                                           n, L, L, L).tokens)
    x = np.asarray(params["embed"], np.float64)[tokens]  # [n, L, d]
    log_f = np.log(_sig(x @ np.asarray(params["fox_w"], np.float64)
                        + np.asarray(params["fox_b"], np.float64)))  # [n, L, H]
    term = np.cumsum(log_f[:, 1:test], axis=1)  # [n, d = 1..test-1, H]
    heads = averaged.profiles(params, rc, 3, test, shift, n)
    for h in range(2):
        np.testing.assert_allclose(heads[h]["curve"], term[..., h].mean(0), rtol=1e-5)
        assert heads[h]["content_sd"] == pytest.approx(term[..., h].std(0).mean(), rel=1e-4)
    params["fox_w"] = jnp.zeros_like(params["fox_w"])
    for h, p in enumerate(averaged.profiles(params, rc, 3, test, shift, n)):
        np.testing.assert_allclose(p["curve"], np.arange(1, test) * np.log(_sig([0.0, 1.5][h])),
                                   rtol=1e-5)
        assert p["content_sd"] < 1e-6 and p["shift_error"] < 1e-5
        assert p["monotonic_breaks"] == 0 and p["collisions"] == 0


@pytest.mark.parametrize("name", CONTENT)
def test_the_contract_matrix_reads_the_logits_the_block_made(name):
    """contract-train's readout recomputes each block's query-row logits: for a content-aware
    encoding, from the block's own view; their softmax is the attention the model used."""
    from lgjax.studies.contract import measure

    m = ModelConfig(name, arch="transformer", layers=2, d=D, heads=H, query="all")
    params = transformer.init_params(jax.random.key(0), m, 8, 8)
    if name == "cope":
        for b in ("block0", "block1"):
            e = params[b]["encoding"]["cope_e"]
            params[b]["encoding"]["cope_e"] = jax.random.normal(jax.random.key(3), e.shape)
    tokens, n = jnp.array([3, 1, 4, 1, 5, 2, 0, 0]), 6
    _, att_AxL, logits_AxL = jax.jit(measure.query_readout(m, 8, 8))(params, tokens,
                                                                     jnp.int32(n))
    want = jax.nn.softmax(jnp.where(jnp.arange(8) < n, logits_AxL, -1e30), axis=-1)
    np.testing.assert_allclose(np.asarray(att_AxL), np.asarray(want), atol=1e-6)


def test_dape_reads_the_randomized_positions():
    """Training at random positions reaches the content view (DAPE's base bias reads pos); the
    forgetting gate and CoPE read token order only, so the same positions leave them unchanged."""
    cfg = tiny("dape", heads=2)
    p = models.init_params(jax.random.key(0), cfg)
    tokens, n = jnp.array([[3, 1, 4, 1, 5, 2, 0, 6]]), jnp.array([8])
    apply_at = jax.jit(models.make_apply_at(dataclasses.replace(
        cfg, model=dataclasses.replace(cfg.model, query="all"))))
    at = lambda pos: np.asarray(apply_at(p, tokens, n, pos[None])[1])
    assert np.abs(at(jnp.arange(8) * 3) - at(jnp.arange(8))).max() > 1e-4
    fox = tiny("fox", heads=2, query="all")
    pf = models.init_params(jax.random.key(0), fox)
    fox_at = jax.jit(models.make_apply_at(fox))
    np.testing.assert_array_equal(np.asarray(fox_at(pf, tokens, n, (jnp.arange(8) * 3)[None])[1]),
                                  np.asarray(fox_at(pf, tokens, n, jnp.arange(8)[None])[1]))
    rp = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, random_positions=32,
                                                            steps=3))
    validate(rp, eval_lengths=(16,))
    states = train.train(rp)
    assert int(states.step[0]) == 3 and (np.asarray(states.bad_step) == -1).all()


def test_contract_train_counts_a_per_layer_encodings_params_in_every_block():
    from types import SimpleNamespace

    from lgjax.studies.contract import measure

    m = ModelConfig("fox", arch="transformer", layers=2, d=D, heads=H)
    params = jax.tree.map(lambda x: x[None], transformer.init_params(jax.random.key(0), m, 8, 8))
    t = SimpleNamespace(states=SimpleNamespace(params=params), config=RunConfig(model=m))
    counts = measure.parameter_counts(t)
    assert counts["encoding"] == 2 * (D * H + H)  # w [d, H] and b [H] per block
    assert counts["total"] == sum(x.size for x in jax.tree.leaves(params))


def test_cope_with_every_gate_at_one_is_a_clipped_relative_logit():
    """The restriction alpha_L is read on for cope: gates at 1 give p_ij = min(i - j + 1,
    max_pos), so for a fixed query the positional term depends on min(i - j, max_pos - 1) only,
    and takes a different value per offset below it (relclip with clip = max_pos - 1)."""
    max_pos, n = 4, 9
    e = jax.random.normal(jax.random.key(2), (max_pos + 1, 3))
    q = jnp.tile(jax.random.normal(jax.random.key(3), (1, 1, 3)), (n, 1, 1))  # content removed
    causal = jnp.tril(jnp.ones((n, n), bool))
    p = CT.cope_positions(jnp.full((1, n, n), 1e4), causal, max_pos)  # sigmoid = 1
    i, j = np.tril_indices(n)
    np.testing.assert_array_equal(np.asarray(p[0])[i, j], np.minimum(i - j + 1, max_pos))
    z = np.asarray(CT.cope_term(q, e, p))[0]
    by_offset = {}
    for a, b in zip(i, j):
        by_offset.setdefault(min(a - b, max_pos - 1), set()).add(round(float(z[a, b]), 5))
    assert all(len(v) == 1 for v in by_offset.values())  # one value per clipped offset
    assert len({next(iter(v)) for v in by_offset.values()}) == max_pos  # and all different
    enc, opts, label = CT.cope_restriction(CT.CopeOptions(max_pos=max_pos))
    assert (enc, opts.clip) == ("relclip", max_pos - 1) and "every gate at 1" in label


def test_the_profile_reads_cope_alpha_on_its_restriction_and_says_so(monkeypatch):
    from lgjax.profile import instruments, recipes, summary

    calls = []
    real = instruments.alpha

    def spy(name, recipe, options=None):
        calls.append((name, options))
        return real(name, recipe, options)

    monkeypatch.setattr(instruments, "alpha", spy)
    tiny = dataclasses.replace(recipes.RECIPES["tiny"], alpha_steps=2)
    got = instruments.alpha("cope", tiny)
    assert calls == [("cope", None), ("relclip", ENCODINGS["relclip"].options(clip=63))]
    assert got["restriction"].startswith("of CoPE with every gate at 1")
    assert json.loads(json.dumps(got)) == got  # as profile.json holds it
    assert set(summary.alpha({"alpha": got})) == set(got["tasks"])
    assert instruments.alpha("fox", tiny)["undefined"].endswith(
        "(no positional restriction of it is defined here)")
