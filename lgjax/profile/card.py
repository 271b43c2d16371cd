"""The profile card: a verdict line per instrument and a comparison line per trained instrument
(compare.py: better / worse / indistinguishable from each canonical encoding, by the rule the card
prints), the comparison table (differences with their 95% intervals), the tables (the profiled
encoding first, in bold, then the canonical encodings from the reference file), one figure with
a panel per instrument; written as profile.md, a self-contained profile.html (the figure inlined)
and profile.json."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

import numpy as np

from lgjax.harness.outputs import markdown_table, save, subplots
from lgjax.profile import compare
from lgjax.profile.summary import FOCUS, IB_LONG


def _f(v, fmt="{:.3f}") -> str:
    return "-" if v is None or (isinstance(v, float) and np.isnan(v)) else fmt.format(v)


def verdicts(name: str, s: dict) -> list[str]:
    c, a = s["contract"], s["alpha"]
    if "undefined" in c:  # a content-aware encoding: the lab has no kernel to read
        lines = [f"Contract (at init): {c['undefined']}."]
    else:
        inv = "undefined (out of its table)" if c["shift_error"] is None else (
            "shift-invariant" if c["shift_error"] < 1e-9 else f"not shift-invariant (error "
            f"{c['shift_error']:.3g})")
        lines = [f"Contract (at init): {inv}; {c['out_of_table']:.0%} of distances out of "
                 f"table, {c['collisions']} collisions, {c['monotonic_breaks']} monotonic "
                 "breaks."]
    learned = s.get("contract_learned", {})
    if learned:
        label = next(iter(learned.values())).get("averaged")
        lines[0] += " Learned (fixed offset, mean over seeds" + (
            f"), as its {label}" if label else ")") + ": " + "; ".join(
            f"K={K[1]}: shift error {_f(v['shift_error'], '{:.3g}')}, "
            f"{_f(v['collisions'], '{:.1f}')} collisions, "
            f"{_f(v['monotonic_breaks'], '{:.1f}')} monotonic breaks"
            + (f", spread over sequences {v['content_sd']:.3g}" if label else "")
            for K, v in learned.items()) + "."
    if "undefined" in a:
        lines.append(f"Realizability (alpha_L, training-free): {a['undefined']}.")
    else:
        real = [t for t, r in a.items() if r["acc_L0"] == 1.0]
        carry = [t for t in real if a[t]["alpha"] >= 0.5]
        of = f"; {s['alpha_restriction']}" if s.get("alpha_restriction") else ""
        lines.append(f"Realizability (alpha_L, training-free{of}): a positional-only head realizes "
                     f"{len(real)} of {len(a)} tasks at L0; alpha_{FOCUS} >= 0.5 on "
                     f"{', '.join(carry) or 'none'}.")
    ib = s["implicit_bias"]
    lines.append("Implicit bias (fixed offset, trained): " + "; ".join(
        f"K={K[1]}: accuracy {v['acc_in_range']:.2f} in range, {v['acc_long']:.2f} at "
        f"L={IB_LONG} (chance 0.05), offset -{K[1]} selected in {v['offset_ok']} seeds"
        + (f", key carrier fraction {v['carrier_key']:.2f} ({v['carrier_key_init']:.2f} at "
           "init)" if "carrier_key" in v else "") for K, v in ib.items()) + ".")
    rz = s["realizability"]
    if rz:
        good = [t for t, v in rz["tasks"].items() if v["lg"] >= 0.7]
        rho = "undefined (alpha_L or LG constant)" if rz["rho"] is None else f"{rz['rho']:.2f}"
        prec = "undefined (no row passes alpha >= 0.5)" if rz["precision"] is None else \
            f"{rz['precision']:.2f}"
        if "alpha_undefined" in rz:
            rho = prec = "undefined (alpha_L undefined: a content-aware encoding)"
        lines.append(f"Realizability, trained 1L1H: LG@{FOCUS} >= 0.7 on "
                     f"{', '.join(good) or 'none'}; Spearman rho(alpha_L, LG) {rho} over "
                     f"{rz['rows']} (task, L) rows of learnable tasks; precision of the screen "
                     f"alpha >= 0.5 -> LG >= 0.7: {prec}.")
    cm = s.get("contract_matrix")
    if cm:
        ok = [t for t, v in cm["tasks"].items() if v["learnable"]]
        lines.append(f"Contract matrix (trained transformer, {cm['steps']} steps): learnable on "
                     f"{len(ok)} of {len(cm['tasks'])} task families; accuracy at L={cm['L']}: "
                     + ", ".join(f"{t} {v['long']:.2f}" for t, v in cm["tasks"].items()) + ".")
    return lines


def tables(name: str, s: dict, ref: dict) -> list[tuple[str, list[str], list[list]]]:
    """(title, columns, rows) per instrument; the profiled encoding's row first, bold."""
    every = [(name, s, True)] + [(n, r, False) for n, r in ref.items() if n != name]
    bold = lambda n, mine: f"**{n}**" if mine else n
    out = [("Contract lab at initialisation (docs/studies/contract.md)",
            ["encoding", "shift error", "out of table", "collisions", "monotonic breaks"],
            [[bold(n, m), *_contract_cells(x["contract"])] for n, x, m in every])]
    if s.get("contract_learned"):
        avg = any("averaged" in v for v in s["contract_learned"].values())
        out.append(("Contract lab of the kernels learned at fixed offset K = 1 / K = 2 (the "
                     "implicit-bias runs; mean over seeds" + ("; data-averaged: a content-aware "
                     "encoding's positional term averaged over evaluation sequences, not a "
                     "positional-only kernel)" if avg else ")"),
                     ["encoding", "K", "shift error", "out of table", "collisions",
                      "monotonic breaks"],
                     [[bold(n + (" (data-averaged)" if "averaged" in v else ""), m), K[1],
                       _f(v["shift_error"], "{:.3g}"), _f(v["out_of_table"], "{:.2f}"),
                       _f(v["collisions"], "{:.1f}"), _f(v["monotonic_breaks"], "{:.1f}")]
                      for n, x, m in every for K, v in x.get("contract_learned", {}).items()]))
    tasks = next((list(x["alpha"]) for _, x, _ in every if "undefined" not in x["alpha"]), [])
    out.append((f"alpha_{FOCUS} (pinned selection, generic head at m = 32; * = not realized "
                "at L0; def = content-dependent, alpha := 0)", ["encoding", *tasks],
                [[bold(n, m)] + [("undefined" if "undefined" in x["alpha"] else
                                  _alpha_cell(x["alpha"].get(t))) for t in tasks]
                 for n, x, m in every]))
    out.append((f"Implicit bias: fixed offset, accuracy in range (L=16) / at L={IB_LONG}, "
                f"offset -K selected at L={IB_LONG}, key carrier fraction of a rotary part "
                "(trained / at init)",
                ["encoding"] + [c for K in (1, 2) for c in (
                    f"K={K} acc", f"K={K} acc@{IB_LONG}", f"K={K} offset", f"K={K} carrier")],
                [[bold(n, m)] + [v for K in ("K1", "K2") for v in (
                    _f(x["implicit_bias"][K]["acc_in_range"], "{:.2f}"),
                    _f(x["implicit_bias"][K]["acc_long"], "{:.2f}"),
                    x["implicit_bias"][K]["offset_ok"], _carrier(x["implicit_bias"][K]))]
                 for n, x, m in every]))
    if s["realizability"]:
        rt = list(s["realizability"]["tasks"])
        seeds = s["realizability"]["seeds"]
        out.append((f"Realizability, trained 1L1H: LG@{FOCUS} (mean +- sd over {seeds} seed"
                    f"{'s' if seeds > 1 else ''}; train accuracy in brackets), rho(alpha, LG)",
                    ["encoding", *rt, "rho"],
                    [[bold(n, m)] + [_lg(x["realizability"], t) for t in rt]
                     + [_f(x["realizability"].get("rho"), "{:.2f}")] for n, x, m in every
                     if x["realizability"]]))
    cm = s.get("contract_matrix")
    if cm:
        ct = list(cm["tasks"])
        out.append((f"Contract matrix row (trained, {cm['steps']} steps; seed means): accuracy "
                    f"in range / at L={cm['L']} / after a PAD shift of {cm['shift']}; * = not "
                    "learnable", ["encoding", *ct],
                    [[bold(n, m)] + [_cm(x["contract_matrix"]["tasks"].get(t)) for t in ct]
                     for n, x, m in every if x.get("contract_matrix")]))
    return out


def _contract_cells(c: dict) -> list:
    if "undefined" in c:
        return ["undefined (content-aware)", "-", "-", "-"]
    return [_f(c["shift_error"], "{:.3g}"), _f(c["out_of_table"], "{:.2f}"), c["collisions"],
            c["monotonic_breaks"]]


def _cm(v: dict | None) -> str:
    if v is None:
        return "-"
    return (f"{v['in_range']:.2f} / {v['long']:.2f} / {v['shift']:.2f}"
            + ("" if v["learnable"] else "*"))


def _carrier(v: dict) -> str:
    return f"{v['carrier_key']:.2f} / {v['carrier_key_init']:.2f}" if "carrier_key" in v else "-"


def _alpha_cell(r: dict | None) -> str:
    if r is None:
        return "-"
    if r["acc_L0"] is None:
        return "def"
    return f"{r['alpha']:.2f}" + ("*" if r["acc_L0"] < 1.0 else "")


def _lg(rz: dict, t: str) -> str:
    v = rz["tasks"].get(t)
    return "-" if v is None else f"{v['lg']:.2f}+-{v['lg_sd']:.2f} ({v['train_acc']:.2f})"


def figure(name: str, inst: dict, ref_inst: dict, stem: Path) -> None:
    every = [(n, x) for n, x in ref_inst.items() if n != name] + [(name, inst)]
    matrix = "contract_matrix" in inst
    fig, axes = subplots(1, 4 + matrix, figsize=(18 + 4.5 * matrix, 4.2))
    style = lambda n: dict(color="black", lw=2.8, zorder=5, label=f"{n} (profiled)") \
        if n == name else dict(lw=1.1, alpha=0.75, label=n)
    for n, x in every:
        if isinstance(x["contract"], list):  # a content-aware encoding has no kernel to plot
            curve = np.array([np.nan if v is None else v for v in x["contract"][0]["curve"]],
                             float)
            axes[0].plot(np.arange(1, len(curve) + 1), curve, **style(n))
        a = x["alpha"]
        if "undefined" not in a:
            axes[1].plot(a["lengths"], [np.mean([r["alpha"][k] for r in a["tasks"].values()])
                                        for k in range(len(a["lengths"]))], marker="o",
                         **style(n))
        ib = x["implicit_bias"]
        for K, ls in (("K1", "-"), ("K2", "--")):
            st = style(n) | ({"label": None} if K == "K2" else {})
            axes[2].plot(ib["lengths"], np.mean(ib[K]["accuracy"], 0), ls=ls, **st)
        rz = x.get("realizability", {}).get("1L1H")
        if rz:
            axes[3].plot(rz["lengths"], np.asarray(rz["lg"]).mean((0, 1)), marker="o", **style(n))
        cm = x.get("contract_matrix")
        if matrix and cm:
            L = str(max(cm["extend"]))
            axes[4].plot(list(cm["tasks"]), [np.mean(r["extend"][L]) for r in cm["tasks"].values()],
                         marker="o", ls="", ms=9, **style(n))
    axes[0].set(title="contract: positional-only score(0, d) at init", xlabel="distance d")
    axes[1].set(title="alpha_L, mean over tasks", xlabel="test length L", ylim=(-0.05, 1.05))
    if "undefined" in inst["alpha"]:  # said on the panel, as on the card
        for ax in axes[:2]:
            ax.text(0.5, 0.5, f"{name}: undefined\n(content-aware: no positional-only kernel)",
                    transform=ax.transAxes, ha="center", va="center", fontsize=9)
    axes[2].set(title="implicit bias: accuracy (K=1 solid, K=2 dashed)", xlabel="length",
                ylim=(-0.05, 1.05))
    axes[2].axhline(0.05, color="grey", lw=0.8, ls=":")
    axes[3].set(title="trained 1L1H: LG@L, mean over tasks", xlabel="test length L",
                ylim=(-0.05, 1.05))
    axes[3].legend(fontsize=8, loc="upper right")
    if matrix:
        longest = max(inst["contract_matrix"]["extend"])
        axes[4].set(title=f"contract matrix: accuracy at L={longest}", xlabel="task family",
                    ylim=(-0.05, 1.05))
        axes[4].tick_params(axis="x", labelrotation=20)
    save(fig, stem)


def _trained_at(card: dict) -> str:
    M = card.get("random_positions", 0)
    return f", trained at random positions in [0, {M})" if M else ""


def said(card: dict) -> list[str]:
    """The card's sentences: a verdict per instrument, then a comparison per trained one."""
    return (verdicts(card["encoding"], card["summary"])
            + compare.verdict_lines(card.get("comparison", {})))


def comparison_table(card: dict) -> tuple[str, list[str], list[list]] | None:
    """(title, columns, rows): a row per canonical encoding, a column per trained instrument,
    each cell the difference, its interval and the verdict."""
    comp = card.get("comparison", {})
    if not comp:
        return None
    names = list(dict.fromkeys(n for c in comp.values() for n in c["vs"]))
    return (f"Comparison with the canonical encodings: {card['encoding']} minus each, "
            f"{compare.LEVEL:.0%} interval, verdict",
            ["canonical", *(f"{k.replace('_', ' ')}: {c['metric']}" for k, c in comp.items())],
            [[n, *(compare.cell(c["vs"][n]) if n in c["vs"] else "-" for c in comp.values())]
             for n in names])


def markdown(card: dict) -> str:
    name, s = card["encoding"], card["summary"]
    lines = [f"# Profile of `{name}`{_trained_at(card)}", "",
             f"Recipe: **{card['recipe']['name']}**"
             + (" (reduced: below the studies' published scale)" if card["reduced"] else "")
             + f"; {card['wall_seconds']:.0f} s wall. Canonical encodings: "
             f"{card['reference_note']}.",
             "", "## Verdicts", ""] + [f"- {v}" for v in said(card)] + [""]
    comp = comparison_table(card)
    if comp:
        lines += [f"## {comp[0]}", "", f"Rule: {compare.RULE}.", "",
                  *markdown_table(comp[1], comp[2]), ""]
    for title, cols, rows in tables(name, s, card["reference_summary"]):
        lines += [f"## {title}", "", *markdown_table(cols, rows), ""]
    return "\n".join(lines + ["![profile](profile.png)", ""])


def to_html(card: dict, png: Path) -> str:
    name, s = card["encoding"], card["summary"]
    esc = html.escape
    cell = lambda c: f"<b>{esc(str(c)[2:-2])}</b>" if str(c).startswith("**") else esc(str(c))
    parts = [f"<h1>Profile of <code>{esc(name)}</code>{esc(_trained_at(card))}</h1>",
             f"<p>Recipe: <b>{esc(card['recipe']['name'])}</b>"
             + (" (reduced: below the studies' published scale)" if card["reduced"] else "")
             + f"; {card['wall_seconds']:.0f} s wall. Canonical encodings: "
             f"{esc(card['reference_note'])}.</p>", "<h2>Verdicts</h2><ul>"]
    parts += [f"<li>{esc(v)}</li>" for v in said(card)] + ["</ul>"]
    comp = comparison_table(card)
    if comp:
        parts.append(f"<p>Comparison rule: {esc(compare.RULE)}.</p>")
    img = base64.b64encode(png.read_bytes()).decode()
    parts.append(f'<img alt="profile figure" src="data:image/png;base64,{img}">')
    for title, cols, rows in ([comp] if comp else []) + tables(name, s,
                                                               card["reference_summary"]):
        parts.append(f"<h2>{esc(title)}</h2><table><tr>"
                     + "".join(f"<th>{esc(c)}</th>" for c in cols) + "</tr>"
                     + "".join(("<tr class='mine'>" if str(r[0]).startswith("**") else "<tr>")
                               + "".join(f"<td>{cell(c)}</td>" for c in r) + "</tr>"
                               for r in rows) + "</table>")
    css = ("body{font-family:sans-serif;max-width:1150px;margin:1em auto;color:#222}"
           "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;"
           "padding:3px 7px;text-align:right}td:first-child,th:first-child{text-align:left}"
           "tr.mine td{background:#fff4cc}img{width:100%}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>profile {esc(name)}"
            f"</title><style>{css}</style></head><body>{''.join(parts)}</body></html>")


def write(card: dict, inst: dict, ref_inst: dict, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    figure(card["encoding"], inst, ref_inst, out / "profile")
    (out / "profile.md").write_text(markdown(card))
    (out / "profile.html").write_text(to_html(card, out / "profile.png"))
    (out / "profile.json").write_text(json.dumps(card | {"instruments": inst}, indent=1))
    return [out / f for f in ("profile.md", "profile.html", "profile.json", "profile.png",
                              "profile.pdf")]
