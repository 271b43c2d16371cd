"""`lgjax reproduce --quick` end to end at a tiny scale: experiments run through the harness,
every claim gets a verdict (those of experiments left out: not run), the report is written."""

import json

import pytest

from lgjax.harness.cli import main
from lgjax.harness.study import RunOptions
from lgjax.reproduce import command as reproduce


@pytest.fixture
def tiny_quick(monkeypatch):
    monkeypatch.setattr(reproduce, "QUICK_RUN", RunOptions(seeds=1, steps=3, batch=8,
                                                           eval_sequences=16))


def test_quick_reproduce_end_to_end(tmp_path, tiny_quick, capsys):
    out = tmp_path / "rep"
    assert main(["reproduce", "implicit-bias", "--quick", "--only", "multiseed,shift,prop1",
                 "--out", str(out), "--ckpt-root", str(tmp_path / "ck"), "--no-progress"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["reduced"] is True
    verdicts = report["verdicts"]
    by_id = {v["id"]: v for v in verdicts}
    assert by_id["t1.rope_acc"]["status"] in ("matches", "differs")  # measured
    assert by_id["t5.base10000"]["status"] == "not run"  # frequency was left out
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "REDUCED" in html
    assert (tmp_path / "ck" / "quick" / "multiseed-K1" / "rope").is_dir()
    text = capsys.readouterr().out
    assert "claim checks match" in text and "wall seconds per experiment" in text


def test_unknown_experiment_is_refused_before_any_work(tmp_path, capsys):
    assert main(["reproduce", "--only", "nosuch", "--out", str(tmp_path / "o"),
                 "--ckpt-root", str(tmp_path / "ck")]) == 2
    assert "--only" in capsys.readouterr().err
    assert not (tmp_path / "ck").exists()
