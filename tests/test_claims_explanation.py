"""A claim's `explanation`: one line saying why ours differs (the cause an experiment found, or the
reading of the publication it is), shown beside a "differs" verdict in every report file, and
refused in one line when malformed."""

from __future__ import annotations

import json
import types

import pytest

from lgjax import claims as C
from lgjax.harness.cli import main
from lgjax.reproduce import claims as RC
from lgjax.reproduce import report as R

WHY = "a reading of tau: the study's numbers follow tau multiplying the logits"
READERS = types.SimpleNamespace(LABELS={"alpha": ("alpha",)})


def _file(tmp_path, **extra):
    claims = [{"id": f"t1.{n}", "where": "T1", "what": "w", "published": {"alpha": 1.0},
               "tolerance": "alpha abs 0.25", "experiment": "e", **extra} for n in "ab"]
    path = tmp_path / "claims.json"
    path.write_text(json.dumps({"claims": claims}))
    return path


def _verdicts(tmp_path, value_a=2.0, value_b=1.1):
    claims = C.load_claims(_file(tmp_path, explanation=WHY), READERS)
    registry = {"t1.a": lambda _: C.Measured({"alpha": C.fixed(value_a)}),
                "t1.b": lambda _: C.Measured({"alpha": C.fixed(value_b)})}
    return C.check(claims, {"e": {}}, READERS, registry, [])


def test_the_explanation_is_read_and_carried_to_the_verdict(tmp_path):
    a, b = _verdicts(tmp_path)
    assert (a.status, a.explanation) == (C.DIFFERS, WHY)
    assert (b.status, b.explanation) == (C.MATCHES, WHY)
    assert R.verdict_text(a) == f"DIFFERS: {WHY}"
    assert R.verdict_text(b) == "matches"  # shown beside a difference only


def test_a_claim_without_one_differs_bare(tmp_path):
    (claim, _) = C.load_claims(_file(tmp_path), READERS).claims
    assert claim.explanation == ""
    registry = {"t1.a": lambda _: C.Measured({"alpha": C.fixed(2.0)})}
    (v,) = C.check(C.Claims("x", (claim,)), {"e": {}}, READERS, registry, [])
    assert R.verdict_text(v) == "DIFFERS"


def test_every_report_file_shows_it_beside_the_difference(tmp_path):
    verdicts = _verdicts(tmp_path)
    out = tmp_path / "report"
    text = R.write_report(verdicts, {"e": {}}, {}, out, reduced=False, study="x")
    assert f"    differs: {WHY}" in text.splitlines()  # the stdout summary
    md = (out / "report.md").read_text()
    assert md.count(f"| DIFFERS: {WHY} |") == 2  # the claims table and the experiment's
    page = (out / "report.html").read_text()
    assert f'<td class="differs">DIFFERS: {WHY}</td>' in page  # coloured as a difference
    doc = json.loads((out / "report.json").read_text())
    assert [v["explanation"] for v in doc["verdicts"]] == [WHY, WHY]


@pytest.mark.parametrize("value", [["a", "list"], 3, "two\nlines", "   "])
def test_a_malformed_explanation_is_refused_in_one_line(tmp_path, value):
    with pytest.raises(ValueError, match="field 'explanation'") as err:
        C.load_claims(_file(tmp_path, explanation=value), READERS)
    assert "claim t1.a" in str(err.value) and "\n" not in str(err.value)


def test_reproduce_refuses_a_malformed_claims_file_with_exit_2(tmp_path, monkeypatch, capsys):
    shipped = json.loads(RC.claims_path("contract").read_text())
    shipped["claims"][0]["explanation"] = {"not": "text"}
    bad = tmp_path / "contract.json"
    bad.write_text(json.dumps(shipped))
    monkeypatch.setattr(RC, "claims_path", lambda study: bad)
    assert main(["reproduce", "contract", "--out", str(tmp_path / "o"),
                 "--ckpt-root", str(tmp_path / "ck")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "field 'explanation'" in err
    assert shipped["claims"][0]["id"] in err
    assert not (tmp_path / "ck").exists()



def test_an_expectation_carries_its_explanation_beside_fails_only(tmp_path):
    claims = C.load_claims(_file(tmp_path), READERS)
    expectations = [C.Expectation(f"e.{n}", "e", "text", "criterion",
                                  lambda _, ok=ok, n=n: (ok, f"seen {n}"), explanation=WHY)
                    for n, ok in (("fails", False), ("holds", True))]
    verdicts = C.check(claims, {"e": {}}, READERS, {}, expectations)
    fails, holds = verdicts[-2:]
    assert (fails.status, fails.explanation) == (C.FAILS, WHY)
    assert R.verdict_text(fails) == f"FAILS: {WHY}"
    assert R.verdict_text(holds) == "holds"
    text = R.write_report(verdicts, {"e": {}}, {}, tmp_path / "report", reduced=False, study="x")
    lines = text.splitlines()
    assert lines[lines.index("  e.fails: seen fails") + 1] == f"    fails: {WHY}"
    assert "e.holds" not in text
    md = (tmp_path / "report" / "report.md").read_text()
    assert f"| FAILS: {WHY} | seen fails |" in md
    page = (tmp_path / "report" / "report.html").read_text()
    assert f'<td class="fails">FAILS: {WHY}</td>' in page


def test_an_expectation_with_a_malformed_explanation_is_refused():
    from lgjax.studies.implicit_bias import claims as ib

    with pytest.raises(ValueError, match="expectation x.y: field 'explanation'"):
        ib.expect("x.y", "text", "criterion", explanation="two\nlines")
