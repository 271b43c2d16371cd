"""`lgjax reproduce realizability | contract | all`: the claim readers of both studies on small
synthetic results (match, differ, not run), and `reproduce all --quick` end to end at a tiny
scale."""

import dataclasses
import json

import numpy as np
import pytest

from lgjax.harness.cli import main
from lgjax.harness.declare import run_devices
from lgjax.harness.study import RunOptions
from lgjax.reproduce import claims as C
from lgjax.reproduce import command as reproduce
from lgjax.studies import STUDIES
from lgjax.studies.contract import reproduce as contract_plan
from lgjax.studies.realizability import reproduce as realizability_plan
from lgjax.studies.realizability.report import CORE_TASKS

TASKS = ("prev", "skip-2", "skip-3", "skip-5", "copy", "reverse", "first", "pos-2", "pos-5",
         "induction")
ENCODINGS = ("ape", "nope", "alibi", "sinusoidal", "rope")
LENGTHS = [30, 40, 50, 60, 80]


def verdicts(study: str, results: dict) -> dict:
    return {v.label: v for v in C.check(C.load_claims(study), results)}


# ---------------------------------------------------------------- realizability


def alpha_results(alpha: float = 1.0) -> dict:
    """Every main and sweep row the claims read, each alpha_L = `alpha`."""
    rows = []
    for enc in ENCODINGS:
        freq = enc in ("rope", "sinusoidal")
        settings = [(16, 1e4, 1.0), (8, 1e4, 1.0), (32, 1e4, 1.0), (16, 1e3, 1.0),
                    (16, 1e5, 1.0), *[(16, 1e4, s) for s in (0.3, 0.1, 0.03, 0.01)]] \
            if freq else [(None, None, None)]
        for num, base, scale in settings:
            main_row = num in (16, None) and base in (1e4, None) and scale in (1.0, None)
            for sel in ("reference", "min_norm", "margin") if main_row else ("reference",):
                rows += [{"encoding": enc, "task": t, "selection": sel, "num": num,
                          "base": base, "scale": scale, "main": main_row,
                          "alpha": [alpha] * len(LENGTHS)} for t in TASKS]
    return {"config": {"num": 16, "base": 1e4, "scale": 1.0}, "lengths": LENGTHS, "rows": rows}


def train_results(tiers=("1L1H",), lg: float = 1.0, seeds: int = 2) -> dict:
    full = lambda v: np.full((len(TASKS), seeds, len(LENGTHS)), v).tolist()
    return {"programs": [{"tier": t, "encoding": e, "tasks": list(TASKS),
                          "seeds": list(range(seeds)), "lengths": LENGTHS,
                          "train_acc": np.ones((len(TASKS), seeds)).tolist(), "lg": full(lg),
                          "acc_all": full(lg)} for t in tiers for e in ENCODINGS],
            "reduced": True}


@pytest.fixture(scope="module")
def realizability_results():
    """alpha, the 1L1H grid and its report (with its sweeps): real statistics over made-up
    numbers whose alpha and LG agree cell by cell, so rho is defined."""
    from lgjax.studies.realizability import report as R

    alpha, train = alpha_results(), train_results()
    rng = np.random.default_rng(0)
    for r in alpha["rows"]:  # alpha varies over cells; LG follows it
        r["alpha"] = [float(rng.uniform())] * len(LENGTHS)
    table = R.alpha_table(alpha)
    for p in train["programs"]:
        p["lg"] = [[[table[p["encoding"]][t][L] for L in LENGTHS] for _ in p["seeds"]]
                   for t in p["tasks"]]
    rows = R.measurements(train, table)
    cfg = R.Config(resamples=20)
    report = {"alpha": True, "rows": rows, "cells": R.seed_means(rows),
              "counts": R.counts(rows),
              "thresholds": {"learnable": 0.8, "alpha_min": 0.5, "lg_min": 0.7, "resamples": 20},
              "stats": R.stats_per_tier(rows, cfg)}
    return {"realizability-alpha": alpha, "realizability-train": train,
            "realizability-report": report}


def test_realizability_claims_match_differ_and_not_run(realizability_results):
    v = verdicts("realizability", realizability_results)
    assert v["t3.rope.skip-5.lg60_1L1H"].status in ("matches", "differs")
    lg = v["t3.rope.skip-5.lg60_1L1H"]
    assert lg.measured[""]["n"] == 2
    # alpha 1 everywhere matches where published 1, differs where published 0 (with both)
    res = dict(realizability_results, **{"realizability-alpha": alpha_results(1.0)})
    v = verdicts("realizability", res)
    assert v["t3.rope.skip-5.alpha60"].status == "matches"
    assert v["t3.rope.copy.alpha60"].status == "differs"
    assert "1 vs 0.0" in v["t3.rope.copy.alpha60"].detail
    # a tier that was not trained: not run, with the flag and its cost
    deep = v["t3.rope.skip-5.lg60_2L4H"]
    assert deep.status == "not run" and "--tiers 2L4H" in deep.detail and "CPU-hours" in \
        deep.detail
    assert v["text.measurements"].status == "not run"
    assert "--tiers" in v["text.measurements"].detail
    # the d = 128 scale check, made only beside a deeper tier: not run, with the flag and cost
    sc = v["t7.scale"]
    assert sc.status == "not run" and "--tiers 2L4H" in sc.detail and "CPU-hours" in sc.detail
    # sections the report did not hold: not run, saying which
    assert v["t10.scale=0.1"].status == "not run"
    assert v["t8.L0=10"].status == "not run"


def test_realizability_statistics_read_the_seven_tasks_and_ten_beside(realizability_results):
    v = verdicts("realizability", realizability_results)
    seven = v["t4.1L1H.rho [7 main-grid tasks]"]
    ten = v["t4.1L1H.rho [all 10 tasks (extra row)]"]
    assert seven.status in ("matches", "differs") and ten.status in ("matches", "differs")
    assert "35 cells" in seven.detail and "50 cells" in ten.detail  # 5 PE x 7 / x 10 tasks
    assert v["t4.1L1H.rho [7 main-grid tasks]"].measured["ci"]["text"].startswith("[")
    fit = v["t5.min_norm [every cell x length]"]
    assert "175 (cell, L) rows" in fit.detail  # 5 PE x 7 tasks x 5 lengths
    fitted = [c for c in realizability_results["realizability-report"]["cells"]
              if c["tier"] == "1L1H" and c["train_acc"] > 0.8 and c["task"] in CORE_TASKS
              and c["encoding"] in ("ape", "sinusoidal", "rope")]
    assert 0 < len(fitted) < 175
    fit = v["t5.min_norm [learnable cells of ape, sinusoidal, rope x lengths]"]
    assert f"{len(fitted)} (cell, L) rows" in fit.detail  # NoPE and ALiBi left out
    assert v["text.separation [7 main-grid tasks]"].status in ("matches", "differs")


def test_realizability_sweeps_and_table8(realizability_results):
    res = json.loads(json.dumps(realizability_results))
    cells = [dict(c, L=30) for c in res["realizability-report"]["cells"]
             if c["tier"] == "1L1H" and c["L"] == 30]
    for c in cells:  # make every Table 8 cell generalize except copy and reverse
        c["lg"] = 0.0 if c["task"] in ("copy", "reverse") else 1.0
        c["alpha"] = 0.0 if c["task"] in ("copy", "reverse") else 1.0
    res["realizability-report"]["sensitivity"] = {"10": {"L": 30, "alpha": True,
                                                         "cells": cells}}
    res["realizability-report"]["rope_scale"] = [
        {"scale": 0.01, "L": 60, "lg": 0.18, "train_acc": 0.23, "n_seeds": 5}]
    for r in res["realizability-alpha"]["rows"]:
        if (r["encoding"], r["task"], r["scale"]) == ("rope", "skip-3", 0.01):
            r["alpha"] = [0.0] * len(LENGTHS)
    v = verdicts("realizability", res)
    t8 = v["t8.L0=10"]
    assert t8.status == "differs", t8.detail  # 15 of 25 cells generalize, the study: 4
    assert "15/25" in t8.detail
    assert t8.measured["auc"]["mean"] == 1.0
    assert v["t10.scale=0.01"].status == "matches"
    assert v["t11.rope.num=8"].status in ("matches", "differs")


# ---------------------------------------------------------------- contract


def lab_results() -> dict:
    """contract-lab at the three settings, from the published values themselves."""
    out = {}
    for claim in C.load_claims("contract").claims:
        if claim.id.startswith("lab."):
            _, setting, scheme = claim.id.split(".")
            t, s, h = (int(x) for x in
                       setting.replace("train", "").replace("test", "").replace("shift", "")
                       .split("_"))
            run = out.setdefault(setting, {"config": {"train": t, "test": s, "shift": h},
                                           "schemes": {}})
            run["schemes"][scheme] = dict(claim.published)
    return out


def matrix(extend_ape: float, in_range: float = 1.0) -> dict:
    """A contract matrix of absolute_anchor, 5 seeds: ape extends at extend_ape, the rest at
    0.1; in_range accuracy for every scheme."""
    schemes = ["ape", "sinusoidal", "relclip", "rope", "alibi", "nope"]
    noise = np.linspace(-0.01, 0.01, 5)

    def cell(ext):
        return {"in_range": {"accuracy": (in_range + noise * 0).tolist(),
                             "loss": (0.1 + noise).tolist()},
                "shift": {"4": {"accuracy": [1.0] * 5, "consistency": [1.0] * 5}},
                "extend": {"64": {"none": (ext + noise).tolist()}}}
    cells = {"absolute_anchor": {s: cell(extend_ape if s in ("ape", "sinusoidal") else 0.1)
                                 for s in schemes}}
    return {"cells": cells, "schemes": schemes, "seeds": list(range(5)), "learnable": 0.9,
            "lab": {}, "lab_names": {}, "matched": {}}


def test_contract_lab_values_match_exactly_and_differ_by_how_much():
    labs = lab_results()
    v = verdicts("contract", {"contract-lab": labs})
    assert sum(x.status == "matches" for x in v.values()) == 18  # 72 values, 4 per claim
    labs["train16_test64_shift5"]["schemes"]["rope"]["collisions"] += 1
    labs["train16_test64_shift5"]["schemes"]["learned"]["shift_error"] += 1e-6
    v = verdicts("contract", {"contract-lab": labs})
    assert v["lab.train16_test64_shift5.rope"].status == "differs"
    assert "differ from" in v["lab.train16_test64_shift5.rope"].detail
    assert v["lab.train16_test64_shift5.learned"].status == "differs"  # 1e-6 > 1e-9
    del labs["train64_test128_shift33"]
    v = verdicts("contract", {"contract-lab": labs})
    assert v["lab.train64_test128_shift33.nope"].status == "not run"


def test_contract_predictions_judged_by_the_null_policy():
    v = verdicts("contract", {"contract-report": matrix(0.9)})
    assert v["pred.absolute_wins_named_slot"].status == "confirmed"
    assert "ape" in v["pred.absolute_wins_named_slot"].detail
    v = verdicts("contract", {"contract-report": matrix(0.1 - 0.5)})
    assert v["pred.absolute_wins_named_slot"].status == "contradicted"
    v = verdicts("contract", {"contract-report": matrix(0.1)})
    assert v["pred.absolute_wins_named_slot"].status == "no effect"
    v = verdicts("contract", {"contract-report": matrix(0.9, in_range=0.5)})
    assert v["pred.absolute_wins_named_slot"].status == "not learnable"
    # a task of the matrix that was not trained, or no matrix at all: not run, with the flag
    assert v["pred.relative_resists_origin_shift"].status == "not run"
    assert "offset_copy" in v["pred.relative_resists_origin_shift"].detail
    none = verdicts("contract", {})["pred.matched_loss"]
    assert none.status == "not run" and "lgjax reproduce contract" in none.detail


# ---------------------------------------------------------------- end to end


@pytest.fixture
def tiny(monkeypatch):
    """Every study at a few steps of a couple of cells (seconds of training each)."""
    monkeypatch.setattr(reproduce, "QUICK_RUN", RunOptions(seeds=2, steps=3, batch=8,
                                                           eval_sequences=16))
    monkeypatch.setitem(STUDIES, "implicit-bias", dataclasses.replace(
        STUDIES["implicit-bias"], experiments=()))  # test_reproduce_jobs.py runs it end to end
    monkeypatch.setattr(realizability_plan, "QUICK", {
        "alpha": {"encodings": ("rope",), "sweep_nums": (16,), "sweep_bases": (1e4,),
                  "sweep_scales": (1.0, 0.1), "lbfgs_iters": 20},
        "train": {"encodings": ("rope",), "tasks": ("prev", "skip-3"),
                  "test_lengths": (30, 60), "chunk": 3},
        "report": {"resamples": 20}})
    monkeypatch.setattr(realizability_plan, "SENSITIVITY_L0", (10,))
    monkeypatch.setattr(realizability_plan, "TABLE8_TASKS", ("prev", "skip-3"))
    monkeypatch.setattr(realizability_plan, "ROPE_SCALES", (0.1,))
    monkeypatch.setattr(contract_plan, "SETTINGS", {"train16_test64_shift5": (16, 64, 5)})
    monkeypatch.setattr(contract_plan, "QUICK", {"train": {
        "tasks": ("offset_copy",), "schemes": ("alibi", "relclip"), "probe_sequences": 8,
        "extend": (40,), "shifts": (4,), "d": 16, "heads": 2, "layers": 1}})


def test_reproduce_all_quick_end_to_end(tmp_path, tiny, capsys):
    """Two jobs: the studies' steps in one pool of workers (test_reproduce_jobs.py compares
    workers with one process)."""
    out = tmp_path / "rep"
    assert main(["reproduce", "all", "--quick", "--out", str(out), "--ckpt-root",
                 str(tmp_path / "ck"), "--no-progress", "--jobs", "2"]) == 0
    printed = capsys.readouterr()
    text = printed.out
    assert "every study:" in text and "realizability:" in text and "contract:" in text
    assert "every study's steps:" in printed.err and "elapsed with 2 jobs" in printed.err
    assert "== contract: contract-train (started)" in printed.err
    # the matrix's two cells as pieces beside each other, then the matrix reads them
    for cell in ("offset_copy-alibi", "offset_copy-relclip"):
        assert f"== contract: contract-train [{cell}] (started)" in printed.err
        assert (out / "contract" / "contract-train" / "parts" / cell / "results.json").is_file()
    assert printed.err.index("contract-train [offset_copy-relclip] (") < \
        printed.err.index("== contract: contract-train (started)")
    assert (out / "contract" / "logs" / "contract-train.out").is_file()  # its lane's logs
    combined = json.loads((out / "report.json").read_text())
    assert set(combined) == {"implicit-bias", "realizability", "contract"}
    assert "cost of every study across processes" in text
    for study in ("realizability", "contract"):  # every run trained here records its cost
        spent = combined[study]["cost"]
        assert spent["runs"] > 0 and spent["unrecorded"] == 0, study
        # all trained here, by these steps: no more than their walls (a report step's file
        # copies the results it reports on, and its measuring is not counted twice)
        assert 0 < spent["training_seconds"] < spent["seconds"], study
        assert spent["seconds"] <= sum(combined[study]["wall_seconds"].values()), study
    assert combined["implicit-bias"]["cost"]["runs"] == 0  # its experiments are left out here
    md = (out / "report.md").read_text()
    assert "| realizability |" in md and "## Reproduction report: contract" in md
    real = {v["label"] if "label" in v else v["id"]: v for v in
            json.loads((out / "realizability" / "report.json").read_text())["verdicts"]}
    assert real["t3.rope.prev.alpha60"]["status"] in ("matches", "differs")
    assert real["t3.rope.prev.lg60_1L1H"]["status"] in ("matches", "differs")
    con = {v["id"]: v for v in
           json.loads((out / "contract" / "report.json").read_text())["verdicts"]}
    assert con["lab.train16_test64_shift5.rope"]["status"] == "matches"
    assert con["lab.train32_test96_shift17.rope"]["status"] == "not run"
    assert con["pred.relative_resists_origin_shift"]["status"] != "not run"


@pytest.mark.parametrize("module", ["realizability", "contract"])
def test_a_long_commands_parts_are_its_runs_with_equal_configs(tmp_path, module):
    """What `reproduce --jobs N` runs side by side before the whole command: together exactly
    the command's runs (same names, so the same run directories; equal configs), no run twice."""
    from lgjax.studies.contract import train as contract_train
    from lgjax.studies.realizability import train as realizability_train

    train = {"realizability": realizability_train, "contract": contract_train}[module]
    cfg = train.Config()
    cfg = dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, ckpt_root=str(tmp_path)))
    if module == "realizability":
        cfg = dataclasses.replace(cfg, tiers=("1L1H", "2L4H"))
    whole = train.runs(cfg)
    shares = [train.runs(part) for part in train.parts(cfg).values()]
    assert len(shares) == len(whole) > 1  # one run (a program, a cell) each
    merged = {name: rc for share in shares for name, rc in share.items()}
    assert merged == whole and sum(map(len, shares)) == len(whole)
    one = dataclasses.replace(cfg, tiers=("1L1H",), encodings=("rope",)) if module == \
        "realizability" else dataclasses.replace(cfg, tasks=cfg.tasks[:1], schemes=cfg.schemes[:1])
    assert train.parts(one) == {}  # a single run does not split


def test_several_jobs_split_a_long_step_into_pieces_before_it(tmp_path):
    def plan(jobs):
        cfg = reproduce.Config(study="contract", out=str(tmp_path / "out"),
                               ckpt_root=str(tmp_path / "ck"), jobs=jobs)
        return reproduce.plan(cfg, tmp_path / "ck", list(STUDIES["contract"].experiments))

    serial, split = plan(1), plan(3)
    assert not any(s.piece for s in serial)
    at = [(s.experiment, s.piece) for s in split].index(("contract-train", ""))
    pieces = [s for s in split if s.piece]
    assert pieces == split[at - len(pieces):at]  # just before it
    assert len(pieces) == 24 and all(s.experiment == "contract-train" for s in pieces)
    assert pieces[0].piece == f"{pieces[0].config.tasks[0]}-{pieces[0].config.schemes[0]}"
    assert pieces[0].out == tmp_path / "out" / "contract-train" / "parts" / pieces[0].piece
    assert pieces[0].config.run.out == str(pieces[0].out)
    assert [s for s in split if not s.piece] == serial
    assert reproduce.jobs.label_of(pieces[0]) == f"contract-train [{pieces[0].piece}]"


def test_unknown_experiment_is_refused_before_any_work(tmp_path, capsys):
    assert main(["reproduce", "--only", "nosuch", "--out", str(tmp_path / "o"),
                 "--ckpt-root", str(tmp_path / "ck")]) == 2
    assert "--only" in capsys.readouterr().err
    assert not (tmp_path / "ck").exists()


@pytest.mark.parametrize("study", ["realizability", "all"])
def test_bad_tiers_are_refused_before_any_work(tmp_path, capsys, study):
    assert main(["reproduce", study, "--tiers", "9Z", "--out", str(tmp_path / "o"),
                 "--ckpt-root", str(tmp_path / "ck")]) == 2
    assert "--tiers" in capsys.readouterr().err
    assert not (tmp_path / "o").exists() and not (tmp_path / "ck").exists()


def test_quick_transformers_and_grids_compile_at_xlas_defaults(tmp_path):
    """--fast-compile serves the quick runs that compile longer than they run (implicit-bias's
    small heads); the realizability grids and the contract matrix run longer than they
    compile, at --quick too."""
    cfg = reproduce.Config(quick=True, out=str(tmp_path / "out"), ckpt_root=str(tmp_path / "ck"))
    _, exp = reproduce.experiment_config("multiseed", cfg, tmp_path / "ck")
    assert exp.run.fast_compile
    for study, plan in (("contract", contract_plan), ("realizability", realizability_plan)):
        c = dataclasses.replace(cfg, study=study, tiers=("all",))
        trained = [s for s in plan.steps(c, tmp_path / "ck", reproduce.QUICK_RUN)
                   if hasattr(s.config, "run")]
        assert trained and not any(s.config.run.fast_compile for s in trained), study


def test_the_cpu_transformer_keeps_the_reference_width(tmp_path):
    """On a CPU the published-scale transformer trains fewer steps at a smaller batch, but at
    the reference width: below it RoPE's accuracy at 48 falls by seed (experiments/
    transformer_recipe.py), so a reduced width would fail the expectation for that reason."""
    from lgjax.studies.implicit_bias import transformer

    cfg = reproduce.Config(out=str(tmp_path / "out"), ckpt_root=str(tmp_path / "ck"))
    _, exp = reproduce.experiment_config("transformer", cfg, tmp_path / "ck")
    ref = transformer.Config()
    assert (exp.d, exp.layers, exp.heads) == (ref.d, ref.layers, ref.heads) == (192, 2, 4)
    assert (exp.run.steps, exp.run.batch) == (1000, 64)


@pytest.mark.parametrize("quick", [False, True])
def test_a_plans_trained_steps_are_reduced_exactly_at_quick(tmp_path, quick):
    """The realizability sub-grids (one tier, Table 8's tasks, one RoPE row) choose cells at the
    published recipe: published scale, as the contract cells are; --quick's recipe is reduced."""
    from lgjax.harness.study import is_reduced

    cfg = reproduce.Config(quick=quick, jobs=3, out=str(tmp_path / "out"),
                           ckpt_root=str(tmp_path / "ck"))
    for study in ("realizability", "contract"):
        c = dataclasses.replace(cfg, study=study)
        trained = [s for s in reproduce.plan(c, tmp_path / "ck", list(STUDIES[study].experiments))
                   if hasattr(s.config, "run")]
        assert any(s.piece for s in trained), study  # the pieces too
        assert {is_reduced(s.config, s.module.STUDY.scale) for s in trained} == {quick}, study


@pytest.mark.parametrize("quick, devices, want", [(True, 0, 1), (False, 0, 0), (True, 2, 2),
                                                  (False, 2, 2)])
def test_quick_runs_on_one_device_unless_told(tmp_path, quick, devices, want):
    """--quick's compile-bound runs stay on one device by default; every plan takes it."""
    cfg = reproduce.Config(study="implicit-bias", quick=quick, devices=devices,
                           out=str(tmp_path / "out"), ckpt_root=str(tmp_path / "ck"))
    assert run_devices(cfg) == want
    _, exp = reproduce.experiment_config("multiseed", cfg, tmp_path / "ck")
    assert exp.run.devices == want
    for study, plan in (("contract", contract_plan), ("realizability", realizability_plan)):
        c = dataclasses.replace(cfg, study=study)
        runs = [s.config.run for s in plan.steps(c, tmp_path / "ck", reproduce.QUICK_RUN)
                if hasattr(s.config, "run")]
        assert runs
        # the realizability grid takes at most one device from --devices (0: all)
        assert all(r.devices == (min(want, 1) if study == "realizability" else want)
                   for r in runs)
