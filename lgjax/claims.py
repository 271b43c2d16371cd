"""The vocabulary of published claims checked against results: claims files, tolerances, measured
values, verdicts. It knows no study: a study's claim readers import it (so they sit below
`lgjax reproduce`, which finds each study's claims file and readers: lgjax.reproduce.claims).

A claims file (`<study package>/<study>.json`) lists claims: id, where, what, the published value
(a number; a symbol such as "-K"; a list; or a dict of components, e.g. one per length), a
tolerance text (the published wording, shown in the report), its rules as data (`read_rules`: one
per clause of the text, read directly, so checking parses nothing; a claim without them has its
text parsed) and the experiment that measures it; optionally an `explanation`, one line saying
why ours differs where an experiment found it (the cause, or the reading of the publication
that it is: "a reading of ...: ...", "ruled out: ..."), which the report shows beside a
"differs" verdict. A study's readers module (its package declares it) holds
REGISTRY, claim id -> a function of the results dicts {experiment: results.json dict} returning
the measured components (`Measured`), and EXPECTATIONS, the spec's qualitative "expect" column as
named predicates; optionally its own tolerance words (LABELS: a label -> the components it speaks
about; FORMS: a clause's pattern -> a rule kind; RULES: a kind -> its rule, see `Words`), RESTATED
(claims whose published value and tolerance it restates in the rule forms, same numbers) and
HINTS (experiment -> what running it takes, said when it was not run). A new study adds a claims
file and a readers module; no report code changes.

Verdicts: a claim "matches" when every tolerance rule holds, "differs" (saying by how much) when
one does not, "not run" (saying why) when its experiment, its measurement or a key of it is absent.
A judged claim (tolerance "verdict: a / b / ...", a prediction without a published number) takes
the verdict its measurement returns as its status. Expectations "hold", "fail" or are "not
run"; one may carry an explanation too, shown beside "fails". An unknown tolerance text, or
a malformed rule, is a ToleranceError.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MATCHES, DIFFERS, NOT_RUN = "matches", "differs", "not run"
HOLDS, FAILS = "holds", "fails"
EPS = 1e-9  # published values carry 2-3 digits; a deviation equal to the tolerance matches


class ToleranceError(ValueError):
    """A tolerance text no rule form reads, a malformed structured rule, or either leaving a
    published component unchecked."""


class NotRun(Exception):  # noqa: N818 -- a verdict, not a failure
    """Raised by a measurement that cannot be made from the results at hand; carries the why."""


def missing(key: str) -> NotRun:
    return NotRun(f"measurement missing: {key}")


def dig(node, path: tuple, where: str):
    """node[path...]; an absent key raises NotRun naming `where` and the path up to it."""
    for i, key in enumerate(path):
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            raise missing("/".join(str(p) for p in (where, *path[:i + 1]))) from None
    return node


def get(results: dict, experiment: str, *path):
    """results[experiment][path...]; a reader may read an experiment other than its claim's own
    (the report's), which a run with --only may not have made: not run, not a KeyError."""
    if experiment not in results:
        raise missing(f"{experiment} (not run)")
    return dig(results[experiment], path, experiment)


# ---------------------------------------------------------------- claims files


@dataclass(frozen=True)
class Claim:
    id: str  # unique within its study, e.g. "t2.K1.alpha"
    where: str  # the table or figure of the publication
    what: str  # what is measured, in words
    published: object  # number, symbol ("-K"), list, or dict of components
    tolerance: str  # as written in the file (the report shows it); parsed where rules is None
    experiment: str  # the experiment whose results measure it
    restated: str = ""  # the file's own published value and tolerance, where the readers
    # restate them in the forms the rules read (same numbers; see the readers' RESTATED)
    rules: tuple[Rule, ...] | None = None  # the file's structured rules (read_rules); None:
    # the tolerance text is parsed instead
    explanation: str = ""  # why ours differs, where an experiment found it: one line naming
    # the cause or the reading ("a reading of ...: ...", "ruled out: ..."); the report shows it
    # beside a "differs" verdict


@dataclass(frozen=True)
class Claims:
    study: str  # the claims file's stem, which names its measure module
    claims: tuple[Claim, ...]


def load_claims(path: Path, readers=None) -> Claims:
    """A claims file, read with its study's readers module (its tolerance words and RESTATED;
    None: the shared words only); every tolerance is parsed here, so an unknown one stops the
    load instead of passing quietly later."""
    path = Path(path)
    raw = json.loads(path.read_text())
    fields = ("id", "where", "what", "published", "tolerance", "experiment")
    words, restate = words_of(readers), getattr(readers, "RESTATED", {})
    claims = []
    for entry in raw["claims"]:
        absent = [f for f in fields if f not in entry]
        if absent:
            raise ValueError(f"{path}: claim {entry.get('id', '?')} lacks {absent}")
        rules = None
        if "rules" in entry:
            if entry["id"] in restate:  # checked by the restated text: file rules would be unread
                raise ToleranceError(f"{path}: claim {entry['id']}: field 'rules' given, but its "
                                     "readers restate its tolerance (RESTATED)")
            rules = read_rules(f"{path}: claim {entry['id']}", entry["rules"],
                               entry["tolerance"], words)
        why = read_explanation(f"{path}: claim {entry['id']}", entry.get("explanation", ""))
        claim = Claim(**{f: entry[f] for f in fields}, rules=rules, explanation=why)
        if claim.id in restate:
            published, tolerance = restate[claim.id]
            claim = Claim(**{**{f: entry[f] for f in fields}, "published": published,
                             "tolerance": tolerance},
                          restated=f"file: {entry['published']}; {entry['tolerance']!r}",
                          explanation=why)
        rules_by_component(claim, words)
        claims.append(claim)
    twice = sorted(i for i, n in Counter(c.id for c in claims).items() if n > 1)
    if twice:
        raise ValueError(f"{path}: duplicate claim ids {twice}")
    return Claims(path.stem, tuple(claims))


def read_explanation(where: str, text) -> str:
    """A claim's optional `explanation`: one line of text (absent: ""); anything else is a
    ValueError naming `where` (the claim) and the field."""
    if not isinstance(text, str) or "\n" in text or "\r" in text or (text and not text.strip()):
        raise ValueError(f"{where}: field 'explanation' must be one line of text naming the "
                         f"cause or the reading, got {text!r}")
    return text.strip()


def components(published) -> dict[str, object]:
    """Published value -> {component: value}: "" for a bare value, dict keys (nested joined by
    '.') otherwise; lists are single components."""
    if not isinstance(published, dict):
        return {"": published}
    out = {}
    for k, v in published.items():
        for sub, leaf in components(v).items():
            out[f"{k}.{sub}" if sub else str(k)] = leaf
    return out


# ---------------------------------------------------------------- measured values


@dataclass(frozen=True)
class Stat:
    """One measured component: point value, spread over seeds, and the raw cells behind it."""

    mean: float | list[float]  # mean over seeds (a [lo, hi] or [mean, sd] list where published so)
    sd: float | None  # sd over seeds (ddof 0, as the experiment tables); None without seeds
    n: int  # seeds behind it (0: a property of the configuration, no seeds)
    cells: tuple[float, ...]  # every raw value (seed x length cells) for exact and bound checks

    def show(self) -> str:
        text = fmt_number(self.mean)
        if self.sd is not None:
            text += f" +- {fmt_number(self.sd)}"
        return text + (f" (n={self.n})" if self.n else "")


def over_seeds(samples) -> Stat:
    """A value with one sample per seed."""
    a = np.asarray(samples, float).ravel()
    return Stat(float(a.mean()), float(a.std()) if a.size > 1 else None, int(a.size),
                tuple(a.tolist()))


def every_cell(values) -> Stat:
    """A discrete value read in every cell (seed x length ...): shown as its most common value."""
    a = np.asarray(values)
    cells = a.ravel().tolist()
    return Stat(Counter(cells).most_common(1)[0][0], None, int(a.shape[0]), tuple(cells))


def fixed(value: float) -> Stat:
    """A number that depends on the configuration only (no seeds)."""
    return Stat(float(value), None, 0, (float(value),))


def summary(value: float | list[float], n: int, cells=None) -> Stat:
    """A value derived from per-seed data already reduced elsewhere (no sd available)."""
    cells = np.atleast_1d(value if cells is None else cells).astype(float).tolist()
    return Stat(value, None, int(n), tuple(cells))


@dataclass(frozen=True)
class Measured:
    components: dict[str, Stat]  # component name (as in `components(published)`) -> value
    context: dict = field(default_factory=dict)  # what some rules compare against (bound, ...)
    notes: tuple[str, ...] = ()  # how a value was read where the claim leaves a choice


# ---------------------------------------------------------------- tolerances

_NUM = r"(?P<x>\d+(?:\.\d+)?(?:e-?\d+)?)"
FORMS = {  # every clause a tolerance text may hold -> its rule kind, beside a study's own
    # (Words.forms); nothing else is accepted
    rf"abs {_NUM}(?: per length| each)?(?: \(near chance\))?": "abs",
    r"exact(?:, every (?:cell|seed)| \(the verdict per tier\))?": "exact",
    rf"(?:within a factor of|factor) {_NUM}": "factor",
    r"same ordering": "ordering",
    r"inside the trained range": "inside_range",
    r"never below the bound": "not_below_bound",
    r"shown": "shown",  # a published component set beside ours, not checked (the file says so)
    r"verdict: (?P<v>[a-z ]+(?: / [a-z ]+)+)(?:, by the declared null policy)?": "verdict",
}
@dataclass(frozen=True)
class Words:
    """A study's own tolerance words, beside the shared FORMS: its readers module's LABELS, FORMS
    and RULES."""

    labels: dict = field(default_factory=dict)  # a clause's leading label -> the published
    # components it speaks about
    forms: dict = field(default_factory=dict)  # a clause's pattern -> its rule kind
    rules: dict = field(default_factory=dict)  # a kind of `forms` -> its per-component rule,
    # called as the shared ones are: (rule, component, published, Stat, context) -> Outcome


def words_of(readers) -> Words:
    """The tolerance words a study's readers module declares (None: none)."""
    return Words(getattr(readers, "LABELS", {}), getattr(readers, "FORMS", {}),
                 getattr(readers, "RULES", {}))


@dataclass(frozen=True)
class Rule:
    label: str | None  # which published components it covers (None: all of them)
    kind: str  # a value of FORMS
    amount: float | None  # the clause's number (abs width, factor), if it has one
    text: str  # the clause as written
    verdicts: tuple[str, ...] = ()  # a judged claim's listed verdicts (rule "verdict")


def parse_clause(clause: str, words: Words = Words()) -> Rule:
    """One clause: a form, optionally led by a label ("alpha abs 0.25") or by labels joined
    with "and" ("collisions and monotonic_breaks exact"); words: the study's labels and forms."""
    clause, labels, forms = clause.strip(), words.labels, {**FORMS, **words.forms}
    readings = [(None, clause)]  # the whole clause, or a leading label phrase and the rest
    words = clause.split(" ")
    for i in range(1, len(words)):
        names = " ".join(words[:i]).rstrip(":").split(" and ")
        if all(n in labels for n in names):
            readings.append((" and ".join(names), " ".join(words[i:])))
    for label, body in readings:
        for pattern, kind in forms.items():
            if m := re.fullmatch(pattern, body):
                x, v = m.groupdict().get("x"), m.groupdict().get("v")
                return Rule(label, kind, float(x) if x else None, clause,
                            tuple(n.strip() for n in v.split(" / ")) if v else ())
    raise ToleranceError(f"tolerance clause {clause!r} is not a known form; known forms: "
                         f"{list(forms)} optionally led by a label of {list(labels)}")


def parse_tolerance(text: str, words: Words = Words()) -> list[Rule]:
    """'carrier abs 0.08; alpha abs 0.25; c factor 2' -> one Rule per ';'-separated clause."""
    return [parse_clause(c, words) for c in text.split(";") if c.strip()]


RULE_KEYS = ("label", "kind", "amount", "verdicts")  # a structured rule's fields


def read_rules(where: str, entries, tolerance: str, words: Words = Words()) -> tuple[Rule, ...]:
    """A claim's structured rules, one per ';'-separated clause of its tolerance text and in its
    order, e.g. [{"label": "alpha", "kind": "abs", "amount": 0.25}, {"kind": "exact"}]: read as
    data, so the checker needs no parsing; each Rule's text is its clause, for the report. A
    malformed one is a ToleranceError naming `where` (the claim) and the field."""
    forms = {**FORMS, **words.forms}
    with_amount = {k for p, k in forms.items() if "(?P<x>" in p}  # the kinds a number completes
    with_verdicts = {k for p, k in forms.items() if "(?P<v>" in p}
    clauses = [c.strip() for c in tolerance.split(";") if c.strip()]
    if not isinstance(entries, list) or len(entries) != len(clauses):
        raise ToleranceError(f"{where}: field 'rules' must list one rule per clause of its "
                             f"tolerance ({len(clauses)}), got {entries!r}")
    out = []
    for i, (entry, clause) in enumerate(zip(entries, clauses)):
        at = f"{where}: rules[{i}]"
        if not isinstance(entry, dict) or set(entry) - set(RULE_KEYS):
            raise ToleranceError(f"{at}: {entry!r} is not a rule: a dict of {list(RULE_KEYS)}")
        kind, label = entry.get("kind"), entry.get("label")
        amount, verdicts = entry.get("amount"), entry.get("verdicts")
        if kind not in set(forms.values()):
            raise ToleranceError(f"{at}: field 'kind' {kind!r} is none of "
                                 f"{sorted(set(forms.values()))}")
        if label is not None and not (isinstance(label, str) and all(
                n in words.labels for n in label.split(" and "))):
            raise ToleranceError(f"{at}: field 'label' {label!r} is not a label (or labels "
                                 f"joined by ' and ') of {list(words.labels)}")
        number = isinstance(amount, int | float) and not isinstance(amount, bool)
        if (kind in with_amount) != number:
            raise ToleranceError(f"{at}: field 'amount' {amount!r}: kind {kind!r} "
                                 + ("needs a number" if kind in with_amount else "takes none"))
        listed = isinstance(verdicts, list) and len(verdicts) > 1 and all(
            isinstance(v, str) for v in verdicts)
        if (kind in with_verdicts) != listed:
            raise ToleranceError(f"{at}: field 'verdicts' {verdicts!r}: kind {kind!r} "
                                 + ("needs a list of them" if kind in with_verdicts
                                    else "takes none"))
        out.append(Rule(label, kind, float(amount) if number else None, clause,
                        tuple(verdicts) if listed else ()))
    return tuple(out)


def rules_by_component(claim: Claim, words: Words = Words()) -> list[tuple[Rule, list[str]]]:
    """Each rule with the published components it covers (a label covers the components with a
    '.'-separated part among its names); every component must be covered. The claim's
    structured rules where its file gives them, else its tolerance text parsed."""
    comps, labels = list(components(claim.published)), words.labels
    out = []
    rules = parse_tolerance(claim.tolerance, words) if claim.rules is None else claim.rules
    for rule in rules:
        covered = set() if rule.label is None else {
            n for name in rule.label.split(" and ") for n in labels[name]}
        names = comps if rule.label is None else [
            c for c in comps if covered & set(c.split("."))]
        if not names:
            raise ToleranceError(f"{claim.id}: {rule.text!r} covers none of {comps}")
        out.append((rule, names))
    unchecked = set(comps) - {n for _, names in out for n in names}
    if unchecked:
        raise ToleranceError(f"{claim.id}: tolerance {claim.tolerance!r} leaves "
                             f"{sorted(unchecked)} unchecked")
    return out


@dataclass(frozen=True)
class Outcome:
    component: str  # "" for a bare value
    ok: bool
    text: str  # the comparison, with by how much
    used: float | None = None  # share of the tolerance used: <= 1 within it (abs, factor);
    # a rule without a width leaves it None: 0 when ok, inf else
    verdict: str = ""  # a judged claim's verdict (rule "verdict"): it is the claim's status

    def __post_init__(self):  # rules compute with numpy; keep report.json plain
        object.__setattr__(self, "ok", bool(self.ok))
        used = (0.0 if self.ok else np.inf) if self.used is None else self.used
        object.__setattr__(self, "used", float(used))


def fmt_number(x) -> str:
    """A measured or published number (or a list of them), compactly."""
    if isinstance(x, list):
        return "[" + ", ".join(fmt_number(v) for v in x) + "]"
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def _abs(rule, name, pub, st, ctx) -> Outcome:
    p, m = np.atleast_1d(np.asarray(pub, float)), np.atleast_1d(np.asarray(st.mean, float))
    if p.shape != m.shape:
        raise NotRun(f"measurement {name or 'value'} has shape {m.shape}, published {p.shape}")
    dev = float(np.abs(m - p).max())
    ok = dev <= rule.amount + EPS
    return Outcome(name, ok, f"{fmt_number(st.mean)} vs {pub}: off by {dev:.2g} "
                             f"({'<=' if ok else '>'} {rule.amount:g})", dev / rule.amount)


def _resolve(pub, ctx):
    m = re.fullmatch(r"(-?)K", pub) if isinstance(pub, str) else None
    if m:
        if "K" not in ctx:
            raise NotRun(f"published symbol {pub!r} needs the run's K")
        return -ctx["K"] if m.group(1) else ctx["K"]
    return pub  # a number, or a text compared as it is (a count such as "4/25")


def _exact(rule, name, pub, st, ctx) -> Outcome:
    want = _resolve(pub, ctx)
    bad = [c for c in st.cells if c != want]
    seen = dict(sorted(Counter(st.cells).items()))
    return Outcome(name, not bad, f"all {len(st.cells)} cells = {want}" if not bad
                   else f"{len(bad)} of {len(st.cells)} cells differ from {want} (seen {seen})")


def _factor(rule, name, pub, st, ctx) -> Outcome:
    if not pub:
        raise ToleranceError(f"{name}: a factor tolerance needs a nonzero published value")
    ratio = float(st.mean) / float(pub)
    used = abs(np.log(ratio)) / np.log(rule.amount) if ratio > 0 else np.inf
    ok = used <= 1 + EPS
    return Outcome(name, ok, f"{fmt_number(st.mean)} vs {pub}: ratio {ratio:.3g} "
                             f"({'within' if ok else 'outside'} factor {rule.amount:g})", used)


def _inside_range(rule, name, pub, st, ctx) -> Outcome:
    lo, hi = ctx["trained_range"]
    out = [c for c in st.cells if not lo <= c <= hi]
    return Outcome(name, not out, f"all {len(st.cells)} cells inside [{lo}, {hi}]" if not out
                   else f"{len(out)} of {len(st.cells)} cells outside [{lo}, {hi}] (e.g. {out[0]})")


def _not_below_bound(rule, name, pub, st, ctx) -> Outcome:
    gaps = np.asarray(st.cells) - np.asarray(ctx["bound"][name].cells)
    below = int((gaps < 0).sum())
    text = (f"observed >= bound in all {gaps.size} seeds" if below == 0 else
            f"below the bound in {below} of {gaps.size} seeds (min gap {gaps.min():.3g})")
    return Outcome(name, below == 0, text)


def _ordering(rule, names, pubs, stats, ctx) -> list[Outcome]:
    p_order = list(np.argsort([float(pubs[n]) for n in names]))
    m_vals = [float(stats[n].mean) for n in names]
    ok = list(np.argsort(m_vals)) == p_order
    shown = lambda vals: " vs ".join(f"{n} {fmt_number(v)}" for n, v in zip(names, vals))
    return [Outcome(",".join(names), ok, f"published {shown([pubs[n] for n in names])}; "
                                         f"measured {shown(m_vals)}"
                                         + ("" if ok else ": ordering reversed"))]


def _shown(rule, name, pub, st, ctx) -> Outcome:
    return Outcome(name, True, f"shown, not checked: {st.show()} (published {fmt_number(pub)})")


def _verdict(rule, name, pub, st, ctx) -> Outcome:
    """A claim without a published number (a prediction): the measurement returns its verdict
    (a string, with what decides it in ctx["decides"]); a verdict outside the listed ones is
    kept as it is and said to be outside them."""
    names = list(rule.verdicts)
    text = ctx.get("decides", "")
    if st.mean not in names:
        text += f" (verdict {st.mean!r} is none of {names})"
    return Outcome(name, True, text, verdict=str(st.mean))


PER_COMPONENT: dict[str, Callable] = {"abs": _abs, "exact": _exact, "factor": _factor,
                                      "inside_range": _inside_range,
                                      "not_below_bound": _not_below_bound,
                                      "shown": _shown, "verdict": _verdict}
JOINT: dict[str, Callable] = {"ordering": _ordering}  # rules over a group of components


def apply_rules(claim: Claim, measured: Measured, words: Words = Words()) -> list[Outcome]:
    pubs = components(claim.published)
    needed = sorted(set(pubs) - set(measured.components))
    if needed:
        raise missing(", ".join(f"{claim.experiment} {n or 'value'}" for n in needed))
    outcomes = []
    per_component = {**PER_COMPONENT, **words.rules}
    for rule, names in rules_by_component(claim, words):
        try:
            if rule.kind in JOINT:
                outcomes += JOINT[rule.kind](rule, names, pubs, measured.components,
                                             measured.context)
            else:
                outcomes += [per_component[rule.kind](rule, n, pubs[n], measured.components[n],
                                                      measured.context) for n in names]
        except KeyError as err:
            raise missing(f"{claim.experiment} context {err.args[0]!r} for {rule.text!r}") from err
    return outcomes


# ---------------------------------------------------------------- verdicts


@dataclass(frozen=True)
class Verdict:
    id: str  # claim or expectation id
    kind: str  # "claim" or "expect"
    experiment: str
    where: str  # publication table/figure; for an expectation, "spec: expect"
    what: str  # what is measured; for an expectation, the predicate in words
    published: object  # the published value (None for an expectation)
    tolerance: str  # the claim's tolerance text; for an expectation, its stated criterion
    status: str  # matches / differs / not run; holds / fails / not run
    detail: str  # by how much it differs, or why it did not run, or how it matched
    measured: dict = field(default_factory=dict)  # component -> {"mean", "sd", "n", "text"}
    reading: str = ""  # which reading of an ambiguous claim (e.g. of tau) this line checks
    outcomes: tuple[Outcome, ...] = ()
    explanation: str = ""  # the claim's or expectation's explanation, for a "differs" or
    # "fails"

    @property
    def label(self) -> str:
        return self.id + (f" [{self.reading}]" if self.reading else "")


def _measured_json(m: Measured) -> dict:
    return {k: {"mean": s.mean, "sd": s.sd, "n": s.n, "text": s.show()}
            for k, s in m.components.items()}


def check_claim(claim: Claim, results: dict[str, dict], registry: dict,
                words: Words = Words(), hints: dict | None = None) -> list[Verdict]:
    """One verdict per reading of the claim (one, unless the registry lists several). A judged
    claim (rule "verdict") takes its measured verdict as its status."""
    base = dict(id=claim.id, kind="claim", experiment=claim.experiment, where=claim.where,
                what=claim.what, published=claim.published, tolerance=claim.tolerance,
                explanation=claim.explanation)
    if claim.id not in registry:
        return [Verdict(**base, status=NOT_RUN, detail="no measurement registered for this claim")]
    if claim.experiment not in results:
        hint = (hints or {}).get(claim.experiment)
        return [Verdict(**base, status=NOT_RUN, detail=f"experiment not run: {claim.experiment}"
                        + (f" ({hint})" if hint else ""))]
    entry = registry[claim.id]
    readings = entry if isinstance(entry, dict) else {"": entry}
    out = []
    for reading, measure in readings.items():
        try:
            measured = measure(results)
            outcomes = apply_rules(claim, measured, words)
        except NotRun as why:
            out.append(Verdict(**base, status=NOT_RUN, detail=str(why), reading=reading))
            continue
        failed = [o for o in outcomes if not o.ok]
        detail = _detail(failed or outcomes, len(outcomes), bool(failed))
        if measured.notes:
            detail += " (" + "; ".join(measured.notes) + ")"
        if claim.restated:
            detail += f" [restated; {claim.restated}]"
        judged = [o.verdict for o in outcomes if o.verdict]
        status = judged[0] if judged else DIFFERS if failed else MATCHES
        out.append(Verdict(**base, status=status, detail=detail,
                           measured=_measured_json(measured), reading=reading,
                           outcomes=tuple(outcomes)))
    return out


def _detail(shown: list[Outcome], total: int, failed: bool) -> str:
    """The failing comparisons; or, for a match over many components, the worst deviation."""
    text = lambda o: f"{o.component + ': ' if o.component else ''}{o.text}"
    if failed or len(shown) <= 2:
        return "; ".join(text(o) for o in shown)
    worst = max(shown, key=lambda o: o.used)
    return f"all {total} checks hold; largest deviation {text(worst)}"


@dataclass(frozen=True)
class Expectation:
    id: str  # e.g. "multiseed.ape_chance_beyond"
    experiment: str
    text: str  # the spec's words this predicate checks
    criterion: str  # the explicit test, with its numbers
    predicate: Callable[[dict], tuple[bool, str]]  # results -> (holds, what was seen); NotRun
    explanation: str = ""  # why it fails, where an experiment found it (as Claim.explanation)


def check_expectation(exp: Expectation, results: dict[str, dict]) -> Verdict:
    base = dict(id=exp.id, kind="expect", experiment=exp.experiment, where="spec: expect",
                what=exp.text, published=None, tolerance=exp.criterion,
                explanation=exp.explanation)
    if exp.experiment not in results:
        return Verdict(**base, status=NOT_RUN, detail=f"experiment not run: {exp.experiment}")
    try:
        ok, seen = exp.predicate(results)
    except NotRun as why:
        return Verdict(**base, status=NOT_RUN, detail=str(why))
    return Verdict(**base, status=HOLDS if ok else FAILS, detail=seen)


def check(claims: Claims, results: dict[str, dict], readers, registry: dict | None = None,
          expectations: list[Expectation] | None = None) -> list[Verdict]:
    """Every claim (per reading) then every expectation of the study, in file order.

    results: {experiment name: that experiment's results.json as a dict}; an experiment absent
    from it makes its claims "not run". readers: the study's readers module (its words, HINTS);
    registry/expectations default to its own."""
    registry = readers.REGISTRY if registry is None else registry
    expectations = readers.EXPECTATIONS if expectations is None else expectations
    words, hints = words_of(readers), getattr(readers, "HINTS", {})
    verdicts = [v for c in claims.claims
                for v in check_claim(c, results, registry, words, hints)]
    return verdicts + [check_expectation(e, results) for e in expectations]


def load_results(dirs: dict[str, Path | str]) -> dict[str, dict]:
    """{experiment: directory holding results.json} -> {experiment: results dict}; a directory
    without results.json is left out (its claims then read "not run")."""
    out = {}
    for name, d in dirs.items():
        path = Path(d) / "results.json"
        if path.exists():
            out[name] = json.loads(path.read_text())
    return out
