"""lgjax's encodings against the code the field uses (golden files of tests/data/parity, written
by benchmarks/parity/generate_golden.py from the pinned references; see tests/parity_cases.py),
the conventions where lgjax's form differs, and docs/parity.md as the script writes it."""

import json
import math
import re

import jax
import numpy as np
import pytest

from benchmarks.parity import make_page
from lgjax import rope_scaling as RS
from lgjax.config import ModelConfig
from lgjax.encodings import ENCODINGS
from tests import parity_cases as P


@pytest.mark.parametrize("file, i", P.cases(), ids=lambda v: str(v).removesuffix(".json"))
def test_lgjax_equals_the_reference(file, i):
    for r in P.case_records(file, i):
        assert r.ok, f"{r.encoding} vs {r.reference}: {r.quantity} {r.diff:.3g} > {r.tol:.3g} " \
                     f"({r.config})"


def test_golden_files_name_their_reference_and_stay_small():
    total = 0
    for f in P.FILES:
        ref = P.golden(f)["reference"]
        assert ref["torch"] and ref["code"]
        assert ("package" in ref and re.fullmatch(r"\d+\.\d+\.\d+", ref["version"])) or \
            re.fullmatch(r"[0-9a-f]{40}", ref["commit"])
        assert P.golden(f)["cases"]
        total += (P.DATA / f).stat().st_size
    assert total < 1_000_000
    encodings = {c["encoding"] for f in P.FILES for c in P.golden(f)["cases"]}
    assert encodings == {"rope", "rope_linear", "rope_dynamic", "rope_yarn", "rope_llama3",
                         "rope_longrope", "prope", "rope_partial", "alibi", "t5", "xpos",
                         "kerple_log", "kerple_power"}


def test_comparisons_can_fail():
    """A golden value nudged past the tolerance is reported (each kind of comparison)."""
    for file in P.FILES:
        g = json.loads(json.dumps(P.golden(file)))
        c = g["cases"][0]
        key = next(k for k in ("logits", "alibi", "buckets", "bias") if k in c)
        c[key] = (np.asarray(c[key]) + 1).tolist()
        recs = P.CASE_FN[file](P.reference_label(g["reference"]), c)
        assert not all(r.ok for r in recs), file


# ---- conventions ----------------------------------------------------------------------------


def _hf_case(encoding, **opts):
    return next(c for c in P.golden("hf_rope.json")["cases"] if c["encoding"] == encoding
                and all(c["options"].get(k) == v for k, v in opts.items()))


def _cfg(c, **over):
    name = c["encoding"]
    return ModelConfig(name, d=c["d_head"], heads=1,
                       enc=ENCODINGS[name].options(**{**c["options"], **over}))


def test_half_split_layout_needs_the_permutation():
    """Hugging Face's rotate_half pairs x[i] with x[i + d/2]; lgjax pairs x[2i] with x[2i+1]. The
    same q, k in lgjax's layout give HF's logits; read as they are, they do not."""
    c = _hf_case("rope", base=1e4)
    q, k = P.inputs(c["inputs"])
    want = np.asarray(c["logits"])
    permuted = P.rotary_logits("rope", _cfg(c), P.to_pairs(q), P.to_pairs(k), c["positions"])
    as_is = P.rotary_logits("rope", _cfg(c), q, k, c["positions"])
    assert P.logit_diff(permuted, want, q, k) < P.logit_tol(c["positions"])
    assert P.logit_diff(as_is, want, q, k) > 0.01


def test_yarn_logit_carries_the_attention_factor_squared():
    """HF multiplies cos and sin by the factor and turns q and k with them; lgjax multiplies the
    rotated q and k: either way the logit is factor^2 times the unscaled one."""
    c = _hf_case("rope_yarn", factor=40.0, mscale=0.707)
    af = c["attention_factor"]
    assert af == pytest.approx((0.1 * 0.707 * math.log(40) + 1) / (0.1 * math.log(40) + 1))
    q, k = P.inputs(c["inputs"])
    plain = P.rotary_logits("rope_yarn", _cfg(c, attention_factor=1.0), P.to_pairs(q),
                            P.to_pairs(k), c["positions"])
    want, tol = np.asarray(c["logits"]), P.logit_tol(c["positions"])
    assert P.logit_diff(af**2 * plain, want, q, k) < tol
    assert P.logit_diff(af * plain, want, q, k) > 100 * tol  # once is not HF's


def test_dynamic_ntk_recomputes_where_hugging_face_caches():
    """One HF module called on 128, then 64, then 16 tokens (L_orig 32): after the long call it
    keeps the 128-token frequencies for 64 tokens; lgjax takes each sequence's own length, as a
    fresh HF module does. Below L_orig both are plain RoPE."""
    g = P.golden("hf_rope.json")["dynamic_cache"]
    cfg = ModelConfig("rope_dynamic", d=g["d_head"], heads=1,
                      enc=RS.RopeDynamicOptions(**g["options"]))
    long, short, below = g["calls"]
    rel = lambda a, b: float(np.abs(np.asarray(a) / np.asarray(b) - 1).max())
    with jax.enable_x64(True):
        theta = {n: np.asarray(RS.dynamic_freqs(cfg, n)) for n in (128, 64, 16)}
    assert rel(theta[128], long["inv_freq_cached_module"]) < 2e-6
    assert rel(theta[64], short["inv_freq_fresh_module"]) < 2e-6
    assert rel(short["inv_freq_cached_module"], long["inv_freq_fresh_module"]) < 1e-9  # kept
    assert rel(theta[64], short["inv_freq_cached_module"]) > 0.1  # lgjax != HF's cached module
    plain = 1e4 ** (-2.0 * np.arange(g["d_head"] // 2) / g["d_head"])
    for want in (below["inv_freq_cached_module"], below["inv_freq_fresh_module"], theta[16]):
        assert rel(plain, want) < 2e-6


# ---- the page ---------------------------------------------------------------------------------


LARGEST = re.compile(r"^(\|[^|]*){5}\| ([^|]+) \|", re.M)  # the "largest difference" cell


def test_parity_page_is_what_the_script_writes():
    """docs/parity.md equals make_page's output; the largest differences, measured on this
    machine's CPU, may move within their decade."""
    committed = (make_page.PAGE).read_text()
    fresh = make_page.page()
    cells = lambda text: [m.group(2) for m in LARGEST.finditer(text)][2:]  # past the header
    mask = lambda text: LARGEST.sub(lambda m: m.group(0).replace(m.group(2), "x"), text)
    assert mask(committed) == mask(fresh), "run: python benchmarks/parity/make_page.py"
    for a, b in zip(cells(committed), cells(fresh), strict=True):
        if a == "0" or b == "0":
            assert a == b
        else:
            assert abs(math.log10(float(a)) - math.log10(float(b))) <= 1, (a, b)


def test_the_two_partial_rotary_readings_are_told_apart_by_the_references():
    """HF's proportional type (p-RoPE) read as partial_rotary_factor, or the other way round,
    fails its golden case: the kept frequencies are the full width's in one, the rotary
    width's in the other."""
    for c in P.golden("hf_partial_rotary.json")["cases"]:
        other = "rope_partial" if c["encoding"] == "prope" else "prope"
        frac = c["options"].get("p", c["options"].get("partial_rotary_factor"))
        opts = {"base": c["options"]["base"],
                **({"p": frac} if other == "prope" else {"partial_rotary_factor": frac})}
        if other == "rope_partial" and int(c["d_head"] * frac) % 2:
            continue  # an odd rotary width: not a partial_rotary_factor configuration
        swapped = {**c, "encoding": other, "options": opts}
        assert all(r.ok for r in P.hf_partial_case("ref", c))
        assert not all(r.ok for r in P.hf_partial_case("ref", swapped)), c["options"]
