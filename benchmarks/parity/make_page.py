"""docs/parity.md from the parity tests' own data: the golden files (tests/data/parity) and the
comparison the tests assert (tests/parity_cases.py). tests/test_parity.py checks that the
committed page is this script's output.

  python benchmarks/parity/make_page.py            # writes docs/parity.md
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import parity_cases as P  # noqa: E402

PAGE = ROOT / "docs" / "parity.md"

INTRO = """\
# Reference parity

Each encoding below is compared with the code the field uses: the pinned reference package
where one installs from the package index, otherwise the authors' published code (repository,
file and commit). The reference values are golden files (`tests/data/parity/*.json`, the versions
recorded in each) that one command writes in a reference environment
(`benchmarks/parity/generate_golden.py`, its docstring gives the install); CI compares lgjax
with them in `tests/test_parity.py`. This page is written by `benchmarks/parity/make_page.py`
from the same comparison; a test fails when it differs from what the script writes.

Why golden files and not the references in CI: they need torch. The package index's torch
2.13.0 for Linux x86-64 resolves to 20 torch, CUDA and Triton wheels of 2.73 GB (compressed);
the CPU build with transformers 5.23.0 installed in 55 s into a 1.2 GB environment on a
2-core machine, where the whole CI run has a 10-minute budget and the golden comparison takes
seconds.
"""

CONVENTIONS = """\
## Conventions

- **Rotary pairs.** lgjax turns the interleaved pairs (x[2i], x[2i+1]); Hugging Face's
  `rotate_half` turns (x[i], x[i + d/2]). The frequencies are the same; the logits agree once q
  and k are permuted between the layouts (`tests/parity_cases.py: to_pairs`), and differ without
  the permutation (test: `test_half_split_layout_needs_the_permutation`). torchscale's xPos uses
  the interleaved pairs, as lgjax.
- **YaRN's attention factor** multiplies the rotated q and k (Hugging Face: cos and sin), so the
  logit carries its square (test: `test_yarn_logit_carries_the_attention_factor_squared`).
- **Dynamic NTK** is recomputed from each sequence's own length (its last position + 1) on every
  call. Hugging Face's module keeps the frequencies of the longest sequence it has seen while the
  length stays above the original one (and resets below it): after a longer sequence, its
  frequencies for a shorter one differ from lgjax's, which equal a fresh module's (test:
  `test_dynamic_ntk_recomputes_where_hugging_face_caches`). The golden values are fresh modules'.
- **ALiBi** (Bloom) adds slope x key position to every query's row, lgjax -slope x (query - key):
  the same row up to a constant per query, which the softmax removes.
- **LongRoPE** takes its short or long per-pair factors from each sequence's own length, as
  Hugging Face does on every call (it keeps no longest length); the golden cases draw the
  factors from a seeded generator (short near 1, long rising to the factor s).
- **xPos** (torchscale) centres the positions for its scale, a factor per pair that cancels in
  q . k; lgjax does not centre. Logits are compared, not the rotated vectors.
"""

NOT_COVERED = [  # (encoding, why it has no reference comparison)
    ("`rope_ntk`", "the fixed NTK-aware base b s^(d/(d-2)): no reference function (Hugging "
     "Face has the dynamic form only, compared above)"),
    ("`fire`", "no code from the authors was found in the sources searched; formula tests only "
     "(tests/test_encoding_zoo.py)"),
    ("randomized positions (`train.random_positions`)", "the reference "
     "(google-deepmind/randomized_positional_encodings) draws from its own random stream, so "
     "values cannot match; the distribution (a sorted, distinct, uniform subset) is tested"),
    ("`ape`, `sinusoidal`, `relclip`, `nope`", "no reference computation beyond the textbook "
     "formula"),
    ("partial rotary (`partial_rotary_factor`), T5's bidirectional buckets", "not in lgjax"),
]


def fmt(x: float) -> str:
    return "0" if x == 0 else f"{x:.1e}"


def page() -> str:
    recs = P.records()
    groups: dict[tuple, list] = defaultdict(list)
    for r in recs:
        groups[(r.encoding, r.reference, r.quantity)].append(r)
    lines = [INTRO, "## Summary", "",
             f"{len(recs)} comparisons over {len(P.cases())} cases.", "",
             "| encoding | reference | compared | tolerance | configurations | largest difference"
             " | status |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for (enc, ref, qty), rs in groups.items():
        status = "equal within tolerance" if all(r.ok for r in rs) else "**differs**"
        lines.append(f"| `{enc}` | {ref} | {qty} | {P.TOL[qty]} | {len(rs)} | "
                     f"{fmt(max(r.diff for r in rs))} | {status} |")
    lines += ["", CONVENTIONS, "## Not compared", "", "| encoding | why |", "| --- | --- |"]
    lines += [f"| {enc} | {why} |" for enc, why in NOT_COVERED]
    lines += ["", "## Configurations", ""]
    seen = set()
    for (enc, _ref, _qty), rs in groups.items():
        if enc not in seen:  # one list per encoding: its quantities share the configurations
            seen.add(enc)
            lines.append(f"- `{enc}` ({len(rs)}): " + "; ".join(r.config for r in rs))
    sources = {}
    for f in P.FILES:
        sources[f] = P.golden(f)["reference"]
    lines += ["", "## Sources", ""]
    for f, ref in sources.items():
        lines.append(f"- `tests/data/parity/{f}`: {P.reference_label(ref)}: {ref['code']}")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(PAGE))
    a = ap.parse_args(argv)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(page())
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
