"""The study pages' claims tables (benchmarks/docs/study_tables.py): each committed page is what
the script writes from its recorded file and the claims file, and the script on a small
hand-made recorded file."""

import dataclasses
import json
import types

import pytest

from benchmarks.docs import study_tables as T
from lgjax.claims import DIFFERS, NOT_RUN, Verdict

LENGTHS = [12, 16, 20, 24, 32, 40, 48]
PUBLISHED_ROPE = [1.0, 1.0, 1.0, 1.0, 0.96, 0.91, 0.83]  # t1.rope_acc in implicit-bias.json


@pytest.mark.parametrize("study", T.STUDIES)
def test_study_page_is_what_the_script_writes(study):
    path = T.PAGES / f"{study}.md"
    committed = path.read_text()
    assert T.page(study, committed) == committed, "run: python benchmarks/docs/study_tables.py"


@pytest.mark.parametrize("study", T.STUDIES)
def test_recorded_file_says_which_run_and_points_nowhere_else(study):
    doc = T.load(study)
    assert doc["study"] == study
    assert set(doc["recorded"]) == {"command", "date", "commit", "machine", "scale"}
    text = json.dumps(doc["results"])
    assert "/tmp/" not in text and "/work/" not in text  # folders read <out>, <ckpt-root>


def tiny(tmp_path, extra: dict | None = None):
    """A recorded implicit-bias file with one experiment, multiseed, on two seeds: RoPE at the
    published accuracies, APE at 0.5 beyond the trained range (published: near chance)."""
    multiseed = {"K": 1, "lengths": LENGTHS, "reduced": False, "wall_seconds": 12.0,
                 "rope": {"accuracy": [PUBLISHED_ROPE] * 2,
                          "selected_offset": [[-1] * len(LENGTHS)] * 2},
                 "ape": {"accuracy": [[1.0, 1.0] + [0.5] * 5] * 2}, **(extra or {})}
    doc = {"study": "implicit-bias",
           "recorded": {"command": "lgjax reproduce implicit-bias --only multiseed",
                        "date": "2026-01-01", "commit": "0" * 40, "machine": "a test",
                        "scale": "published"},
           "results": {"multiseed": multiseed}}
    (tmp_path / "implicit-bias.json").write_text(json.dumps(doc))
    return doc


def rows_of(text: str) -> dict[str, list[str]]:
    """The compact tables' rows by claim id (the first cell)."""
    out = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| claim"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            out.setdefault(cells[0].split("<br>(")[0].replace("<wbr>", ""), cells)
    return out


def test_section_checks_the_recorded_results_again(tmp_path):
    tiny(tmp_path)
    text = T.section("implicit-bias", tmp_path)
    rows = rows_of(text)
    assert rows["t1.rope_acc"][-1] == "matches"
    assert rows["t1.ape_acc"][-1].startswith("DIFFERS")
    assert rows["t1.rope_selects_minus_K"][-1] == "matches"
    assert rows["t2.K1.key_frac"][-2:] == ["-", T.NOT_RECORDED]  # prop1 was not recorded
    assert "Recorded by `lgjax reproduce implicit-bias --only multiseed` on 2026-01-01" in text
    assert "Not recorded. Measured by `lgjax reproduce implicit-bias --only transformer`" in text
    assert "**2 of 69 claim checks match, 1 differ, 66 not recorded** (69 claims" in text


def test_page_replaces_only_the_generated_block(tmp_path):
    tiny(tmp_path)
    text = f"# Page\n\nbefore\n\n{T.BEGIN}\nstale\n{T.END}\n\nafter\n"
    out = T.page("implicit-bias", text, tmp_path)
    assert out.startswith("# Page\n\nbefore\n\n" + T.BEGIN) and out.endswith(T.END + "\n\nafter\n")
    assert "stale" not in out and "t1.rope_acc" in out
    with pytest.raises(ValueError, match="no generated block"):
        T.page("implicit-bias", "# Page without markers\n", tmp_path)


def test_trimmed_keeps_what_the_checks_read(tmp_path):
    results = tiny(tmp_path, {"unread": {"big": list(range(100))}})["results"]
    kept = T.trimmed("implicit-bias", results)
    assert "unread" not in kept["multiseed"]
    assert kept["multiseed"]["rope"] == results["multiseed"]["rope"]
    assert kept["multiseed"]["wall_seconds"] == 12.0  # shown on the page


def test_portable_names_the_folders():
    doc = {"run": "/tmp/x/out/multiseed", "dirs": ["/tmp/x/ckpt/a"], "n": 3}
    out = T._portable(doc, {"/tmp/x/out": "<out>", "/tmp/x/ckpt": "<ckpt-root>"})
    assert out == {"run": "<out>/multiseed", "dirs": ["<ckpt-root>/a"], "n": 3}


def test_a_differing_claim_shows_by_how_much_and_its_explanation():
    v = Verdict("c1", "claim", "multiseed", "Table 1", "what", 0.5, "abs 0.1", DIFFERS,
                "0.9 vs 0.5: off by 0.4")
    fields = {**dataclasses.asdict(v), "explanation": "the seeds differ"}  # a claim's optional one
    explained = types.SimpleNamespace(**fields)
    assert T.verdict_cell(explained, {"multiseed"}) == \
        "DIFFERS: 0.9 vs 0.5: off by 0.4. Why: the seeds differ"
    assert T.verdict_cell(v, {"multiseed"}) == "DIFFERS: 0.9 vs 0.5: off by 0.4"
    not_run = dataclasses.replace(v, status=NOT_RUN, detail="experiment not run: multiseed")
    assert T.verdict_cell(not_run, set()) == T.NOT_RECORDED
    assert T.verdict_cell(not_run, {"multiseed"}) == "not run"  # recorded, a value missing


def test_cells_are_plain_text():
    assert T._md("1/a*(L) <= $x$") == "1/a\\*(L) &lt;= \\$x\\$"
