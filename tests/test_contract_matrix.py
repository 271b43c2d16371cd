"""The contract matrix: evaluation pieces on hand-built cases, the verdict logic on a synthetic
matrix, and one tiny cell end to end through the CLI (train, measure, report)."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lgjax import encodings, models, train
from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig
from lgjax.harness.cli import main
from lgjax.studies.contract import measure as contract_measure
from lgjax.studies.contract import readouts as contract_eval
from lgjax.studies.contract import tasks
from lgjax.studies.contract import train as contract_train
from lgjax.studies.contract.readouts import ENCODINGS
from lgjax.studies.contract.verdicts import (
    failure_ranges,
    judge,
    not_learnable,
    thesis_line,
    verdict,
    winner,
    winners,
)
from lgjax.tasks import TASKS, sample_batch

# ---- evaluation pieces ------------------------------------------------------------------------


def test_confusion_and_failure_by_offset_hand_built():
    need, got = np.array([0, 4, 9, 30]), np.array([1, 8, 9, 2])
    c = contract_eval.confusion(need, got, width=4, n_bins=3)
    expect = np.zeros((3, 3), int)
    expect[0, 0] = expect[1, 2] = expect[2, 2] = expect[2, 0] = 1  # 30 and 9 clip to bin 2
    np.testing.assert_array_equal(c, expect)
    total, hits = contract_eval.failure_by_offset(need, np.array([1, 0, 1, 1]), 4, 3)
    np.testing.assert_array_equal(total, [1, 1, 2])
    np.testing.assert_array_equal(hits, [1, 0, 2])
    # seed-batched [S, B] arrays count as their flattening
    np.testing.assert_array_equal(contract_eval.confusion(need.reshape(2, 2), got.reshape(2, 2),
                                                          4, 3), c)
    batched = contract_eval.failure_by_offset(need.reshape(2, 2), np.array([[1, 0], [1, 1]]), 4, 3)
    np.testing.assert_array_equal(np.stack(batched), [total, hits])


def test_logit_range_hit_rates_rank_correlation():
    logits = np.array([[1.0, 5.0, -2.0, 100.0], [0.0, 0.0, 0.0, -50.0]])
    np.testing.assert_allclose(contract_eval.logit_range(logits, 3), [7.0, 0.0])
    attended = np.array([[2, 0], [2, 1], [1, 1]])
    np.testing.assert_allclose(contract_eval.hit_rates(attended, np.array([2, 2, 1])),
                               [1.0, 1 / 3])
    # seed-batched: [S, B, A, L] logits with [S, B] lengths, [S, B, A] argmaxes with [S, B]
    np.testing.assert_allclose(contract_eval.logit_range(np.stack([[logits, logits]]),
                                                         np.array([[3, 4]])),
                               [[[7.0, 0.0], [102.0, 50.0]]])
    np.testing.assert_allclose(contract_eval.hit_rates(np.stack([attended, attended[::-1]]),
                                                       np.array([[2, 2, 1], [1, 2, 2]])),
                               [[1.0, 1 / 3], [1.0, 1 / 3]])
    assert contract_eval.rank_correlation([1, 2, 3, 4], [10, 20, 25, 99]) == pytest.approx(1.0)
    assert contract_eval.rank_correlation([3, 2, 1], [1, 2, 3]) == pytest.approx(-1.0)
    assert np.isnan(contract_eval.rank_correlation([1, 1, 1], [1, 2, 3]))


def test_retrieval_index_keeps_span_then_tail_or_just_the_tail():
    idx = contract_eval.retrieval_index(jnp.array([0, 7, 2]), 3, jnp.array([10, 10, 10]), 6)
    np.testing.assert_array_equal(idx, [[0, 1, 2, 7, 8, 9],  # span, then the last 3
                                        [4, 5, 6, 7, 8, 9],  # span already in the window
                                        [2, 3, 4, 7, 8, 9]])


@pytest.mark.parametrize("name", ["absolute_anchor", "ordered_update", "offset_copy"])
def test_retrieval_keeps_the_label_of_evidence_tasks(name):
    """The retrieved 32-token sequence still answers the same: the anchor's slot, the value after
    the last SET, the token k back (a plain-Python reading of the kept tokens)."""
    cfg = TaskConfig(name, vocab=12)
    b = jax.jit(sample_batch, static_argnums=(0, 2, 3, 4, 5))(cfg, jax.random.key(3), 32,
                                                                   64, 64, 64)
    ev = TASKS[name].evidence(b.tokens, b.length, cfg)
    start, e = contract_eval.evidence_span(name, ev, cfg)
    kept = np.take_along_axis(np.asarray(b.tokens),
                              np.asarray(contract_eval.retrieval_index(start, e, b.length, 32)), -1)
    for row, target in zip(kept, np.asarray(b.targets)):
        if name == "absolute_anchor":
            got = row[cfg.opts.anchor_slot]
        elif name == "offset_copy":
            got = row[31 - cfg.opts.copy_offset]
        else:
            got = row[max(i for i in range(32) if row[i] == tasks.set_id(cfg)) + 1]
        assert got == target


def test_interpolation_configs_per_scheme():
    m = ModelConfig(d=16, heads=2)
    rep = lambda **kw: dataclasses.replace(m, **kw)
    ape = rep(encoding="ape", enc=encodings.ApeOptions(oob="clamp"))
    assert contract_eval.interpolated(ape, 64, 32).enc.oob == "interp"
    assert contract_eval.interpolated(rep(encoding="rope"), 128, 32).enc.scale == 0.25
    nope = rep(encoding="nope", enc=None)
    assert contract_eval.interpolated(nope, 128, 32) == nope
    pi = contract_eval.interpolated(rep(encoding="alibi", enc=None), 64, 32)
    assert (pi.encoding, pi.enc.pos_scale, pi.enc.slopes) == ("alibi+pi", 0.5, "fixed")
    assert "alibi+pi" not in ENCODINGS  # registered only while evaluating
    with contract_eval.pi_encodings():
        assert "alibi+pi" in ENCODINGS
    assert "alibi+pi" not in ENCODINGS


def test_interpolated_biases_scale_distances():
    m = ModelConfig(encoding="relclip", d=16, heads=2, enc=encodings.RelClipOptions(clip=4))
    table = {"relbias": jnp.arange(10.0).reshape(5, 2)}
    dist = jnp.array([0, 1, 3, 6, 20])
    same = contract_eval._through_pi_encoding(m, 1.0)
    np.testing.assert_allclose(contract_eval._scaled_clip(table, dist, same),
                               encodings.clip_bias(table, dist, m))
    half = contract_eval._through_pi_encoding(m, 0.5)  # 3 -> 1.5: halfway between rows 1 and 2
    np.testing.assert_allclose(contract_eval._scaled_clip(table, dist, half)[2], [3.0, 4.0])
    alibi = ModelConfig("alibi", heads=2, enc=encodings.AlibiOptions(slopes="geometric"))
    np.testing.assert_allclose(
        contract_eval._scaled_alibi({}, dist, contract_eval._through_pi_encoding(alibi, 0.5)),
        encodings.alibi_bias({}, dist * 0.5, alibi))


# the bias path, the rotary path, q and k turned apart (xPos), the length read (dynamic NTK),
# a pair bias with params per block (FIRE)
@pytest.mark.parametrize("encoding", ["relclip", "rope", "xpos", "rope_dynamic", "fire"])
def test_readout_logits_reproduce_the_attention(encoding):
    """The recomputed query-row logits, softmaxed over valid keys, are the model's attention."""
    rc = RunConfig(TaskConfig("offset_copy", vocab=8),
                   ModelConfig(encoding=encoding, arch="transformer", layers=2, heads=2, d=8),
                   TrainConfig(lmin=6, lmax=10, seeds=(0,)))
    params = jax.jit(models.init_params, static_argnums=1)(jax.random.key(0), rc)
    b = sample_batch(rc.task, jax.random.key(1), 4, 6, 10, 10)
    one = contract_measure.query_readout(rc.model, *models.vocab_sizes(rc))
    logits, att, att_logits = jax.jit(jax.vmap(one, in_axes=(None, 0, 0)))(params, b.tokens,
                                                                           b.length)
    valid = jnp.arange(10)[None, None, :] < b.length[:, None, None]
    np.testing.assert_allclose(jax.nn.softmax(jnp.where(valid, att_logits, -1e30), -1), att,
                               atol=1e-5)
    full, _ = jax.jit(models.make_apply(rc))(params, b.tokens, b.length)
    np.testing.assert_allclose(logits, full, atol=1e-5)


def test_chunks_divide_the_batch_into_the_fewest_sequences_of_enough_rows():
    rows = contract_measure.CHUNK_ROWS
    for B, L in [(512, 32), (512, 64), (512, 96), (512, 128), (256, 32), (100, 128), (7, 16),
                 (509, 128), (4096, 1)]:
        c = contract_measure.chunk_size(B, L)
        assert B % c == 0 and (c * L >= rows or c == B), (B, L, c)
        assert all(B % k or k * L < rows for k in range(1, c)), (B, L, c)
    assert [contract_measure.chunk_size(512, L) for L in (32, 64, 96, 128)] == [128, 64, 64, 32]


# ---- verdict logic on a synthetic matrix ------------------------------------------------------

SEEDS = 5


def vals(mean, spread=0.01):
    return list(mean + spread * np.linspace(-1, 1, SEEDS))


def synthetic_cell(in_range=1.0, extend=0.5, shift=0.5, far=None, nonlocal_=0.1, spread=0.01):
    ext = vals(extend, spread)
    length = {"none": ext, "pi": ext, "retrieval": ext,
              "nonlocal": vals(nonlocal_)}
    ir = {"accuracy": vals(in_range)}
    if far is not None:
        length |= {"near": vals(0.9), "far": vals(far)}
        ir |= {"near": vals(1.0), "far": vals(1.0)}
    return {"in_range": ir, "shift": {"4": {"accuracy": vals(shift), "consistency": vals(shift)}},
            "extend": {"64": length}}


def synthetic_result(cells):
    schemes = list(dict.fromkeys(s for row in cells.values() for s in row))
    return {"cells": cells, "learnable": 0.9, "schemes": schemes}


def test_verdicts_confirmed_contradicted_no_effect_not_learnable():
    cells = {
        "absolute_anchor": {"ape": synthetic_cell(extend=0.95), "rope": synthetic_cell(0.95,
                                                                                      0.3),
                            "sinusoidal": synthetic_cell(extend=0.34, spread=0.05),
                            "nope": synthetic_cell(in_range=0.5, extend=0.9)},  # not learnable
        "offset_copy": {"rope": synthetic_cell(shift=0.2), "ape": synthetic_cell(shift=0.9)},
    }
    result = synthetic_result(cells)
    got = {(v["task"], v["scheme"], v["column"]): v["verdict"] for v in judge(result)}
    assert not_learnable(result) == ["absolute_anchor/nope"]
    assert got[("absolute_anchor", "ape", "extend")] == "confirmed"
    # sinusoidal is within 0.05 of rope and its interval covers 0 both ways round
    assert got[("absolute_anchor", "sinusoidal", "extend")] == "no effect"
    assert got[("absolute_anchor", "rope", "extend")] == "no effect"
    assert got[("absolute_anchor", "nope", "extend")] == "not learnable"
    assert got[("offset_copy", "rope", "shift_consistency")] == "contradicted"
    assert got[("offset_copy", "ape", "shift_consistency")] == "contradicted"


def test_verdict_unresolved_and_no_learnable_rival():
    noisy = {"a": np.array([0.2, 0.9, 0.5, 0.1, 0.8]), "b": np.array([0.3, 0.2, 0.6, 0.1, 0.1])}
    ok = {"a": True, "b": True}
    assert verdict(noisy, ok, "a", "high", ["b"])["verdict"] == "unresolved"
    assert verdict(noisy, {"a": True, "b": False}, "a", "high", ["b"])["verdict"] == \
        "no learnable rival"


def test_winner_needs_separated_intervals_and_thesis_line():
    assert winner({"a": vals(0.9), "b": vals(0.5), "c": vals(0.4)}) == "a"
    assert winner({"a": vals(0.9), "b": vals(0.89)}) is None
    one = {"x": synthetic_cell(extend=0.99, shift=0.99), "y": synthetic_cell(0.95, 0.2, 0.2)}
    wins = winners(synthetic_result({"absolute_anchor": one, "offset_copy": one}))
    assert set(wins.values()) == {"x"} and "weakened" in thesis_line(wins)
    assert "weakened" not in thesis_line({("t", "c"): "x", ("t", "d"): "y"})


def test_failure_ranges_pool_bins():
    cell = {"extend": {"failure": {"bin": 4, "total": [2, 2, 0, 4], "correct": [2, 1, 0, 0]}}}
    assert failure_ranges(cell, (0, 8, 12, 16)) == [0.75, None, 0.0]


# ---- end to end -------------------------------------------------------------------------------


def test_one_cell_trains_measures_and_reports_through_the_cli(tmp_path, capsys, monkeypatch):
    """One tiny cell: trained, measured and reported. Its measurement is saved in its run
    directory as it finishes; a rerun reads it back (the same results.json), a damaged one is
    measured again, and contract-report reads saved cells (other options: measured, not
    saved) and writes none."""
    ck, out = tmp_path / "ck", tmp_path / "out"
    args = ["contract-train", "--tasks", "offset_copy", "--schemes", "alibi", "--steps", "2",
            "--seeds", "2", "--batch", "8", "--eval-sequences", "8", "--probe-sequences", "8",
            "--train-lengths", "6,10", "--extend", "12", "--shifts", "2", "--d", "8",
            "--heads", "2", "--layers", "1", "--ckpt-root", str(ck), "--no-progress"]
    assert main(args + ["--out", str(out)]) == 0
    result = json.loads((out / "results.json").read_text())
    cell = result["cells"]["offset_copy"]["alibi"]
    assert len(cell["in_range"]["accuracy"]) == 2
    assert set(cell["extend"]) >= {"12", "confusion", "failure"}
    assert not {"ntk", "yarn", "llama3"} & set(cell["extend"]["12"])  # RoPE's alone
    assert cell["curve"]["steps"] == [0, 1, 2]
    assert (ck / "contract" / "offset_copy" / "alibi" / "config.json").is_file()
    assert "Predicted matrix" in (out / "report.md").read_text()

    cells = lambda o: {k: v for k, v in json.loads((o / "results.json").read_text())[
        "cells"]["offset_copy"]["alibi"].items() if k != "train_seconds"}  # a reload's time
    first = cells(out)
    saved = ck / "contract" / "offset_copy" / "alibi" / contract_measure.CELL_FILE
    assert {k: v for k, v in json.loads(saved.read_text())["cell"].items()
            if k != "train_seconds"} == first
    real, calls = contract_measure.measure_cell, []
    monkeypatch.setattr(contract_measure, "measure_cell",
                        lambda *a: calls.append(1) or real(*a))
    assert main(args + ["--out", str(tmp_path / "again")]) == 0
    assert calls == [] and cells(tmp_path / "again") == first
    saved.write_text(saved.read_text()[:40])  # damaged: measured again, and saved whole
    capsys.readouterr()
    assert main(args + ["--out", str(tmp_path / "damaged")]) == 0
    assert len(calls) == 1 and "is damaged" in capsys.readouterr().err
    assert cells(tmp_path / "damaged") == first
    assert json.loads(saved.read_text())["cell"]["in_range"] == first["in_range"]

    before = saved.read_text()
    report = ["contract-report", str(ck), "--eval-sequences", "8", "--shifts", "2",
              "--probe-sequences", "8", "--extend"]
    assert main(report + ["12"]) == 0
    assert len(calls) == 1  # read back
    assert "PARTIAL" in (ck / "report" / "report.md").read_text()
    assert (ck / "report" / "contract-confusion.png").stat().st_size > 0
    assert main(report + ["14"]) == 0
    assert len(calls) == 2 and saved.read_text() == before
    assert main(["contract-report", str(tmp_path / "nothing")]) == 2


def test_runs_one_cell_per_task_and_scheme_differing_only_in_the_encoding():
    runs = contract_train.runs(contract_train.Config())
    assert len(runs) == 24 and "contract/ordered_update/alibi" in runs
    for name, rc in runs.items():
        _, task, scheme = name.split("/")
        assert rc.task.name == task and rc.model.encoding == scheme
        assert (rc.model.layers, rc.model.heads, rc.model.d, rc.train.lmin, rc.train.lmax,
                rc.train.batch, rc.train.lr, rc.train.seeds) == (2, 4, 64, 8, 32, 64, 1e-3,
                                                                 (0, 1, 2, 3, 4))
    ape, alibi = runs["contract/offset_copy/ape"].model, runs["contract/offset_copy/alibi"].model
    assert (ape.enc.oob, ape.enc.train_max, alibi.enc.slopes) == ("clamp", 32, "geometric")


def test_a_cells_seed_trains_the_same_beside_any_other_seeds():
    """A cell's seeds train one after another in its program (`seed_axis` "map"), each through
    the query-row model: seed 1 computes the same bits beside seeds 0 and 2 as beside 4 and 5
    (three seeds: one device, as 5 do not split over two), and what it computes alone to float
    rounding (at these tests' XLA -O0 a one-seed loop compiles apart: last bits)."""
    cfg = contract_train.Config(d=16, heads=2, run=dataclasses.replace(
        contract_train.Config().run, steps=4, batch=8, seeds=3))
    rc = contract_train.run_config(cfg, "offset_copy", "rope")
    assert rc.train.seed_axis == "map" and rc.model.query == "last"
    run = {seeds: train.train(dataclasses.replace(
        rc, train=dataclasses.replace(rc.train, seeds=seeds))).params
        for seeds in ((0, 1, 2), (1, 4, 5), (1,))}
    seed = lambda seeds, i: jax.tree.leaves(jax.tree.map(lambda a: np.asarray(a[i]), run[seeds]))
    for x, y, z in zip(seed((0, 1, 2), 1), seed((1, 4, 5), 0), seed((1,), 0)):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_allclose(x, z, rtol=0, atol=1e-6)
    assert not np.array_equal(seed((0, 1, 2), 1)[0], seed((0, 1, 2), 0)[0])  # trained apart


def test_rope_cell_gains_the_evaluation_time_extensions(tmp_path):
    """A plain-RoPE cell is evaluated at each extension length through NTK, YaRN and Llama 3
    with L_orig = LMAX and s = L / LMAX; NTK is RoPE at base b s^(d_head/(d_head-2)), computed
    here independently of rope_scaling."""
    ck, out = tmp_path / "ck", tmp_path / "out"
    assert main(["contract-train", "--tasks", "offset_copy", "--schemes", "rope",
                 "--steps", "3", "--seeds", "2", "--batch", "8", "--eval-sequences", "8",
                 "--probe-sequences", "8", "--train-lengths", "6,10", "--extend", "20",
                 "--shifts", "2", "--d", "8", "--heads", "2", "--layers", "1",
                 "--ckpt-root", str(ck), "--out", str(out), "--no-progress"]) == 0
    result = json.loads((out / "results.json").read_text())
    row = result["cells"]["offset_copy"]
    assert {"ntk", "yarn", "llama3"} <= set(row["rope"]["extend"]["20"])
    report = (out / "report.md").read_text()
    assert "## RoPE extensions at evaluation" in report
    assert "| offset_copy | 20 |" in report

    from types import SimpleNamespace

    from lgjax.harness.study import Trained
    from lgjax.runs import open_run
    run = open_run(ck / "contract" / "offset_copy" / "rope")
    params_S = run.restore(max(run.steps())).params
    cfg = contract_train.Config(tasks=("offset_copy",), schemes=("rope",),
                                train_lengths=(6, 10), extend=(20,), shifts=(2,))
    cell = contract_measure.Cell(Trained(run.config, SimpleNamespace(params=params_S),
                                         run.path, 0.0), dataclasses.replace(
        cfg, run=dataclasses.replace(cfg.run, eval_sequences=8)))
    b = contract_measure.sample(cell.task, cell.seeds, 20, 8, 20, 20, 20)
    ntk = contract_eval.rope_extended(cell.model, "ntk", 20, 10)
    assert (ntk.enc.factor, ntk.enc.base) == (2.0, 1e4)
    s, dh = 2.0, 4  # d = 8 over 2 heads
    by_base = dataclasses.replace(cell.model,
                                  enc=encodings.RopeOptions(base=1e4 * s ** (dh / (dh - 2))))
    np.testing.assert_allclose(cell.run(b, ntk)[0], cell.run(b, by_base)[0], rtol=1e-5, atol=1e-6)
    assert not np.allclose(cell.run(b, ntk)[2], cell.run(b)[2])  # the logits did change
    np.testing.assert_allclose(row["rope"]["extend"]["20"]["ntk"], cell.accuracy(b, by_base))
    yarn = contract_eval.rope_extended(cell.model, "yarn", 20, 10)
    assert (yarn.enc.original_max_position, yarn.enc.factor) == (10, 2.0)


def test_an_undefined_rank_correlation_reads_n_a_not_nan(monkeypatch):
    """A piece of the matrix under `reproduce --jobs N` is one cell: its Spearman rho over one
    scheme's seed-runs is undefined, and so is a lab measure a plugin's encoding lacks."""
    from lgjax.studies.contract import render

    monkeypatch.setattr(render, "correlations", lambda result: {
        "offset_copy": {"in-range loss": float("nan"), "lab shift_error": 0.5},
        "ordered_update": {"in-range loss": -0.25, "lab shift_error": float("nan")}})
    text = "\n".join(render.correlation_table({}))
    assert "nan" not in text
    assert "| in-range loss | n/a | -0.25 | 0.25 |" in text
    assert "| lab shift_error | +0.50 | n/a | 0.50 |" in text
    assert "n/a: undefined" in text
    assert "In-range loss: mean |rho| 0.25; the strongest contract measure (lab shift_error): " \
        "0.50." in text
