"""The claims files' structured tolerance rules: the data the checker reads, held equal to the
published wording beside them (which the report shows), and refused in one line when malformed."""

from __future__ import annotations

import json
import types

import pytest

from lgjax import claims as C
from lgjax.reproduce import claims as RC

STUDIES = ("contract", "implicit-bias", "realizability")


@pytest.mark.parametrize("name", STUDIES)
def test_structured_rules_equal_the_wording(name):
    """Every claim's rules are what the parser reads from its tolerance text, so the data the
    checker uses and the wording the report shows cannot drift apart. A claim its readers
    restate (RESTATED) is checked by the restated text, so its file entry carries no rules."""
    readers = RC.readers_of(name)
    words, restated = C.words_of(readers), getattr(readers, "RESTATED", {})
    claims = RC.load_claims(name).claims
    for claim in claims:
        if claim.id in restated:
            assert claim.rules is None, claim.id
            continue
        assert claim.rules is not None, f"{claim.id}: no structured rules"
        assert list(claim.rules) == C.parse_tolerance(claim.tolerance, words), claim.id
    assert sum(c.rules is not None for c in claims) == len(claims) - len(restated)


def _file(tmp_path, rules, tolerance="alpha abs 0.25; c factor 2", claim_id="t1.x"):
    entry = {"id": claim_id, "where": "T1", "what": "w", "published": {"alpha": 1.0, "c": 0.5},
             "tolerance": tolerance, "rules": rules, "experiment": "e"}
    path = tmp_path / "claims.json"
    path.write_text(json.dumps({"claims": [entry]}))
    return path


READERS = types.SimpleNamespace(LABELS={"alpha": ("alpha",), "c": ("c",)})
GOOD = [{"label": "alpha", "kind": "abs", "amount": 0.25},
        {"label": "c", "kind": "factor", "amount": 2}]


def test_structured_rules_are_read_without_parsing(tmp_path, monkeypatch):
    claims = C.load_claims(_file(tmp_path, GOOD), READERS)
    (claim,) = claims.claims
    assert claim.rules == (C.Rule("alpha", "abs", 0.25, "alpha abs 0.25"),
                           C.Rule("c", "factor", 2.0, "c factor 2"))

    def refuse(*_):
        raise AssertionError("a claim with structured rules was parsed")

    monkeypatch.setattr(C, "parse_tolerance", refuse)
    measured = C.Measured({"alpha": C.fixed(1.2), "c": C.fixed(1.5)})
    (v,) = C.check(claims, {"e": {}}, READERS, {"t1.x": lambda _: measured}, [])
    assert v.status == C.DIFFERS and "c: 1.5 vs 0.5: ratio 3" in v.detail
    assert v.tolerance == "alpha abs 0.25; c factor 2"  # the wording, for the report


@pytest.mark.parametrize("rules, field", [
    ([{"label": "alpha", "kind": "about", "amount": 0.25}, GOOD[1]], "'kind'"),
    ([{"label": "alpha", "kind": "abs"}, GOOD[1]], "'amount'"),
    ([GOOD[0], {"label": "c", "kind": "factor", "amount": "2"}], "'amount'"),
    ([GOOD[0], {"label": "c", "kind": "exact", "amount": 2}], "'amount'"),
    ([{"label": "speed", "kind": "abs", "amount": 0.25}, GOOD[1]], "'label'"),
    ([{"label": "alpha and speed", "kind": "abs", "amount": 0.25}, GOOD[1]], "'label'"),
    ([GOOD[0], {"label": "c", "kind": "verdict"}], "'verdicts'"),
    ([GOOD[0], {"label": "c", "kind": "factor", "amount": 2, "width": 1}], "not a rule"),
    ([GOOD[0]], "'rules'"),
])
def test_a_malformed_structured_rule_is_refused_in_one_line(tmp_path, rules, field):
    with pytest.raises(C.ToleranceError, match=field) as err:
        C.load_claims(_file(tmp_path, rules), READERS)
    assert "claim t1.x" in str(err.value) and "\n" not in str(err.value)


def test_restated_claim_with_file_rules_is_refused(tmp_path):
    readers = types.SimpleNamespace(**vars(READERS),
                                    RESTATED={"t1.x": ({"alpha": 1.0}, "alpha abs 0.1")})
    with pytest.raises(C.ToleranceError, match="claim t1.x: field 'rules' given"):
        C.load_claims(_file(tmp_path, GOOD), readers)
