"""`lgjax reproduce --resume` reuses a step's results.json only when this code wrote it for the
same config from runs that are finished and unchanged; otherwise it measures again."""

import json
import shutil
from pathlib import Path

import pytest

from lgjax.harness import provenance
from lgjax.harness.cli import main
from lgjax.harness.study import RunOptions, finished_result
from lgjax.reproduce import command as reproduce
from lgjax.studies.implicit_bias import multiseed

ONLY = "multiseed,prop1"


@pytest.fixture
def reproduced(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(reproduce, "QUICK_RUN", RunOptions(seeds=1, steps=3, batch=8,
                                                           eval_sequences=16))

    def run(*extra) -> tuple[str, dict]:
        assert main(["reproduce", "implicit-bias", "--quick", "--only", ONLY, "--jobs", "1",
                     "--out", str(tmp_path / "out"), "--ckpt-root", str(tmp_path / "ck"),
                     "--no-progress", *extra]) == 0
        return capsys.readouterr(), json.loads((tmp_path / "out" / "report.json").read_text())

    return run


def files(tmp_path) -> dict[str, bytes]:
    return {n: (tmp_path / "out" / n / "results.json").read_bytes() for n in ONLY.split(",")}


def test_resume_reuses_finished_steps_only_from_this_code_config_and_finished_runs(
        tmp_path, reproduced, monkeypatch):
    """One reproduction, then in turn: --resume reuses it; another config, a damaged config
    file, a missing checkpoint or run is not reused; other code measures again."""
    _, first = reproduced()
    before = files(tmp_path)
    printed, again = reproduced("--resume")
    for name in ONLY.split(","):
        assert f"lgjax: {name}: its runs are finished" in printed.err
    assert files(tmp_path) == before  # not measured again, not rewritten
    assert again["verdicts"] == first["verdicts"]
    # what training the runs took, and the walls the reused files record (no more than the
    # first process's walls, which also held its imports)
    assert again["cost"]["training_seconds"] == first["cost"]["training_seconds"] > 0
    assert again["cost"]["training_seconds"] < again["cost"]["seconds"] <= first["cost"]["seconds"]

    cfg = next(s.config for s in reproduce.plan(
        reproduce.Config(quick=True, resume=True, out=str(tmp_path / "out"),
                         ckpt_root=str(tmp_path / "ck"), only=("multiseed",), progress=False),
        tmp_path / "ck" / "quick", ["multiseed"]) if s.experiment == "multiseed")
    assert finished_result(multiseed.STUDY, cfg) is not None
    other = type(cfg)(**{**cfg.__dict__, "run": RunOptions(**{**cfg.run.__dict__, "steps": 4})})
    assert finished_result(multiseed.STUDY, other) is None  # another config
    doc = finished_result(multiseed.STUDY, cfg)
    run_dir = next(iter(doc["run_dirs"].values()))
    config = Path(run_dir) / "config.json"
    text = config.read_bytes()
    config.write_bytes(b"\xff" + text)  # not UTF-8: not this run, and no traceback
    assert finished_result(multiseed.STUDY, cfg) is None
    config.write_bytes(text)
    assert finished_result(multiseed.STUDY, cfg) is not None

    monkeypatch.setattr(provenance, "code_digest", lambda: "another tree")
    printed, _ = reproduced("--resume")
    assert "not measured again" not in printed.err
    for name in ONLY.split(","):
        doc = json.loads((tmp_path / "out" / name / "results.json").read_text())
        assert doc["code_digest"] == "another tree"

    assert finished_result(multiseed.STUDY, cfg) is not None  # what that code wrote
    shutil.rmtree(f"{run_dir}/3")  # its last checkpoint gone: unfinished
    assert finished_result(multiseed.STUDY, cfg) is None
    shutil.rmtree(run_dir)
    assert finished_result(multiseed.STUDY, cfg) is None
