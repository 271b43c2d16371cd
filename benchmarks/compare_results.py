"""Compare two results trees (or two JSON files) value by value, timings and paths ignored.

Command: python benchmarks/compare_results.py BEFORE AFTER
  BEFORE/AFTER: folders (every results.json and report.json below BEFORE, matched by relative
  path) or two JSON files; e.g. the OUT folders of benchmarks/every_command.sh on two trees.
Prints one line per file (values compared, differences, the first 15 of them); exit code 1 when
any value differs or a file is missing.
"""

import json
import sys
from pathlib import Path

IGNORE = ("seconds", "wall", "load", "path", "run_dir", "out", "ckpt_root", "time", "figure",
          "digest")


def skip(key) -> bool:
    return any(s in str(key) for s in IGNORE)


def diff(a, b, where: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if skip(k):
                continue
            if k not in a or k not in b:
                out.append(f"{where}/{k}: only in {'after' if k not in a else 'before'}")
            else:
                diff(a[k], b[k], f"{where}/{k}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: length {len(a)} vs {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{where}[{i}]", out)
    elif a != b and not (a != a and b != b):  # NaN equals NaN here
        out.append(f"{where}: {a!r:.80} vs {b!r:.80}")


def count(x) -> int:
    if isinstance(x, dict):
        return sum(count(v) for k, v in x.items() if not skip(k))
    if isinstance(x, list):
        return sum(count(v) for v in x)
    return 1


def main(before: Path, after: Path) -> int:
    pairs = [(before, after)] if before.is_file() else [
        (f, after / f.relative_to(before)) for f in sorted(before.rglob("*.json"))
        if f.name in ("results.json", "report.json")]
    rc = 0
    for fa, fb in pairs:
        name = fa.relative_to(before) if before.is_dir() else fa
        if not fb.exists():
            print(f"{name}: missing in {after}")
            rc = 1
            continue
        a, b = json.loads(fa.read_text()), json.loads(fb.read_text())
        out: list[str] = []
        diff(a, b, "", out)
        print(f"{name}: {count(a)} values, {len(out)} differences"
              + ("" if not out else ":\n  " + "\n  ".join(out[:15])))
        rc |= bool(out)
    return rc


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
