"""The contract lab on registered encodings: their kernels read at the causal mirror in float64, a
user's encoding from --plugin, and a trained run's final parameters from --run-dir."""

import json
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lgjax import checkpoints, keys, models, train
from lgjax.checkpoints import driver
from lgjax.config import ConfigError, ModelConfig
from lgjax.encodings import ENCODINGS, AlibiOptions, t5_bucket
from lgjax.harness.cli import main
from lgjax.studies.contract import lab as contract_lab
from lgjax.studies.contract import scores as C
from tests.conftest import tiny
from tests.test_integrity import DAMAGE

TESTS = Path(__file__).parent


def all_pairs(ds):
    ds = list(ds)
    return [[a, b] for k, a in enumerate(ds) for b in ds[k + 1:]]


def lab_params(name, cfg=None):
    rc = contract_lab.lab_run_config(name, cfg or contract_lab.Config())
    return models.init_params(keys.stream(keys.seed_key(0), keys.INIT), rc), rc


def test_kernels_are_read_at_the_causal_mirror():
    params, rc = lab_params("ape")
    kernel = ENCODINGS["ape"].kernel
    score = C.kernel_score(kernel, params, rc.model, None)
    i, j = np.array([0, 3, 20, 9]), np.array([5, 3, 7, 30])
    want = np.asarray(kernel(params, np.maximum(i, j), np.minimum(i, j), rc.model))[:, 0]
    np.testing.assert_allclose(score(i, j), want, rtol=1e-5, atol=1e-6)  # want: float32
    np.testing.assert_array_equal(score(i, j), score(j, i))
    alibi = C.kernel_score(ENCODINGS["alibi"].kernel, {}, ModelConfig("alibi"), None)
    d = np.arange(1, 20)
    np.testing.assert_array_equal(alibi(0 * d, d), -1.0 * d)  # the bias at |i - j|


def test_registered_alibi_and_clip_are_the_stand_ins_less_the_content_term():
    qk = C.Q @ C.K
    alibi = C.kernel_score(ENCODINGS["alibi"].kernel, {},
                           ModelConfig("alibi", enc=AlibiOptions(slope=0.07)), None)
    np.testing.assert_allclose(C.distance_curve(alibi, 96), C.distance_curve(C.alibi, 96) - qk,
                               rtol=0, atol=1e-12)
    table = {"relbias": -C.REL_SLOPE * np.arange(C.CLIP + 1.0)[:, None]}  # float64 params
    clip = C.kernel_score(ENCODINGS["relclip"].kernel, table, ModelConfig("relclip"), None)
    curve = C.distance_curve(clip, 96)
    np.testing.assert_allclose(curve, C.distance_curve(C.relative, 96) - qk, rtol=0, atol=1e-12)
    assert C.collision_pairs(curve).tolist() == all_pairs(range(C.CLIP, 96))


def test_registered_nope_and_t5_collide_exactly_where_they_must():
    nope = C.kernel_score(ENCODINGS["nope"].kernel, {}, ModelConfig("nope"), None)
    assert C.collision_pairs(C.distance_curve(nope, 96)).tolist() == all_pairs(range(1, 96))
    m = ModelConfig("t5")  # distinct rows: two distances collide iff they share a bucket
    t5 = C.kernel_score(ENCODINGS["t5"].kernel, {"relbias": jnp.arange(32.0)[:, None]}, m, None)
    bucket = np.asarray(t5_bucket(np.arange(1, 96), m))
    same = [[a, b] for a, b in all_pairs(range(1, 96)) if bucket[a - 1] == bucket[b - 1]]
    assert C.collision_pairs(C.distance_curve(t5, 96)).tolist() == same


def rope_content_score(i, j):
    """rot(Q, i) . rot(K, j) through the registered rotation (d = 8: the lab's frequencies)."""
    enc, cfg = ENCODINGS["rope"], ModelConfig("rope", d=8)
    rot = lambda x, p: enc.rotate(jnp.asarray(x)[None, None, :], jnp.asarray([p]), cfg)[0, 0]
    return float(rot(C.Q, i) @ rot(C.K, j))


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 500), st.integers(0, 60), st.integers(0, 60))
def test_registered_rope_shift_error_is_float_rounding_in_float64(shift, i, j):
    with jax.enable_x64(True):
        err = abs(rope_content_score(i, j) - rope_content_score(i + shift, j + shift))
        assert abs(rope_content_score(i, j) - C.rope(i, j)) < 1e-12
    assert err < C.SHIFT_TOL


def test_float32_rope_rounding_exceeds_the_lab_tolerance():
    """Why the lab reads kernels in float64: float32 rounding alone is ~1e-6."""
    err32 = abs(rope_content_score(2, 7) - rope_content_score(2 + 517, 7 + 517))
    assert err32 > C.SHIFT_TOL
    params, rc = lab_params("rope")
    p = C.profile(C.kernel_score(ENCODINGS["rope"].kernel, params, rc.model, None), 96, 517)
    assert p["shift_error"] < C.SHIFT_TOL and p["shift_invariant"] is True


@pytest.mark.parametrize("train_h, test", [(32, 96), (10, 11), (5, 50), (40, 30)])
def test_registered_ape_out_of_table_fraction(train_h, test):
    cfg = contract_lab.Config(train=train_h, test=test)
    params, rc = lab_params("ape", cfg)
    horizon = ENCODINGS["ape"].horizon(rc.model, rc.train)
    assert horizon == train_h
    curve = C.distance_curve(C.kernel_score(ENCODINGS["ape"].kernel, params, rc.model, horizon),
                             test)
    assert C.out_of_table(curve) == pytest.approx(max(test - train_h, 0) / (test - 1))


def test_per_head_profiles():
    m = ModelConfig("alibi", d=16, heads=4, enc=AlibiOptions(slopes="geometric"))
    ps = C.kernel_profiles(ENCODINGS["alibi"].kernel, {}, m, None, test=40)
    assert len(ps) == 4
    for h, p in enumerate(ps):
        assert p["shift_invariant"] is True and p["monotonic_breaks"] == 0
        np.testing.assert_allclose(p["curve"], -(2.0 ** (-8.0 * (h + 1) / 4)) * np.arange(1, 40))


def test_registered_profiles_at_the_lab_defaults():
    reg = contract_lab.registered(contract_lab.Config())
    assert set(reg) == set(ENCODINGS)
    content = {n for n, e in ENCODINGS.items() if e.kind == "content"}
    assert content and all(reg[n]["heads"] == [] and "content-aware" in reg[n]["undefined"]
                           for n in content)  # one line, no numbers
    reg = {n: e for n, e in reg.items() if n not in content}
    p = {name: e["heads"][0] for name, e in reg.items()}
    assert all(len(e["heads"]) == 1 for e in reg.values())
    for name in ("rope", "alibi", "t5", "relclip", "nope"):
        assert p[name]["shift_invariant"] is True, name
    for name in ("ape", "sinusoidal"):
        assert p[name]["shift_invariant"] is False, name
    assert p["ape"]["out_of_table"] == pytest.approx(64 / 95) and reg["ape"]["horizon"] == 32
    assert p["alibi"]["collisions"] == 0 and p["alibi"]["monotonic_breaks"] == 0
    for name in ("t5", "relclip", "nope"):  # zero tables at init: every pair collides
        assert p[name]["collisions"] == 95 * 94 // 2, name


def lab_cli(tmp_path, capsys, *argv):
    """`lgjax contract-lab ARGV --out tmp/out` in this process: (exit code, captured output)."""
    rc = main(["contract-lab", *argv, "--out", str(tmp_path / "out")])
    return rc, capsys.readouterr()


def test_encoding_module_end_to_end(tmp_path, capsys, monkeypatch, fresh_plugins):
    monkeypatch.syspath_prepend(str(TESTS))
    rc, printed = lab_cli(tmp_path, capsys, "--plugin", "example_encoding")
    assert rc == 0, printed.err
    row = next(line for line in printed.out.splitlines() if line.startswith("log_bias"))
    assert row.split()[1:] == ["0.00e+00", "yes", "0.000", "0/4465", "0"]
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert res["encodings"]["log_bias"]["kind"] == "bias"
    np.testing.assert_allclose(res["encodings"]["log_bias"]["heads"][0]["curve"],
                               -np.log1p(np.arange(1, 96)), rtol=1e-12)


@pytest.mark.parametrize("name", ["no_such_module_for_lgjax", "1bad.name"])
def test_bad_encoding_module_is_one_line_exit_2(tmp_path, capsys, name):
    rc, printed = lab_cli(tmp_path, capsys, "--plugin", name)
    lines = [line for line in printed.err.splitlines() if line.strip()]
    assert rc == 2 and len(lines) == 1, printed.err
    assert "--plugin" in lines[0] and "Traceback" not in printed.err
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def ape_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("run") / "ape"
    return path, driver.train_run(tiny("ape", steps=4), path)  # lmax 10, seeds 0 and 1


def test_run_dir_profiles_each_seed_at_the_final_step(ape_run, tmp_path, capsys):
    path, final = ape_run
    assert main(["contract-lab", "--run-dir", str(path), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "seed0" in out and "seed1" in out and "step 4 of 4" in out
    t = json.loads((tmp_path / "out" / "results.json").read_text())["trained"]
    assert t["seeds"] == [0, 1] and t["step"] == 4 and t["horizon"] == 10
    rc = checkpoints.read_config(path)
    for s, (p,) in enumerate(t["profiles"]):
        assert p["out_of_table"] == pytest.approx(86 / 95) and p["shift_error"] is None
        params = jax.tree.map(lambda x, s=s: x[s], final.params)
        want = C.distance_curve(C.kernel_score(ENCODINGS["ape"].kernel, params, rc.model, 10), 96)
        np.testing.assert_allclose([np.nan if v is None else v for v in p["curve"]], want)


def test_run_dir_of_a_transformer_reads_the_shared_encoding_params(tmp_path):
    cfg = tiny("relclip", arch="transformer", layers=1, steps=3)
    states = train.init_states(cfg)
    table = jnp.broadcast_to(-jnp.arange(17.0)[None, :, None], (2, 17, 1))
    params = {**states.params, "encoding": {"relbias": table}}
    with checkpoints.RunDir(tmp_path / "run", cfg) as run:
        run.save(0, states._replace(params=params))
    t = contract_lab.trained(str(tmp_path / "run"), contract_lab.Config(test=40))
    assert t["step"] == 0 and t["steps"] == 3
    for (p,) in t["profiles"]:
        assert p["curve"] == [-float(min(d, 16)) for d in range(1, 40)]
        assert p["collisions"] == len(all_pairs(range(16, 40)))


def test_run_dir_of_a_fire_transformer_profiles_every_block(tmp_path):
    """FIRE's params live in each block: the lab reads them there, block 0's heads first."""
    cfg = tiny("fire", arch="transformer", layers=2, steps=3)
    states = train.init_states(cfg)
    params = states.params
    assert "encoding" not in params and "encoding" in params["block1"]
    with checkpoints.RunDir(tmp_path / "run", cfg) as run:
        run.save(0, states)
    t = contract_lab.trained(str(tmp_path / "run"), contract_lab.Config(test=40))
    heads = cfg.model.heads
    for s, profiles in enumerate(t["profiles"]):
        assert len(profiles) == 2 * heads
        for block in range(2):
            one = jax.tree.map(lambda x, s=s: x[s], params[f"block{block}"]["encoding"])
            for h in range(heads):
                want = C.distance_curve(C.kernel_score(ENCODINGS["fire"].kernel, one, cfg.model,
                                                       None, h), 40)
                np.testing.assert_allclose(profiles[block * heads + h]["curve"], want)
    assert t["profiles"][0][0]["curve"] != t["profiles"][0][heads]["curve"]  # blocks differ


def copy_with(src, dst, damage):
    shutil.copytree(src, dst)
    damage(dst)
    return dst


@pytest.mark.parametrize("case", ["missing", "no_config", "no_steps", "truncated"])
def test_bad_run_dir_is_one_line_exit_2(ape_run, tmp_path, capsys, case):
    src = ape_run[0]
    path = {
        "missing": lambda: tmp_path / "nowhere",
        "no_config": lambda: copy_with(src, tmp_path / "r", lambda d: (d / "config.json").unlink()),
        "no_steps": lambda: copy_with(src, tmp_path / "r", lambda d: [
            shutil.rmtree(s) for s in d.iterdir() if s.name.isdigit()]),
        "truncated": lambda: copy_with(src, tmp_path / "r", lambda d: DAMAGE["truncated"](d / "4")),
    }[case]()
    assert main(["contract-lab", "--run-dir", str(path), "--out", str(tmp_path / "out")]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("lgjax contract-lab: checkpoint error"), lines
    assert not (tmp_path / "out").exists()


def test_additive_transformer_run_is_refused(tmp_path):
    cfg = tiny("ape", arch="transformer", layers=1)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text(cfg.to_json())
    with pytest.raises(ConfigError, match="--run-dir"):
        contract_lab.check_run(str(tmp_path / "run"))
