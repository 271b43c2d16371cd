"""The reproduction report: report.md, a self-contained report.html, report.json, and the
one-screen summary printed on stdout.

    verdicts = claims.check(claims.load_claims("implicit-bias"), results_by_experiment)
    text = write_report(verdicts, results_by_experiment, figures, out_dir, reduced=True)
    print(text)

`figures` maps an experiment to its figure PNG(s); report.md links copies under out_dir/figures,
report.html embeds them (base64), each beside the published and measured values of that
experiment's claims. An experiment without a figure says so.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import json
import math
import shutil
import textwrap
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from lgjax.claims import DIFFERS, FAILS, HOLDS, MATCHES, NOT_RUN, Verdict
from lgjax.report import markdown_table

MARK = {MATCHES: "matches", DIFFERS: "DIFFERS", NOT_RUN: "not run", HOLDS: "holds",
        FAILS: "FAILS"}
SUMMARY_WIDTH = 120  # characters per line of the stdout summary (the report has every detail)


# ---------------------------------------------------------------- formatting


def fmt_value(value) -> str:
    """A published value or a component of it, compactly."""
    if isinstance(value, dict):
        return ", ".join(f"{k}: {fmt_value(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "[" + ", ".join(fmt_value(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:.4g}"
    return "-" if value is None else str(value)


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
    return {"claim_checks": len(claims), "claims": len({v.id for v in claims}),
            "matches": c[MATCHES], "differs": c[DIFFERS], "claims_not_run": c[NOT_RUN],
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


def summary(verdicts: list[Verdict], results: dict[str, dict], reduced: bool,
            study: str = "implicit-bias") -> str:
    """One screen: the scale, N of M claim checks match, what differs (with values), why the
    rest did not run, and the expectations."""
    n = counts(verdicts)
    several = (f"; {', '.join(n['read_several_ways'])} checked under each reading"
               if n["read_several_ways"] else "")
    lines = [f"{study}: {scale_line(reduced, results)}",
             f"{n['matches']} of {n['claim_checks']} claim checks match ({n['claims']} claims"
             f"{several}); {n['differs']} differ, {n['claims_not_run']} not run",
             f"expectations: {n['holds']} of {n['expectations']} hold, {n['fails']} fail, "
             f"{n['expectations_not_run']} not run"]
    differ = [v for v in verdicts if v.status == DIFFERS]
    if differ:
        lines.append("claims that differ (published vs measured; report.md has every value):")
        lines += [_clip(f"  {v.label}: {v.detail}") for v in differ]
    fail = [v.id for v in verdicts if v.status == FAILS]
    if fail:
        lines += textwrap.wrap("expectations that fail: " + ", ".join(fail), SUMMARY_WIDTH,
                               subsequent_indent="  ")
    why = defaultdict(list)
    for v in verdicts:
        if v.status == NOT_RUN:
            why[v.detail].append(v.label)
    if why:
        lines.append("not run:")
        lines += [_clip(f"  {reason}: {', '.join(ids)}") for reason, ids in why.items()]
    return "\n".join(lines)


# ---------------------------------------------------------------- report files


def _figure_list(figures: dict[str, Path | list[Path]]) -> dict[str, list[Path]]:
    return {k: [Path(p) for p in (v if isinstance(v, list | tuple) else [v])]
            for k, v in figures.items()}


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


def write_json(verdicts, results, figures, path: Path, reduced: bool, study: str) -> None:
    doc = {"study": study, "reduced": reduced, "reduced_experiments": reduced_experiments(results),
           "counts": counts(verdicts),
           "experiments": {name: {"ran": name in results,
                                  "reduced": results.get(name, {}).get("reduced"),
                                  "wall_seconds": results.get(name, {}).get("wall_seconds"),
                                  "figures": [p.name for p in figures.get(name, [])]}
                           for name in _experiments(verdicts, results, figures)},
           "verdicts": [dataclasses.asdict(v) for v in verdicts]}
    path.write_text(json.dumps(_json_safe(doc), indent=1))


def _row(v: Verdict) -> list[str]:
    """A claim's or an expectation's row of the full tables (CLAIM_COLS / EXPECT_COLS)."""
    if v.kind == "expect":
        return [v.id, v.experiment, v.what, "-", "-", v.tolerance, MARK[v.status], v.detail]
    return [v.label, v.where, v.what, fmt_value(v.published), fmt_measured(v.measured),
            v.tolerance, MARK[v.status], v.detail]


def _short_row(v: Verdict) -> list[str]:
    """A claim's row in its experiment's section (SHORT_COLS)."""
    return [v.label, fmt_value(v.published), fmt_measured(v.measured), MARK[v.status]]


CLAIM_COLS = ["claim", "where", "what", "published", "measured (mean +- sd over seeds)",
              "tolerance", "verdict", "detail"]
EXPECT_COLS = ["expectation", "spec", "says", "published", "measured", "criterion", "verdict",
               "seen"]
SHORT_COLS = ["claim", "published", "measured", "verdict"]


def write_md(verdicts, results, figures, path: Path, reduced: bool, study: str) -> None:
    fig_dir = path.parent / "figures"
    claims = [v for v in verdicts if v.kind == "claim"]
    expects = [v for v in verdicts if v.kind == "expect"]
    lines = [f"# Reproduction report: {study}", "", f"**{scale_line(reduced, results)}**", "",
             "```", summary(verdicts, results, reduced, study), "```", "", "## Claims", ""]
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
            fig_dir.mkdir(parents=True, exist_ok=True)
            copy = fig_dir / f"{name}-{fig.name}"
            shutil.copyfile(fig, copy)
            lines += [f"![{name}: {fig.stem}](figures/{copy.name})", ""]
        if not figures.get(name):
            lines += ["(no figure)", ""]
        mine = [v for v in claims if v.experiment == name]
        if mine:
            lines += markdown_table(SHORT_COLS, [_short_row(v) for v in mine]) + [""]
    path.write_text("\n".join(lines) + "\n")


def _experiment_line(name: str, results: dict) -> str:
    if name not in results:
        return "not run"
    r = results[name]
    wall = r.get("wall_seconds")
    return (("reduced scale" if r.get("reduced") else "published scale")
            + (f"; {wall:.0f} s" if isinstance(wall, int | float) else ""))


CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}
table{border-collapse:collapse;font-size:13px;margin:1em 0}
td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top;text-align:left}
th{background:#f0f0f0}.matches,.holds{background:#e6f4e6}.differs,.fails{background:#fbe3e3}
.not-run{background:#f3f3f3;color:#666}.banner{padding:.6em;background:#fff4d6;
border:1px solid #e0c060}pre{background:#f7f7f7;padding:1em;overflow-x:auto}
img{max-width:100%;border:1px solid #ddd}"""


def _html_table(cols: list[str], rows: list[tuple[str, list[str]]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join(f"<tr class=\"{cls}\">" + "".join(f"<td>{html.escape(str(c))}</td>"
                                                   for c in r) + "</tr>" for cls, r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _cls(v: Verdict) -> str:
    return v.status.replace(" ", "-")


def write_html(verdicts, results, figures, path: Path, reduced: bool, study: str) -> None:
    claims = [v for v in verdicts if v.kind == "claim"]
    expects = [v for v in verdicts if v.kind == "expect"]
    esc = html.escape
    parts = [f"<!doctype html><html><head><meta charset=\"utf-8\"><title>Reproduction report: "
             f"{esc(study)}</title><style>{CSS}</style></head><body>",
             f"<h1>Reproduction report: {esc(study)}</h1>",
             f"<p class=\"banner\"><b>{esc(scale_line(reduced, results))}</b></p>",
             f"<pre>{esc(summary(verdicts, results, reduced, study))}</pre>",
             "<h2>Claims</h2>", _html_table(CLAIM_COLS, [(_cls(v), _row(v)) for v in claims]),
             "<h2>Expectations (the spec's qualitative \"expect\" column)</h2>",
             _html_table(EXPECT_COLS, [(_cls(v), _row(v)) for v in expects]),
             "<h2>Experiments</h2>"]
    for name in _experiments(verdicts, results, figures):
        parts.append(f"<h3>{esc(name)}</h3><p>{esc(_experiment_line(name, results))}</p>")
        for fig in figures.get(name, []):
            if not fig.exists():
                parts.append(f"<p>(figure missing: {esc(str(fig))})</p>")
                continue
            data = base64.b64encode(fig.read_bytes()).decode("ascii")
            parts.append(f"<figure><img alt=\"{esc(name)}: {esc(fig.stem)}\" "
                         f"src=\"data:image/png;base64,{data}\"><figcaption>{esc(fig.name)}"
                         "</figcaption></figure>")
        if not figures.get(name):
            parts.append("<p>(no figure)</p>")
        mine = [v for v in claims if v.experiment == name]
        if mine:
            parts.append(_html_table(SHORT_COLS, [(_cls(v), _short_row(v)) for v in mine]))
    parts.append("</body></html>")
    path.write_text("\n".join(parts))


def write_report(verdicts: list[Verdict], results_by_experiment: dict[str, dict],
                 figures: dict[str, Path | list[Path]], out_dir: Path | str, reduced: bool,
                 study: str = "implicit-bias") -> str:
    """Write report.md (+ figures/), report.html (self-contained), report.json into out_dir;
    return the one-screen summary (the caller prints it)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    args = (verdicts, results_by_experiment, _figure_list(figures))
    write_json(*args, out / "report.json", reduced, study)
    write_md(*args, out / "report.md", reduced, study)
    write_html(*args, out / "report.html", reduced, study)
    return (summary(verdicts, results_by_experiment, reduced, study)
            + f"\nwrote {out / 'report.md'}, report.html, report.json")


def figures_in(dirs: dict[str, Path | str]) -> dict[str, list[Path]]:
    """{experiment: its output directory} -> {experiment: the PNGs there}."""
    return {name: sorted(Path(d).glob("*.png")) for name, d in dirs.items()
            if sorted(Path(d).glob("*.png"))}
