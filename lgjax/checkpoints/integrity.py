"""Checkpoint digests: what a saved step must restore to, byte for byte.

<run_dir>/digests/<step>.json holds the sha256 of config.json and of every array of the saved
state (leaf path -> digest, computed from the in-memory arrays handed to orbax). It is written
before orbax starts the save, so every committed step has one (a kill between commit and digest
cannot leave a step unverifiable). Once orbax has committed the step, the sha256 of every file in
the step folder is added: a flipped bit anywhere is then caught before orbax reads a byte, also
one that would restore to the same numbers. The array digests still catch what orbax restores
wrongly when the file digests are missing (a kill right after the commit).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import jax
import numpy as np

from lgjax.config import canonical_json
from lgjax.errors import CheckpointError

DIGEST_DIR = "digests"
FORMAT = 1


def damaged(run_dir: Path, step: int, reason: str) -> CheckpointError:
    return CheckpointError(f"checkpoint step {step} in {run_dir} is damaged: {reason}; resume "
                           "falls back to an earlier step (or delete that step folder)",
                           step, reason)


def sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def config_digests(path: Path) -> tuple[str, ...]:
    """What a step's recorded config digest may be: the sha256 of config.json's data in the
    canonical form (`lgjax.config.canonical_json`, the form lgjax writes, so the two agree on
    every file lgjax wrote), then of its bytes. A config's identity is its content: the same
    config rewritten with other formatting is the config the steps were saved with."""
    raw = path.read_bytes()
    try:
        canonical = canonical_json(json.loads(raw)).encode()
    except ValueError:  # not JSON: read_config names it when the run is opened
        canonical = raw
    return hashlib.sha256(canonical).hexdigest(), hashlib.sha256(raw).hexdigest()


def array_digests(tree) -> dict[str, str]:
    """Leaf path (jax keystr, e.g. ".params['wq']") -> sha256 of dtype, shape and bytes."""
    digests = {}
    for path, x in jax.tree_util.tree_leaves_with_path(tree):
        a = np.ascontiguousarray(np.asarray(x))
        h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
        digests[jax.tree_util.keystr(path)] = h.hexdigest()
    return digests


def nonfinite_leaf(tree) -> str | None:
    """The path of the first floating-point leaf holding a NaN or an infinity, None if none."""
    for path, x in jax.tree_util.tree_leaves_with_path(tree):
        a = np.asarray(x)
        if a.dtype.kind in "fc" and not np.isfinite(a).all():
            return jax.tree_util.keystr(path)
    return None


def file_digests(step_dir: Path) -> dict[str, str]:
    return {p.relative_to(step_dir).as_posix(): sha256_file(p)
            for p in sorted(step_dir.rglob("*")) if p.is_file()}


def write_atomic(path: Path, text: str, replace: bool = True) -> bool:
    """Write `path` whole or not at all (temporary file, then rename). replace=False writes only
    where no file is yet, also against a concurrent writer: False when one got there first."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    if replace:
        os.replace(tmp, path)
        return True
    try:
        os.link(tmp, path)  # atomic and exclusive: fails where the name exists
        return True
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)


class Digests:
    """The digest files of one run directory."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.dir = run_dir / DIGEST_DIR

    def path(self, step: int) -> Path:
        return self.dir / f"{step}.json"

    def write_arrays(self, step: int, tree, config_sha: str) -> None:
        self.dir.mkdir(exist_ok=True)
        record = {"format": FORMAT, "step": step, "config_sha256": config_sha,
                  "arrays": array_digests(tree)}
        write_atomic(self.path(step), json.dumps(record, indent=1))

    def add_files(self, step: int) -> None:
        """After orbax committed `step`: record every file of its folder."""
        record = self.load(step)
        if record is not None:
            record["files"] = file_digests(self.run_dir / str(step))
            write_atomic(self.path(step), json.dumps(record, indent=1))

    def prune(self, steps: list[int]) -> None:
        """Delete the digests of every step not in `steps`."""
        for path in self.dir.glob("*.json"):
            if path.stem.isdigit() and int(path.stem) not in steps:
                path.unlink()

    def load(self, step: int) -> dict | None:
        """The step's record, None when it has none (saved before digests existed)."""
        path = self.path(step)
        if not path.exists():
            return None
        try:
            record = json.loads(path.read_text())
            fields = (record.get("format"), record.get("step"), record.get("config_sha256"),
                      record.get("arrays"), record.get("files", {}))
            if fields[:2] != (FORMAT, step) or not isinstance(fields[2], str) \
                    or not all(isinstance(f, dict) for f in fields[3:]):
                raise ValueError("unexpected content")
        except (OSError, ValueError, AttributeError) as err:
            raise damaged(self.run_dir, step, f"its digest file {path} is unreadable ({err})") \
                from err
        return record

    def check_files(self, step: int, record: dict, config_shas: tuple[str, ...]) -> None:
        """Before restoring: config.json (`config_digests`) and (when recorded) every file of
        the step folder."""
        if record["config_sha256"] not in config_shas:
            raise damaged(self.run_dir, step, "config.json differs from the one it was saved with")
        step_dir = self.run_dir / str(step)
        for name, want in record.get("files", {}).items():
            path = step_dir / name
            if not path.is_file():
                raise damaged(self.run_dir, step, f"file {name} is missing")
            if sha256_file(path) != want:
                raise damaged(self.run_dir, step, f"file {name} differs from its digest")

    def check_arrays(self, step: int, record: dict, tree) -> None:
        """After restoring: every restored array against the digest of the array saved."""
        got = array_digests(tree)
        want = record["arrays"]
        for name in sorted(set(got) | set(want)):
            if got.get(name) != want.get(name):
                what = "differs from its digest" if name in got and name in want else \
                    "is not in the digest" if name in got else "is missing"
                raise damaged(self.run_dir, step, f"array {name} {what}")
