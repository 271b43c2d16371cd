"""lgjax profile: the generic positional-only head against the pinned alpha maps, the card on
synthetic results, the command's one-line errors, and a profile repeating its reference."""

import dataclasses
import json

import jax.numpy as jnp
import numpy as np
import pytest

from lgjax.harness import cli
from lgjax.profile import card, command, instruments, recipes, reference, summary
from lgjax.runs import open_run
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
    assert ib[0][1:] == ["1.00", "0.80", "1/2", "-", "1.00", "0.80", "1/2", "-"]
    assert ib[1][2] == "0.40"
    assert tabs[1][2][0][1:] == ["1.00", "0.00*"]  # alpha_60, * = not realized at L0
    assert tabs[3][2][0][1] == "0.95+-0.00 (1.00)"
    v = card.verdicts("mine", s)
    assert "realizes 1 of 2 tasks at L0" in v[1] and "0.80 at L=48" in v[2]
    assert "LG@60 >= 0.7 on prev;" in v[3]
    assert "carrier" not in v[2]


def test_the_card_shows_the_key_carrier_fraction_of_a_rotary_part():
    rotary = _synthetic(0.8, 0.95)
    rotary["implicit_bias"]["K1"] |= {"carrier_key": [0.5, 0.7], "carrier_key_init": [0.1, 0.3],
                                      "carrier_argmax": [0, 0]}
    rotary["implicit_bias"]["K2"] |= {"carrier_key": [0.9, 0.9], "carrier_key_init": [0.0, 0.2],
                                      "carrier_argmax": [-2, -2]}
    s = summary.of(rotary)
    ib = card.tables("mine", s, {"alibi": summary.of(_synthetic(0.4, 0.5))})[2][2]
    assert (ib[0][4], ib[0][8]) == ("0.60 / 0.20", "0.90 / 0.10")
    assert (ib[1][4], ib[1][8]) == ("-", "-")
    v = card.verdicts("mine", s)[2]
    assert "key carrier fraction 0.60 (0.20 at init)" in v
    assert "key carrier fraction 0.90 (0.10 at init)" in v


@pytest.mark.parametrize("argv, says", [
    (["--plugin", "no_such_module_xyz", "profile", "rope"], "--plugin no_such_module_xyz"),
    (["profile", "no_such_encoding"], "unknown encoding 'no_such_encoding'"),
    (["profile", "rope", "--set", "bse=2"], "--set: 'bse=2' is not key=value"),
    (["profile", "rope", "--set", "base=0.5"], "model.enc.base: must be a finite number > 1"),
    (["profile", "rope", "--random-positions", "60"], "--random-positions"),  # < 80 tested
    # the encoding's own ranges (those every run config is validated against)
    (["profile", "rope", "--set", "scale=0"], "model.enc.scale: must be > 0"),
    (["profile", "rope", "--set", "scale=-2"], "model.enc.scale: must be > 0"),
    (["profile", "rope", "--set", "base=inf"], "model.enc.base: must be a finite number > 1"),
    (["profile", "rope", "--set", "base=500,base=600"], "--set base: given twice"),
    (["profile", "alibi", "--set", "slope=nan"], "model.enc.slope"),
    (["profile", "sinusoidal", "--set", "base=0"], "model.enc.base"),
    # the content-aware entries' (their profile compares them as any other)
    (["profile", "cope", "--set", "max_pos=0"], "model.enc.max_pos"),
    (["profile", "fox", "--set", "w_std=-1"], "model.enc.w_std"),
    (["profile", "dape", "--set", "base=rope"], "model.enc.base"),
    (["contract-lab", "--sequences", "0"], "--sequences: must be an integer >= 1"),
])
def test_a_bad_plugin_encoding_or_option_is_one_line_exit_2_before_any_work(
        tmp_path, capsys, monkeypatch, argv, says):
    monkeypatch.setattr(instruments, "measure_all", lambda *a, **k: pytest.fail("it trained"))
    out = tmp_path / "out"
    assert cli.main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err
    assert not out.exists()
    # nothing the command registered stays behind (the contract lab scores every encoding)
    from lgjax.encodings import ENCODINGS
    assert not [n for n in ENCODINGS if "[" in n]


@pytest.mark.parametrize("text, says", [
    (None, "is not a file"),
    ('{"recipes": {"quick": {"encodings": {"rope": {', "is not readable JSON"),
    ("[1, 2]", "holds no 'recipes' object"),
    ('{"experiment": "multiseed", "rope": {}}', "holds no 'recipes' object"),
    ('{"recipes": {"quick": {"made_with": "x", "command": "y", "encodings": {"rope": {}}}}}',
     "encoding 'rope' of its 'quick' entry is damaged (KeyError"),
    ('{"recipes": {"quick": {"made_with": 1, "command": "y", "encodings": {}}}}',
     "its 'quick' entry is damaged (TypeError: 'command' and 'made_with' must be strings"),
    ('{"recipes": {"quick": {"encodings": {}}}}', "its 'quick' entry is damaged (KeyError"),
])
def test_a_missing_or_damaged_reference_is_one_line_before_any_work(tmp_path, capsys,
                                                                    monkeypatch, text, says):
    monkeypatch.setattr(instruments, "measure_all", lambda *a, **k: pytest.fail("it trained"))
    ref = tmp_path / "reference.json"
    if text is not None:
        ref.write_text(text)
    out = tmp_path / "out"
    argv = ["profile", "rope", "--quick", "--reference", str(ref), "--out", str(out)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--reference: {ref}" in err and says in err, err
    assert not out.exists()


def test_a_reference_made_at_another_recipe_is_one_line_before_any_work(tmp_path, capsys,
                                                                       monkeypatch):
    """The packaged quick entry as the recipe was before its realizability row took 750 steps
    of 16 sequences: its numbers would not compare with today's quick profile."""
    monkeypatch.setattr(instruments, "measure_all", lambda *a, **k: pytest.fail("it trained"))
    shipped = reference.load()
    made_at = shipped["recipes"]["quick"]["recipe"]
    made_at.pop("rz_batch", None)
    made_at["rz_steps"] = 300
    ref, out = tmp_path / "reference.json", tmp_path / "out"
    ref.write_text(json.dumps(shipped))
    argv = ["profile", "rope", "--quick", "--reference", str(ref), "--out", str(out)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--reference: {ref}" in err, err
    assert "made at another 'quick' recipe than today's (differing: rz_batch, rz_steps)" in err
    assert "python -m lgjax.profile.reference --recipe quick" in err and not out.exists()


def test_profiling_a_canonical_encoding_repeats_its_reference(tmp_path, monkeypatch, capsys):
    tiny = dataclasses.replace(recipes.RECIPES["tiny"], name="quick", rz_tasks=("prev",),
                               ib_eval=32, rz_eval=32, ib_steps=5, rz_steps=5)
    monkeypatch.setitem(recipes.RECIPES, "quick", tiny)
    ref_file = tmp_path / "reference.json"
    ref_file.write_text(json.dumps({"recipes": {"quick": reference.entry(
        tiny, tmp_path / "ref", ("rope",))}}))
    cfg = command.Config("rope", quick=True, out=str(tmp_path / "p"), reference=str(ref_file))
    assert command.main(cfg) == 0
    got = json.loads((tmp_path / "p" / "profile.json").read_text())
    want = json.loads(ref_file.read_text())["recipes"]["quick"]["encodings"]["rope"]
    assert got["instruments"] == want
    assert got["reference_summary"]["rope"] == got["summary"]
    assert "<b>rope</b>" in (tmp_path / "p" / "profile.html").read_text()
    # the card names what made the canonical rows: the command and the versions it ran with
    made_by = reference.COMMAND.format(recipe="quick")
    assert got["reference_note"] == (f"rope from reference.json (made by `{made_by}`, "
                                     f"{reference.versions()})")
    # the key carrier fraction of the trained keys, computed here from the final checkpoint
    for K in (1, 2):
        run = open_run(tmp_path / "p" / "checkpoints" / "quick" / f"multiseed-K{K}" / "rope")
        p = run.restore().params
        keys_SxMxD = np.einsum("smd,sde->sme", p["embed"], p["wk"])
        frac = [(k.mean(0) ** 2).sum() / (k ** 2).sum(1).mean() for k in keys_SxMxD]
        np.testing.assert_allclose(got["instruments"]["implicit_bias"][f"K{K}"]["carrier_key"],
                                   frac, rtol=1e-5)
    # the learned kernels' contract metrics: what `lgjax contract-lab --run-dir` says of the run
    run_dir = tmp_path / "p" / "checkpoints" / "quick" / "multiseed-K1" / "rope"
    lab_out = tmp_path / "lab"
    assert cli.main(["contract-lab", "--run-dir", str(run_dir), "--out", str(lab_out)]) == 0
    lab = json.loads((lab_out / "results.json").read_text())["trained"]["profiles"]
    assert got["instruments"]["implicit_bias"]["K1"]["contract"] == [
        [{k: h[k] for k in summary.CONTRACT} for h in seed] for seed in lab]


def test_the_card_shows_the_contract_metrics_of_the_learned_kernels():
    mine = _synthetic(0.8, 0.95)
    m = lambda e, c, b: {"shift_error": e, "out_of_table": 0.0, "collisions": c,
                         "monotonic_breaks": b}
    mine["implicit_bias"]["K1"]["contract"] = [[m(0.0, 2, 10)], [m(0.5, 4, 20)]]
    mine["implicit_bias"]["K2"]["contract"] = [[m(None, 0, 1)], [m(None, 1, 0)]]  # undefined
    s = summary.of(mine)
    tab = next(t for t in card.tables("mine", s, {"rope": summary.of(_synthetic(0.4, 0.5))})
               if t[0].startswith("Contract lab of the kernels learned"))
    assert tab[2] == [["**mine**", "1", "0.25", "0.00", "3.0", "15.0"],
                      ["**mine**", "2", "-", "0.00", "0.5", "0.5"]]  # the reference: none
    assert "K=1: shift error 0.25, 3.0 collisions, 15.0 monotonic breaks" in card.verdicts(
        "mine", s)[0]


def test_the_full_recipe_adds_the_encodings_contract_matrix_row(tmp_path):
    tiny = dataclasses.replace(recipes.RECIPES["tiny"], contract_matrix=True,
                               cm_tasks=("offset_copy",), cm_seeds=2, cm_steps=2, cm_eval=8)
    row = instruments.contract_matrix("alibi", tiny, tmp_path, d=8, heads=2, layers=1,
                                      train_lengths=(6, 10), extend=(12, 14), shifts=(2, 3),
                                      probe_sequences=8)
    # the matrix's own results of that cell (contract-train wrote them)
    cell = json.loads((tmp_path / "contract-train" / "results.json").read_text())["cells"][
        "offset_copy"]["alibi"]
    got = row["tasks"]["offset_copy"]
    assert got["in_range"] == cell["in_range"]["accuracy"] and len(got["in_range"]) == 2
    assert got["extend"] == {"12": cell["extend"]["12"]["none"], "14": cell["extend"]["14"]["none"]}
    assert got["shift"] == {c: cell["shift"][c]["accuracy"] for c in ("2", "3")}
    assert (tmp_path / "checkpoints" / "tiny" / "contract" / "offset_copy" / "alibi").is_dir()
    # the card's row: seed means in range / at the longest L / after the largest shift
    inst = _synthetic(0.8, 0.95) | {"contract_matrix": row}
    mean = lambda v: f"{np.mean(v):.2f}"
    want = (f"{mean(got['in_range'])} / {mean(got['extend']['14'])} / {mean(got['shift']['3'])}"
            + ("" if np.mean(got["in_range"]) >= 0.9 else "*"))
    tabs = card.tables("alibi", summary.of(inst), {"rope": summary.of(_synthetic(0.4, 0.5))})
    assert tabs[-1][1] == ["encoding", "offset_copy"] and tabs[-1][2] == [["**alibi**", want]]
    assert "Contract matrix (trained transformer, 2 steps)" in card.verdicts(
        "alibi", summary.of(inst))[-1]
    card.figure("alibi", inst, {}, tmp_path / "fig")  # a fifth panel
    assert (tmp_path / "fig.png").stat().st_size > 0


def test_random_positions_reach_every_trained_instrument_and_the_card(tmp_path):
    r = dataclasses.replace(recipes.RECIPES["quick"], contract_matrix=True)
    runs = [c.run for c in instruments.ib_configs("rope", r, tmp_path, 160).values()]
    runs += [instruments.rz_config("rope", r, tmp_path, 160).run,
             instruments.cm_config("rope", r, tmp_path, 160).run]
    assert [o.random_positions for o in runs] == [160] * 4
    assert instruments.rz_config("rope", r, tmp_path).run.random_positions == 0
    mine = _synthetic(0.8, 0.95)
    c = {"encoding": "rope", "summary": summary.of(mine), "recipe": {"name": "quick"},
         "reduced": True, "wall_seconds": 1.0, "reference_note": "none",
         "reference_summary": {}, "random_positions": 160}
    assert card.markdown(c).startswith("# Profile of `rope`, trained at random positions in "
                                       "[0, 160)")


def test_the_full_recipes_matrix_row_is_the_contract_matrix_at_its_defaults():
    from lgjax.studies.contract import train as contract_train

    full, matrix = recipes.RECIPES["full"], contract_train.Config()
    assert (full.cm_seeds, full.cm_steps, full.cm_eval) == (
        matrix.run.seeds, matrix.run.steps, matrix.run.eval_sequences)
    assert full.cm_tasks == matrix.tasks


def _subparser_helps(name: str) -> dict[str, str]:
    """{flag: help} of command `name` as `lgjax name --help` lists them."""
    import argparse

    parser, _ = cli.parser_for([name])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {a.option_strings[0]: a.help for a in sub.choices[name]._actions if a.option_strings}


def test_profile_takes_the_shared_run_options_with_the_other_commands_help():
    mine, theirs = _subparser_helps("profile"), _subparser_helps("multiseed")
    for flag in ("--progress", "--devices", "--resume"):
        assert mine[flag] == theirs[flag], flag
    assert mine["--ckpt-root"].startswith(theirs["--ckpt-root"].split(" (default")[0])
    assert "<out>/checkpoints" in mine["--ckpt-root"]
    assert "--fast-compile" not in mine  # part of each run's config: not the reference's recipe
    defaults = command.Config()
    assert (defaults.resume, defaults.progress, defaults.devices) == (False, True, 0)


@pytest.mark.parametrize("devices, says", [("-1", "--devices: must be an integer >= 0"),
                                           ("64", "--devices: asked for 64")])
def test_a_bad_devices_is_one_line_exit_2_before_any_work(tmp_path, capsys, monkeypatch, devices,
                                                          says):
    monkeypatch.setattr(instruments, "measure_all", lambda *a, **k: pytest.fail("it trained"))
    monkeypatch.setattr(instruments, "contract_init", lambda *a, **k: pytest.fail("it measured"))
    out, ck = tmp_path / "out", tmp_path / "ck"
    assert cli.main(["profile", "rope", "--quick", "--devices", devices, "--out", str(out),
                     "--ckpt-root", str(ck)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err
    assert not out.exists() and not ck.exists()


def test_profile_runs_go_under_ckpt_root_open_anywhere_and_resume_only_continues_an_unfinished_run(
        tmp_path, monkeypatch, capsys, tiny_quick):
    """With options set (`--set`), which names each run `<encoding>[key=value]`: a folder name
    holding glob characters (tests/test_odd_paths.py) that trains, resumes, opens and analyses
    like any other, where the variant is not registered."""
    import shutil

    from lgjax.runs import open_run

    tiny = tiny_quick(ib_eval=32, rz_eval=32, ib_steps=5, rz_steps=5)
    out, ck = tmp_path / "p", tmp_path / "ck"
    argv = ["profile", "rope", "--quick", "--set", "base=500", "--out", str(out), "--ckpt-root",
            str(ck), "--no-progress"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    first = json.loads((out / "profile.json").read_text())["instruments"]
    variant = "rope[base=500.0]"
    k1, k2 = ck / "quick" / "multiseed-K1" / variant, ck / "quick" / "multiseed-K2" / variant
    program = ck / "quick" / "realizability" / "1L1H" / variant
    assert (k1 / "5").is_dir() and program.is_dir()
    assert not (out / "checkpoints").exists()
    # each instrument's results file, not its study's figure: the card draws its own
    studies = [out / "multiseed-K1", out / "multiseed-K2", out / "realizability-train"]
    assert all((d / "results.json").is_file() for d in studies)
    assert [p.name for d in studies for p in d.iterdir() if p.suffix in (".png", ".pdf")] == []
    assert (out / "profile.png").stat().st_size > 0 and (out / "profile.pdf").stat().st_size > 0
    # a rerun without --resume reloads the finished runs, never retrains them
    saved = {f: (k2 / f).read_bytes() for f in ("metrics.jsonl", "trained_seconds.json")}
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert json.loads((out / "profile.json").read_text())["instruments"] == first
    assert {f: (k2 / f).read_bytes() for f in saved} == saved
    # read where the variant is not registered: config.json says rope, its options beside it
    with open_run(k1) as run:
        assert (run.config.model.encoding, run.config.model.enc.base) == ("rope", 500.0)
        run.restore()
    assert cli.main(["dynamics", str(k1), "--lengths", "8,12", "--eval-sequences", "32",
                     "--out", str(tmp_path / "dyn")]) == 0, capsys.readouterr().err
    with open_run(program) as run:  # the realizability grid program, the same way
        assert (run.config.model.encoding, run.config.model.enc.base) == ("rope", 500.0)
        assert int(run.restore().step.reshape(-1)[0]) == tiny.rz_steps
    # an interrupted run: refused without --resume (one line, before anything trains) ...
    shutil.rmtree(k1 / "5")
    real = instruments.measure_all
    monkeypatch.setattr(instruments, "measure_all", lambda *a, **k: pytest.fail("it trained"))
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--resume" in err, err
    # ... and continued with it
    monkeypatch.setattr(instruments, "measure_all", real)
    assert cli.main([*argv, "--resume"]) == 0, capsys.readouterr().err
    assert (k1 / "5").is_dir()
    assert json.loads((out / "profile.json").read_text())["instruments"] == first


def test_a_reference_written_before_entries_named_their_versions_still_reads(tmp_path):
    """An entry that names the day it was made instead of its versions (the format before) is
    read as it was; the card names that day."""
    shipped = reference.load()
    old = shipped["recipes"]["quick"]
    del old["made_with"]
    old["made"] = "the day it was made"
    ref = tmp_path / "reference.json"
    ref.write_text(json.dumps(shipped))
    entry = reference.checked(ref, recipes.RECIPES["quick"])
    assert reference.made_with(entry) == "on the day it was made"


def test_the_shipped_reference_was_made_at_todays_recipes():
    """A recipe changed without regenerating lgjax/profile/reference.json would have every card
    compare the new encoding with canonical rows trained at another scale."""
    shipped = reference.load()["recipes"]
    assert shipped, "reference.json holds no recipe"
    for name, entry in shipped.items():
        assert not reference.differing(entry, recipes.RECIPES[name]), (
            f"reference.json's {name!r} entry was made at another recipe: regenerate it with "
            f"`{reference.COMMAND.format(recipe=name)}`")
