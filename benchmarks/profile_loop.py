"""The researcher's loop: `lgjax profile ENCODING` end to end, cold, warm and after an option
change, per recipe.

Each case runs the command in a fresh process with a fresh output folder (so every run trains):
"cold" with an empty compilation cache (a first profile on a new machine), "warm" with the
cache the cold run filled (the same programs again: a re-profile whose change left every
compiled program as it was), "changed" with that cache and one of the encoding's options
changed (`--change`, `--set` of the command; alibi's slope by default): the loop of changing an
encoding and profiling it, whose options are constants of the programs a profile compiles, so
they compile again. Printed first: whether the venv holds jax's bytecode; then per case: the
command's wall time, the card's seconds per instrument, and the realizability program's split
into training and measuring (its results.json); everything also goes to --out as JSON.

    python benchmarks/profile_loop.py [--encoding alibi] [--recipes quick,default]
                                      [--change slope=0.5] [--out results/profile-loop.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LGJAX = [sys.executable, "-m", "lgjax"]


def has_bytecode() -> bool:
    """Whether this venv holds jax's bytecode: without it (a uv install not given
    --compile-bytecode, where PYTHONDONTWRITEBYTECODE is set) every run pays seconds compiling
    jax's modules as it starts (docs/results/performance.md, Bytecode)."""
    spec = importlib.util.find_spec("jax")
    return Path(importlib.util.cache_from_source(spec.origin)).is_file()


def run_case(encoding: str, recipe: str, cache: str, work: Path, change: str = "") -> dict:
    out = Path(tempfile.mkdtemp(prefix=f"{recipe}-", dir=work))
    cmd = [*LGJAX, "profile", encoding, "--out", str(out), "--no-progress"]
    if change:
        cmd += ["--set", change]
    if recipe != "default":
        cmd.append(f"--{recipe}")
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env={**os.environ, "LGJAX_CACHE": cache},
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    card = json.loads((out / "profile.json").read_text())
    program = next(out.glob("checkpoints/*/realizability/*/*/results.json"))
    rz = json.loads(program.read_text())
    return {"recipe": recipe, "wall_seconds": wall, "instrument_seconds": card["seconds"],
            "realizability_train_seconds": rz["train_seconds"],
            "realizability_eval_seconds": rz["eval_seconds"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encoding", default="alibi")
    ap.add_argument("--recipes", default="quick,default")
    ap.add_argument("--change", default="slope=0.5",
                    help="the option the 'changed' case sets (key=value; '': no such case)")
    ap.add_argument("--out", default="results/profile-loop.json")
    a = ap.parse_args()
    bytecode = has_bytecode()
    print(f"this venv {'holds' if bytecode else 'lacks'} jax's bytecode")
    rows = []
    with tempfile.TemporaryDirectory(prefix="lgjax-profile-loop-") as tmp:
        work = Path(tmp)
        for recipe in a.recipes.split(","):
            cache = tempfile.mkdtemp(prefix="cache-", dir=work)
            for state in ("cold", "warm", "changed")[:3 if a.change else 2]:
                change = a.change if state == "changed" else ""
                r = run_case(a.encoding, recipe, cache, work, change) | {"cache": state}
                rows.append(r)
                inst = ", ".join(f"{k} {v:.1f}" for k, v in r["instrument_seconds"].items())
                print(f"{recipe:8s} {state:7s}: {r['wall_seconds']:6.1f} s wall ({inst}; "
                      f"realizability trains {r['realizability_train_seconds']:.1f} s, "
                      f"measures {r['realizability_eval_seconds']:.1f} s)", flush=True)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"encoding": a.encoding, "rows": rows, "bytecode": bytecode,
                               "load_after": os.getloadavg()}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
