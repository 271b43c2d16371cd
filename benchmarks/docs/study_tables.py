"""The claims tables of the study pages (docs/studies/<study>.md), written from each study's
claims file and a recorded reproduction (docs/data/<study>.json): the recorded results files are
checked again by the claims checker of the code that runs this (lgjax.reproduce.claims), and the
rows are the claims report's own (lgjax.reproduce.report), so a page shows what
`lgjax reproduce` would report from those measurements today. tests/test_study_tables.py checks
that each committed page is what this script writes.

  python benchmarks/docs/study_tables.py       # rewrites the tables in docs/studies/*.md
  python benchmarks/docs/study_tables.py record contract OUT --ckpt-root CK \
      --command "lgjax reproduce contract --only contract-lab" --date "..." --commit SHA \
      --machine "..." --scale "..."            # docs/data/contract.json from the --out folder
                                               # OUT of that reproduction (run directories: CK)

A recorded file keeps of each experiment's results file what the claim checks read (the record
is refused unless they read the same verdicts from it as from the whole files) and what the
page shows (SHOWN), the folders of the machine that ran it written as <out> and <ckpt-root>.
Experiments absent from it read "not recorded", with the command that measures them and what it
costs (MEASURE).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from lgjax.claims import DIFFERS, FAILS, NOT_RUN  # noqa: E402
from lgjax.harness.outputs import markdown_table  # noqa: E402
from lgjax.reproduce import claims as study_claims  # noqa: E402
from lgjax.reproduce import report  # noqa: E402

DATA = ROOT / "docs" / "data"
PAGES = ROOT / "docs" / "studies"
STUDIES = ("implicit-bias", "realizability", "contract")
BEGIN = "<!-- claims tables: written by benchmarks/docs/study_tables.py -->"
END = "<!-- end of the claims tables -->"
NOT_RECORDED = "not recorded"

# what measures an experiment the recorded run did not make, and what it costs (the costs were
# measured on this project's machines; each says where and when)
MEASURE = {
    "implicit-bias": {
        "transformer": (
            "lgjax reproduce implicit-bias --only transformer",
            "on an accelerator, at the reference scale (8000 steps, d = 192): 102 s of training "
            "for RoPE and 82 s for APE on a lent H200 (2026-12-04); on a CPU the command trains "
            "it at the reference width with fewer steps (d = 192, batch 64, 1000 steps: 91 s "
            "for both on a 2-core CPU beside other work, 2026-12-05) and the report says it is "
            "reduced"),
    },
    "realizability": {
        "realizability-train": (
            "lgjax reproduce realizability",
            "on a CPU the 1L1H tier with the L0-sensitivity grids and the RoPE frequency-scale "
            "rows: the 1L1H tier alone took 44 min on a 2-core CPU with the machine mostly to "
            "itself (2026-12-05); the deeper tiers (--tiers 2L4H,4L4H, about 3.1 and 7.4 "
            "CPU-hours) run by default on an accelerator"),
        "realizability-report": (
            "lgjax reproduce realizability",
            "seconds, once realizability-train's runs exist"),
    },
    "contract": {
        "contract-train": (
            "lgjax reproduce contract",
            "the matrix: 24 cells x 5 seeds x 3000 steps, 185-288 s a cell on a 2-core CPU, "
            "about 1.5 h in all"),
        "contract-report": (
            "lgjax reproduce contract",
            "after contract-train, which measures each cell as it finishes (9-20 s a cell); "
            "the whole matrix from scratch 5807 s on a 2-core CPU (2026-12-06)"),
    },
}


# ---------------------------------------------------------------- the recorded file


def _portable(node, folders: dict[str, str]):
    """The results with this machine's folders written as their names (<out>, <ckpt-root>)."""
    if isinstance(node, dict):
        return {k: _portable(v, folders) for k, v in node.items()}
    if isinstance(node, list):
        return [_portable(v, folders) for v in node]
    if isinstance(node, str):
        for path, name in folders.items():
            node = node.replace(path, name)
    return node


class _Seen(dict):
    """A results dict that notes which of its keys a reader asks for, and that it is read
    whole where the reader iterates it, so that the recorded file keeps those only. `seen`
    holds key paths, each marked "key" or "whole"."""

    def __init__(self, node: dict, path: tuple, seen: dict):
        super().__init__({k: _seen(v, (*path, k), seen) for k, v in node.items()})
        self._path, self._seen = path, seen

    def _whole(self):
        self._seen[self._path] = "whole"

    def _key(self, key):
        self._seen.setdefault((*self._path, key), "key")

    def __getitem__(self, key):
        self._key(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._key(key)
        return super().get(key, default)

    def __contains__(self, key):
        self._key(key)
        return super().__contains__(key)

    def __iter__(self):
        self._whole()
        return super().__iter__()

    def keys(self):
        self._whole()
        return super().keys()

    def values(self):
        self._whole()
        return super().values()

    def items(self):
        self._whole()
        return super().items()


def _seen(node, path: tuple, seen: dict):
    """Dicts tracked, at any depth (a list's too: tidy rows, read field by field)."""
    if isinstance(node, dict):
        return _Seen(node, path, seen)
    if isinstance(node, list) and any(isinstance(v, dict) for v in node):
        return [_seen(v, (*path, i), seen) for i, v in enumerate(node)]
    return node


def _kept(node, path: tuple, seen: dict):
    """The part of `node` (at `path`) that the readers took."""
    if isinstance(node, list) and seen.get(path) != "whole":
        return [_kept(v, (*path, i), seen) for i, v in enumerate(node)]
    if not isinstance(node, dict) or seen.get(path) == "whole":
        return node
    return {k: _kept(v, (*path, k), seen) for k, v in node.items() if (*path, k) in seen}


# what the page shows of an experiment besides its claims' values
SHOWN = ("experiment", "reduced", "wall_seconds", "train_seconds", "trained_seconds",
         "measure_seconds", "code_digest", "config")


def keyed(doc: dict) -> bool:
    """An experiment run at several settings (e.g. contract-lab): {key: results file}."""
    return "experiment" not in doc and bool(doc) and all(isinstance(v, dict) for v in doc.values())


def _with_shown(kept: dict, doc: dict) -> dict:
    if keyed(doc):
        return {k: _with_shown(kept.get(k, {}), v) for k, v in doc.items()}
    return {**kept, **{k: doc[k] for k in SHOWN if k in doc}}


def trimmed(study: str, results: dict[str, dict]) -> dict[str, dict]:
    """Each experiment's results with only what the study's claim checks read (and SHOWN); the
    checks must read the same verdicts from it as from the whole files."""
    seen: dict = {}
    claim_set = study_claims.load_claims(study)
    study_claims.check(claim_set, _Seen(results, (), seen))
    kept = {name: _with_shown(_kept(doc, (name,), seen), doc) for name, doc in results.items()}
    same = lambda r: json.dumps(report._json_safe(
        [dataclasses.asdict(v) for v in study_claims.check(claim_set, r)]))
    if same(kept) != same(results):
        raise SystemExit(f"{study}: the trimmed results check differently from the whole files")
    return kept


def record(study: str, out: Path, ckpt_root: Path, provenance: dict) -> dict:
    """The recorded file of a reproduction written to `out` (its --out) with `ckpt_root`."""
    from lgjax.reproduce import command

    cfg = command.Config(study=study, out=str(out), ckpt_root=str(ckpt_root), progress=False)
    experiments = list(command.STUDIES[study].experiments)
    results = command.load_results(command.plan(cfg, ckpt_root, experiments))
    if not results:
        raise ValueError(f"{out}: no results file of {study} there; give the --out folder of "
                         f"`lgjax reproduce {study}`")
    folders = {str(out.resolve()): "<out>", str(out): "<out>",
               str(ckpt_root.resolve()): "<ckpt-root>", str(ckpt_root): "<ckpt-root>"}
    return {"study": study, "recorded": provenance,
            "results": _portable(trimmed(study, results), folders)}


def load(study: str, data: Path = DATA) -> dict:
    return json.loads((data / f"{study}.json").read_text())


# ---------------------------------------------------------------- the tables


def _cells(v) -> dict[str, str]:
    """The report's row of a claim, by its column names."""
    return dict(zip(report.CLAIM_COLS, report._row(v), strict=False))


def verdict_cell(v, recorded: set[str]) -> str:
    """The verdict; a differing claim's with by how much, and the explanation of a differing
    claim or a failing expectation where it carries one."""
    if v.status == NOT_RUN and v.experiment not in recorded:
        return NOT_RECORDED
    text = report.MARK.get(v.status, v.status)
    why = f". Why: {v.explanation}" if v.explanation else ""
    if v.status == FAILS:  # an expectation: what was seen has its own column
        return text + why
    return f"{text}: {v.detail}{why}" if v.status == DIFFERS else text


def _md(text) -> str:
    """A cell's text as plain text in the page: no emphasis, no tag, no equation."""
    return (str(text).replace("\\", "\\\\").replace("*", "\\*").replace("$", "\\$")
            .replace("<", "&lt;"))


def _table(cols: list[str], rows: list[list]) -> list[str]:
    return markdown_table(cols, [[_md(c) for c in row] for row in rows])


def claims_table(verdicts, recorded: set[str]) -> list[str]:
    """An experiment's claims: which (and where published), what each says, the published and
    the measured value, the verdict."""
    rows = []
    for v in verdicts:
        c = {k: _md(x) for k, x in _cells(v).items()}
        measured = c[report.CLAIM_COLS[4]] if v.experiment in recorded else "-"
        claim = c["claim"].replace(".", ".<wbr>")  # a long id may break after a dot
        rows.append([f"{claim}<br>({c['where']})", c["what"], c["published"], measured,
                     _md(verdict_cell(v, recorded))])
    return markdown_table(["claim", "what", "published", "measured", "verdict"], rows)


def full_table(verdicts, recorded: set[str]) -> list[str]:
    """The report's claims table (tolerance and detail included), in a folded block."""
    rows = []
    for v in verdicts:
        row = report._row(v)
        if v.status == NOT_RUN and v.experiment not in recorded:
            row[report.CLAIM_COLS.index("verdict")] = NOT_RECORDED
        rows.append(row)
    return _folded("Every claim check with its tolerance and detail (the report's table)",
                   _table(report.CLAIM_COLS, rows))


def _folded(title: str, lines: list[str]) -> list[str]:
    return [f'??? note "{title}"', ""] + ["    " + line for line in lines] + [""]


def recorded_line(doc: dict) -> str:
    r = doc["recorded"]
    walls = {name: wall_of(res) for name, res in doc["results"].items()}
    shown = ", ".join(f"{n} {_wall(w)}" for n, w in walls.items() if w is not None)
    return (f"Recorded by `{r['command']}` on {r['date']} at commit `{r['commit'][:10]}`, "
            f"{r['machine']}; {r['scale']}. Wall time per experiment, as its results file "
            f"records it: {shown}. The recorded results files are "
            f"`docs/data/{doc['study']}.json`.")


def wall_of(doc: dict):
    """An experiment's wall seconds (several settings: their sum)."""
    if keyed(doc):
        walls = [wall_of(v) for v in doc.values()]
        return None if None in walls else sum(walls)
    seconds = doc.get("wall_seconds")
    return seconds if isinstance(seconds, int | float) else None


def _wall(seconds) -> str:
    return f"{seconds:.0f} s" if isinstance(seconds, int | float) else "-"


def section(study: str, data: Path = DATA) -> str:
    """The generated part of a study page: the recorded run, the counts, a table per
    experiment, what measures the experiments not recorded, the expectations, the full table."""
    doc = load(study, data)
    results = doc["results"]
    verdicts = study_claims.check(study_claims.load_claims(study), results)
    claims = [v for v in verdicts if v.kind == "claim"]
    expects = [v for v in verdicts if v.kind == "expect"]
    recorded = set(results)
    lines = [BEGIN, "", recorded_line(doc), "", counts_line(verdicts, recorded), ""]
    for name in dict.fromkeys(v.experiment for v in claims):
        mine = [v for v in claims if v.experiment == name]
        lines += [f"### {name}", "", _experiment_line(study, name, results), ""]
        lines += claims_table(mine, recorded) + [""]
    if expects:
        lines += _folded("The qualitative expectations and what was seen",
                         _table(["expectation", "says", "criterion", "verdict", "seen"],
                                [[v.id, v.what, v.tolerance, verdict_cell(v, recorded), v.detail]
                                 for v in expects]))
    lines += full_table(claims, recorded)
    return "\n".join(lines + [END])


def counts_line(verdicts, recorded: set[str]) -> str:
    """The report's counts, a verdict "not run" split into not recorded (its experiment is not
    in the recorded run) and not run (recorded, a value missing)."""
    n = report.counts(verdicts)
    absent = lambda kind: sum(1 for v in verdicts if v.kind == kind and v.status == NOT_RUN
                              and v.experiment not in recorded)
    split = lambda kind, total: (f"{absent(kind)} not recorded"
                                 + (f", {total - absent(kind)} not run"
                                    if total > absent(kind) else ""))
    judged = "".join(f", {k} {c}" for k, c in n["judged"].items())
    several = n["read_several_ways"]
    text = (f"**{n['matches']} of {n['claim_checks']} claim checks match, {n['differs']} differ"
            f"{judged}, {split('claim', n['claims_not_run'])}** ({n['claims']} claims"
            + (f"; {', '.join(several)} checked under each reading" if several else "") + ").")
    if n["expectations"]:
        text += (f" Expectations: {n['holds']} of {n['expectations']} hold, {n['fails']} fail, "
                 f"{split('expect', n['expectations_not_run'])}.")
    return text


def _experiment_line(study: str, name: str, results: dict) -> str:
    if name in results:
        r = results[name]
        if keyed(r):
            return f"Recorded at {len(r)} settings ({', '.join(r)}; {_wall(wall_of(r))})."
        scale = "reduced scale" if r.get("reduced") else "published scale"
        return f"Recorded at the {scale} ({_wall(wall_of(r))})."
    command, cost = MEASURE.get(study, {}).get(name, (f"lgjax reproduce {study}", "not measured"))
    return f"Not recorded. Measured by `{command}`; {cost}."


def page(study: str, text: str, data: Path = DATA) -> str:
    """The page's text with its generated part (between BEGIN and END) written anew."""
    block = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not block.search(text):
        raise ValueError(f"docs/studies/{study}.md: no generated block ({BEGIN} ... {END})")
    return block.sub(lambda _: section(study, data), text)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what")
    r = sub.add_parser("record", help="docs/data/<study>.json from a reproduction's --out")
    r.add_argument("study", choices=STUDIES)
    r.add_argument("out", type=Path)
    r.add_argument("--ckpt-root", type=Path, required=True)
    for field in ("command", "date", "commit", "machine", "scale"):
        r.add_argument(f"--{field}", required=True)
    args = p.parse_args(argv)
    try:
        run(args)
    except ValueError as err:  # bad input: one line, before anything is written
        print(f"study_tables: {err}", file=sys.stderr)
        raise SystemExit(2) from None


def run(args) -> None:
    if args.what == "record":
        prov = {f: getattr(args, f) for f in ("command", "date", "commit", "machine", "scale")}
        doc = record(args.study, args.out, args.ckpt_root, prov)
        DATA.mkdir(exist_ok=True)
        (DATA / f"{args.study}.json").write_text(json.dumps(doc, indent=1) + "\n")
        return
    missing = [f"docs/data/{s}.json" for s in STUDIES if not (DATA / f"{s}.json").exists()]
    if missing:
        raise ValueError(f"{', '.join(missing)}: no recorded file; write one with "
                         "`python benchmarks/docs/study_tables.py record STUDY OUT ...`")
    pages = {s: page(s, (PAGES / f"{s}.md").read_text()) for s in STUDIES}
    for study, text in pages.items():
        (PAGES / f"{study}.md").write_text(text)


if __name__ == "__main__":
    main()
