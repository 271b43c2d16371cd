"""The reproduction report: report.md, a self-contained report.html, report.json, and the
one-screen summary printed on stdout.

    verdicts = claims.check(claims.load_claims("implicit-bias"), results_by_experiment)
    text = write_report(verdicts, results_by_experiment, figures, out_dir, reduced=True)
    print(text)

`figures` maps an experiment to its figure PNG(s); report.md links copies under out_dir/figures,
each beside the published and measured values of that experiment's claims. An experiment without
a figure says so. report.html is report.md rendered (python-markdown), its figures embedded.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import json
import math
import re
import shutil
from collections import Counter, defaultdict
from pathlib import Path

import markdown
import numpy as np

from lgjax.claims import DIFFERS, FAILS, HOLDS, MATCHES, NOT_RUN, Verdict, fmt_number
from lgjax.harness.outputs import markdown_table
from lgjax.reproduce.cost import Cost

MARK = {MATCHES: "matches", DIFFERS: "DIFFERS", NOT_RUN: "not run", HOLDS: "holds",
        FAILS: "FAILS"}
SUMMARY_WIDTH = 120  # characters per line of the stdout summary (the report has every detail)


# ---------------------------------------------------------------- formatting


def fmt_value(value) -> str:
    """A published value or a component of it, compactly."""
    if isinstance(value, dict):
        return ", ".join(f"{k}: {fmt_value(v)}" for k, v in value.items())
    return "-" if value is None else fmt_number(value)


def fmt_measured(measured: dict) -> str:
    """{component: {mean, sd, n}} -> 'mean +- sd' per component, n once when shared."""
    if not measured:
        return "-"
    ns = {m["n"] for m in measured.values()}
    parts = []
    for name, m in measured.items():
        text = fmt_value(m["mean"]) + (f" +- {m['sd']:.2g}" if m["sd"] is not None else "")
        parts.append(f"{name}: {text}" if name else text)
    tail = f" (n={ns.pop()})" if len(ns) == 1 and 0 not in ns else ""
    return "; ".join(parts) + tail


def counts(verdicts: list[Verdict]) -> dict:
    claims = [v for v in verdicts if v.kind == "claim"]
    expects = [v for v in verdicts if v.kind == "expect"]
    c, e = Counter(v.status for v in claims), Counter(v.status for v in expects)
    readings = sorted({v.id for v in claims if v.reading})
    judged = {k: n for k, n in c.items() if k not in (MATCHES, DIFFERS, NOT_RUN)}
    return {"claim_checks": len(claims), "claims": len({v.id for v in claims}),
            "matches": c[MATCHES], "differs": c[DIFFERS], "claims_not_run": c[NOT_RUN],
            "judged": dict(sorted(judged.items())),
            "read_several_ways": readings, "expectations": len(expects), "holds": e[HOLDS],
            "fails": e[FAILS], "expectations_not_run": e[NOT_RUN]}


def reduced_experiments(results: dict[str, dict]) -> list[str]:
    return sorted(name for name, r in results.items() if r.get("reduced"))


def scale_line(reduced: bool, results: dict[str, dict]) -> str:
    small = reduced_experiments(results)
    if reduced or small:
        which = ", ".join(small) if small else "all experiments"
        return (f"REDUCED RUN: below the published scale ({which}); its numbers are not "
                "expected to match the publication's")
    return "Scale: every experiment at the published scale"


# ---------------------------------------------------------------- stdout summary


def _clip(text: str) -> str:
    return text if len(text) <= SUMMARY_WIDTH else text[:SUMMARY_WIDTH - 3] + "..."


def _explained(verdicts: list[Verdict], word: str) -> list[str]:
    """Each verdict's line (its label, what was measured or seen) and, under it, its
    explanation where it carries one ("    differs: ..." / "    fails: ...")."""
    lines = []
    for v in verdicts:
        lines.append(_clip(f"  {v.label}: {v.detail}"))
        lines += [_clip(f"    {word}: {v.explanation}")] if v.explanation else []
    return lines


def summary(verdicts: list[Verdict], results: dict[str, dict], reduced: bool,
            study: str = "implicit-bias") -> str:
    """One screen: the scale, N of M claim checks match, what differs (with values), why the
    rest did not run, and the expectations."""
    n = counts(verdicts)
    several = (f"; {', '.join(n['read_several_ways'])} checked under each reading"
               if n["read_several_ways"] else "")
    lines = [f"{study}: {scale_line(reduced, results)}",
             f"{n['matches']} of {n['claim_checks']} claim checks match ({n['claims']} claims"
             f"{several}); {n['differs']} differ, {n['claims_not_run']} not run"
             + "".join(f", {k} {c}" for k, c in n["judged"].items()),
             f"expectations: {n['holds']} of {n['expectations']} hold, {n['fails']} fail, "
             f"{n['expectations_not_run']} not run"]
    differ = [v for v in verdicts if v.status == DIFFERS]
    if differ:
        lines.append("claims that differ (published vs measured; report.md has every value):")
        lines += _explained(differ, "differs")
    judged = [v for v in verdicts if v.kind == "claim" and v.status in n["judged"]]
    if judged:
        lines.append("judged claims (no published number; the verdict decides):")
        lines += [_clip(f"  {v.label}: {v.status.upper()}: {v.detail}") for v in judged]
    fail = [v for v in verdicts if v.status == FAILS]
    if fail:
        lines.append("expectations that fail (what was seen; report.md has each criterion):")
        lines += _explained(fail, "fails")
    why = defaultdict(list)
    for v in verdicts:
        if v.status == NOT_RUN:
            why[v.detail].append(v.label)
    if why:
        lines.append("not run:")
        lines += [_clip(f"  {reason}: {', '.join(ids)}") for reason, ids in why.items()]
    return "\n".join(lines)


# ---------------------------------------------------------------- report files


def _json_safe(x):
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {str(k): _json_safe(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_json_safe(v) for v in x]
    return x


def _experiments(verdicts, results, figures) -> list[str]:
    return list(dict.fromkeys([v.experiment for v in verdicts] + list(results) + list(figures)))


def write_json(verdicts, results, figures, path: Path, reduced: bool, study: str,
               spent: Cost | None = None) -> None:
    doc = {"study": study, "reduced": reduced, "reduced_experiments": reduced_experiments(results),
           "counts": counts(verdicts),
           "cost": dataclasses.asdict(spent) if spent is not None else None,
           "experiments": {name: {"ran": name in results,
                                  "reduced": results.get(name, {}).get("reduced"),
                                  "wall_seconds": results.get(name, {}).get("wall_seconds"),
                                  "figures": [p.name for p in figures.get(name, [])]}
                           for name in _experiments(verdicts, results, figures)},
           "verdicts": [dataclasses.asdict(v) for v in verdicts]}
    path.write_text(json.dumps(_json_safe(doc), indent=1))


def verdict_text(v: Verdict) -> str:
    """A verdict as the tables show it: "DIFFERS: <explanation>" ("FAILS: ..." for an
    expectation) where the claim or expectation carries one."""
    mark = MARK.get(v.status, v.status)
    return f"{mark}: {v.explanation}" if v.status in (DIFFERS, FAILS) and v.explanation else mark


def _row(v: Verdict) -> list[str]:
    """A claim's or an expectation's row of the full tables (CLAIM_COLS / EXPECT_COLS)."""
    if v.kind == "expect":
        return [v.id, v.experiment, v.what, "-", "-", v.tolerance, verdict_text(v), v.detail]
    return [v.label, v.where, v.what, fmt_value(v.published), fmt_measured(v.measured),
            v.tolerance, verdict_text(v), v.detail]


def _short_row(v: Verdict) -> list[str]:
    """A claim's row in its experiment's section (SHORT_COLS)."""
    return [v.label, fmt_value(v.published), fmt_measured(v.measured), verdict_text(v)]


CLAIM_COLS = ["claim", "where", "what", "published", "measured (mean +- sd over seeds)",
              "tolerance", "verdict", "detail"]
EXPECT_COLS = ["expectation", "spec", "says", "published", "measured", "criterion", "verdict",
               "seen"]
SHORT_COLS = ["claim", "published", "measured", "verdict"]


def report_markdown(verdicts, results, figures, out: Path, reduced: bool, study: str,
                    spent: Cost | None = None) -> str:
    """report.md's text (report.html renders it); copies the figures it links to out/figures."""
    claims = [v for v in verdicts if v.kind == "claim"]
    expects = [v for v in verdicts if v.kind == "expect"]
    lines = [f"# Reproduction report: {study}", "", f"**{scale_line(reduced, results)}**", "",
             "```", summary(verdicts, results, reduced, study), "```", ""]
    lines += [f"{spent.line()}.", ""] if spent is not None else []
    lines += ["## Claims", ""]
    lines += markdown_table(CLAIM_COLS, [_row(v) for v in claims])
    lines += ["", "## Expectations (the spec's qualitative \"expect\" column)", ""]
    lines += markdown_table(EXPECT_COLS, [_row(v) for v in expects])
    lines += ["", "## Experiments", ""]
    for name in _experiments(verdicts, results, figures):
        lines += [f"### {name}", "", _experiment_line(name, results), ""]
        for fig in figures.get(name, []):
            if not fig.exists():
                lines += [f"(figure missing: {fig})", ""]
                continue
            copy = out / FIGURES / f"{name}-{fig.name}"
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(fig, copy)
            lines += [f"![{name}: {fig.stem}]({FIGURES}/{copy.name})", ""]
        if not figures.get(name):
            lines += ["(no figure)", ""]
        mine = [v for v in claims if v.experiment == name]
        if mine:
            lines += markdown_table(SHORT_COLS, [_short_row(v) for v in mine]) + [""]
    return "\n".join(lines) + "\n"


def _experiment_line(name: str, results: dict) -> str:
    if name not in results:
        return "not run"
    r = results[name]
    wall = r.get("wall_seconds")
    return (("reduced scale" if r.get("reduced") else "published scale")
            + (f"; {wall:.0f} s" if isinstance(wall, int | float) else ""))


FIGURES = "figures"  # report.md's figure copies, beside it
CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}
table{border-collapse:collapse;font-size:13px;margin:1em 0}
td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top;text-align:left}
th{background:#f0f0f0}tr:has(.matches,.holds){background:#e6f4e6}
tr:has(.differs,.fails){background:#fbe3e3}tr:has(.not-run){background:#f3f3f3;color:#666}
pre{background:#f7f7f7;padding:1em;overflow-x:auto}img{max-width:100%;border:1px solid #ddd}"""


def render_html(md: str, out: Path, study: str) -> str:
    """report.md as a self-contained page: its figures embedded (base64), each verdict cell
    classed by its verdict so that CSS colours the row."""
    body = markdown.markdown(md, extensions=["tables", "fenced_code"])
    png = lambda m: base64.b64encode((out / m[1]).read_bytes()).decode("ascii")
    body = re.sub(f'src="((?:[\\w.-]+/)?{FIGURES}/[^"]+)"',  # a study's, in `reproduce all`
                  lambda m: f'src="data:image/png;base64,{png(m)}"', body)
    verdict = lambda m: m[1].lower().replace(" ", "-")
    body = re.sub(f"<td>({'|'.join(MARK.values())})(: [^<]*)?</td>",
                  lambda m: f'<td class="{verdict(m)}">{m[1]}{m[2] or ""}</td>', body)
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>Reproduction report: "
            f"{html.escape(study)}</title><style>{CSS}</style></head><body>\n{body}\n"
            "</body></html>")


def write_report(verdicts: list[Verdict], results_by_experiment: dict[str, dict],
                 figures: dict[str, Path | list[Path]], out_dir: Path | str, reduced: bool,
                 study: str = "implicit-bias", spent: Cost | None = None) -> str:
    """Write report.md (+ figures/), report.html (self-contained), report.json into out_dir;
    return the one-screen summary (the caller prints it). `spent`: what the steps cost."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    figures = {k: [Path(p) for p in (v if isinstance(v, list | tuple) else [v])]
               for k, v in figures.items()}
    args = (verdicts, results_by_experiment, figures)
    write_json(*args, out / "report.json", reduced, study, spent)
    md = report_markdown(*args, out, reduced, study, spent)
    (out / "report.md").write_text(md)
    (out / "report.html").write_text(render_html(md, out, study))
    return (summary(verdicts, results_by_experiment, reduced, study)
            + f"\nwrote {out / 'report.md'}, report.html, report.json")


def figures_in(dirs: dict[str, Path | str]) -> dict[str, list[Path]]:
    """{experiment: its output directory} -> {experiment: the PNGs there}."""
    return {name: pngs for name, d in dirs.items() if (pngs := sorted(Path(d).glob("*.png")))}


def write_combined(done: dict[str, dict], out_dir: Path | str) -> str:
    """`reproduce all`: one report.md/.html/.json over the studies written in out_dir/<study>:
    a summary table per study, then each study's own report as its section."""
    out = Path(out_dir)
    cols = ["study", "scale", "claim checks", "match", "differ", "not run", "judged",
            "expectations hold / fail / not run", "wall s", "cost s"]
    rows, sections, doc = [], [], {}
    for study, res in done.items():
        sub = json.loads((out / study / "report.json").read_text())
        n, wall = sub["counts"], sum(res["wall_seconds"].values())
        rows.append([study, "reduced" if sub["reduced"] else "published", n["claim_checks"],
                     n["matches"], n["differs"], n["claims_not_run"],
                     ", ".join(f"{k} {c}" for k, c in n.get("judged", {}).items()) or "-",
                     f"{n['holds']} / {n['fails']} / {n['expectations_not_run']}",
                     f"{wall:.0f}", f"{res['cost']['seconds']:.0f}"])
        md = (out / study / "report.md").read_text()
        md = md.replace(f"]({FIGURES}/", f"]({study}/{FIGURES}/")  # figures stay beside it
        sections += ["", re.sub(r"^#", "##", md, flags=re.M)]
        doc[study] = {"counts": n, "reduced": sub["reduced"], "wall_seconds": res["wall_seconds"],
                      "cost": res["cost"]}
    table = markdown_table(cols, rows)
    md = "\n".join(["# Reproduction report: every study", "", *table, *sections]) + "\n"
    (out / "report.md").write_text(md)
    (out / "report.html").write_text(render_html(md, out, "every study"))
    (out / "report.json").write_text(json.dumps(_json_safe(doc), indent=1))
    lines = ["every study:"] + [f"  {r[0]}: {r[3]} of {r[2]} claim checks match, {r[4]} differ, "
                                f"{r[5]} not run{'; ' + r[6] if r[6] != '-' else ''} "
                                f"({r[1]} scale, {r[8]} s here, {r[9]} s across processes)"
                                for r in rows]
    total = sum(res["cost"]["seconds"] for res in done.values())
    lines.append(f"  cost of every study across processes: {total:.0f} s")
    return "\n".join(lines + [f"wrote {out / 'report.md'}, report.html, report.json"])
