"""Each study's claims, found through its declaration: the claims file shipped in its package and
its readers module, read and checked with the shared vocabulary (lgjax.claims)."""

from __future__ import annotations

import importlib
import importlib.resources
from pathlib import Path

from lgjax import claims as vocabulary
from lgjax.claims import Claims, Expectation, Verdict
from lgjax.studies import STUDIES


def declared(study: str):
    if study not in STUDIES or not STUDIES[study].claims:
        raise ValueError(f"study {study!r}: no claims; known: "
                         f"{sorted(n for n, s in STUDIES.items() if s.claims)}")
    return STUDIES[study]


def claims_path(study: str) -> Path:
    """The claims file shipped in the study's package."""
    s = declared(study)
    return Path(str(importlib.resources.files(s.package) / s.claims))


def study_module(study: str):
    """The study's claim readers (REGISTRY, EXPECTATIONS; optionally its tolerance words,
    RESTATED, HINTS), as its package declares them."""
    return importlib.import_module(declared(study).readers)


def readers_of(stem: str):
    """The readers module of the study a claims file's stem names; None for another file."""
    return study_module(stem) if stem in STUDIES and STUDIES[stem].claims else None


def load_claims(source: str | Path) -> Claims:
    """A study name (its shipped file) or a path to a claims file (read with the readers of the
    study its stem names, if any)."""
    path = Path(source) if str(source).endswith(".json") else claims_path(str(source))
    return vocabulary.load_claims(path, readers_of(path.stem))


def check(claims: Claims, results: dict[str, dict], registry: dict | None = None,
          expectations: list[Expectation] | None = None) -> list[Verdict]:
    """Every claim (per reading) then every expectation of the claims' study, in file order
    (lgjax.claims.check with the study's readers)."""
    return vocabulary.check(claims, results, study_module(claims.study), registry, expectations)
