"""lgjax profile: the generic positional-only head against the pinned alpha maps, the card on
synthetic results, the command's one-line errors, and a profile repeating its reference."""

import dataclasses
import json

import jax.numpy as jnp
import numpy as np
import pytest

from lgjax.harness import cli
from lgjax.studies.profile import card, command, recipes, reference, summary
from lgjax.studies.realizability import alpha as A
from lgjax.studies.realizability import generic_head as G
from lgjax.studies.realizability import score as R

TINY_ALPHA = A.Config(tasks=("prev", "skip-3", "first", "copy", "pos-2", "induction"), steps=40,
                      lengths=(30,), focus_length=30, sweep_nums=(8,), sweep_bases=(1e3,),
                      sweep_scales=(0.1,))


def pinned_rows(cfg):
    """alpha.measure's reference rows (main and sweeps), with the pinned maps."""
    Lmax = max(cfg.lengths)
    scored = [n for n in cfg.tasks if R.positional(n)]
    t = jnp.asarray(np.stack([R.targets(n, cfg.L0) for n in scored]))
    rows_t = jnp.asarray(np.stack([R.row_sets(n, cfg.L0, cfg.lengths, Lmax) for n in scored]))
    rows = []
    for fam in A.families(cfg):
        head = R.HEADS[fam["encoding"]]
        theta = np.stack([R.frequencies(fam["num"], b, s) for b, s in fam["settings"]])
        out = {k: np.asarray(v) for k, v in R.reference_family(
            fam["encoding"], head.shape(fam["num"], cfg.L0), cfg.recipe(), jnp.asarray(theta),
            t, rows_t).items()}
        for s, (b, sc) in enumerate(fam["settings"]):
            main = fam["num"] == cfg.num and (b, sc) == (cfg.base, cfg.scale)
            rows += A._rows(fam["encoding"], "reference", A._setting(head, fam["num"], b, sc),
                            main, out, s, scored, cfg)
    return rows


def test_the_generic_head_reproduces_every_pinned_alpha_cell():
    key = lambda r: (r["encoding"], r["task"], r["num"], r["base"], r["scale"])
    pinned = {key(r): (r["acc_L0"], r["alpha"]) for r in pinned_rows(TINY_ALPHA)}
    generic = {key(r): (r["acc_L0"], r["alpha"]) for r in G.alpha_rows(TINY_ALPHA)}
    # main 5 x 6, sinusoidal at (16, 1e3) and (8, 1e3), rope at those and at scale 0.1
    assert len(pinned) == 5 * 6 + 2 * 6 + 3 * 6
    assert generic == pinned


def test_the_generic_head_has_the_spec_parameter_counts():
    shape = lambda n, o: G.generic_head(n, o, 32, 40).shape()
    assert shape("rope", G.spec_options("rope", 20, 40, 1e4, 1.0)) == (32,)  # a_k, b_k
    assert shape("sinusoidal", G.spec_options("sinusoidal", 20, 40, 1e4, 1.0)) == (32, 32)
    assert shape("ape", G.spec_options("ape", 20, 40, None, None)) == (20, 20)  # clamped rows
    assert shape("alibi", G.spec_options("alibi", 20, 40, None, None)) == (1,)
    assert G.generic_head("alibi", G.spec_options("alibi", 20, 40, None, None), 32,
                          40).nonneg_P.tolist() == [True]
    assert shape("relclip", G.spec_options("relclip", 20, 40, None, None)) == (17,)


def _synthetic(acc_long: float, lg: float) -> dict:
    lengths = [30, 40, 50, 60, 80]
    ib = {"lengths": [12, 16, 20, 24, 32, 40, 48], "chance": 0.05}
    for K in (1, 2):
        ib[f"K{K}"] = {"accuracy": [[1.0] * 6 + [acc_long]] * 2,
                       "peak_height": [[0.9] * 7] * 2, "selected_offset": [[-K] * 7, [0] * 7]}
    return {"contract": [{"shift_error": 0.0, "out_of_table": 0.0, "collisions": 3,
                          "monotonic_breaks": 1, "curve": [1.0, 0.5, 0.25]}],
            "alpha": {"L0": 20, "lengths": lengths, "tasks": {
                "prev": {"acc_L0": 1.0, "alpha": [1.0] * 5, "flags": []},
                "copy": {"acc_L0": 0.5, "alpha": [0.0] * 5, "flags": ["not realized at L0"]}}},
            "implicit_bias": ib,
            "realizability": {"1L1H": {"tasks": ["prev", "copy"], "lengths": lengths,
                                       "train_acc": [[1.0], [0.9]],
                                       "lg": [[[lg] * 5], [[0.1] * 5]]}}}


def test_the_card_tables_put_the_profiled_encoding_first_in_bold_beside_the_reference():
    mine, ref = _synthetic(0.8, 0.95), {"rope": _synthetic(0.4, 0.5)}
    s = summary.of(mine)
    tabs = card.tables("mine", s, {n: summary.of(x) for n, x in ref.items()})
    assert [t[2][0][0] for t in tabs] == ["**mine**"] * 4
    assert [t[2][1][0] for t in tabs] == ["rope"] * 4
    ib = tabs[2][2]
    assert ib[0][1:] == ["1.00", "0.80", "1/2", "1.00", "0.80", "1/2"]
    assert ib[1][2] == "0.40"
    assert tabs[1][2][0][1:] == ["1.00", "0.00*"]  # alpha_60, * = not realized at L0
    assert tabs[3][2][0][1] == "0.95+-0.00 (1.00)"
    v = card.verdicts("mine", s)
    assert "realizes 1 of 2 tasks at L0" in v[1] and "0.80 at L=48" in v[2]
    assert "LG@60 >= 0.7 on prev;" in v[3]


@pytest.mark.parametrize("argv, says", [
    (["--plugin", "no_such_module_xyz", "profile", "rope"], "--plugin no_such_module_xyz"),
    (["profile", "no_such_encoding"], "unknown encoding 'no_such_encoding'"),
    (["profile", "rope", "--set", "bse=2"], "--set: 'bse=2' is not key=value"),
    (["profile", "rope", "--set", "base=0.5"], "model.enc.base: must be > 1"),
])
def test_a_bad_plugin_encoding_or_option_is_one_line_exit_2_before_any_work(
        tmp_path, capsys, argv, says):
    out = tmp_path / "out"
    assert cli.main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err
    assert not out.exists()
    # nothing the command registered stays behind (the contract lab scores every encoding)
    from lgjax.encodings import ENCODINGS
    assert not [n for n in ENCODINGS if "[" in n]


def test_profiling_a_canonical_encoding_repeats_its_reference(tmp_path, monkeypatch, capsys):
    tiny = dataclasses.replace(recipes.RECIPES["tiny"], name="quick", rz_tasks=("prev",),
                               ib_eval=32, rz_eval=32, ib_steps=5, rz_steps=5)
    monkeypatch.setitem(recipes.RECIPES, "quick", tiny)
    ref_file = tmp_path / "reference.json"
    ref_file.write_text(json.dumps({"recipes": {"quick": reference.entry(
        tiny, tmp_path / "ref", ("alibi",))}}))
    cfg = command.Config("alibi", quick=True, out=str(tmp_path / "p"), reference=str(ref_file))
    assert command.main(cfg) == 0
    got = json.loads((tmp_path / "p" / "profile.json").read_text())
    want = json.loads(ref_file.read_text())["recipes"]["quick"]["encodings"]["alibi"]
    assert got["instruments"] == want
    assert got["reference_summary"]["alibi"] == got["summary"]
    assert "<b>alibi</b>" in (tmp_path / "p" / "profile.html").read_text()
