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

`--in-process` adds the loop as a notebook runs it, after those cases and on their cache: one
Python process profiles three times (the command line's `main` called in it), each into a fresh
folder: "first" (every program in the cache), "again" the same profile (its programs still
compiled in the process's memory), "changed" with `--change-in-process` (a value the cache does
not hold yet: the fresh "changed" case compiled `--change`'s). Each prints its wall (after the
process's imports) and JAX's own events during it: programs compiled and read from the
persistent cache, seconds tracing, lowering, and compiling or reading. (The cache cannot be
copied for these cases instead: JAX's key for a program includes the cache's own folder, which
it passes to XLA as the folder of XLA's own caches, so a copy starts empty in effect.)

    python benchmarks/profile_loop.py [--encoding alibi] [--recipes quick,default]
                                      [--change slope=0.5] [--in-process]
                                      [--change-in-process slope=0.6]
                                      [--out results/profile-loop.json]
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


# The in-process cases' driver (a process of its own, so this one never imports jax): argv is
# the encoding, the recipe, the folder for the outputs and the change; prints one JSON line
IN_PROCESS = """
import collections, json, sys, tempfile, time
import jax.monitoring
seen = collections.Counter()
jax.monitoring.register_event_listener(lambda name, **_: seen.update([name]))
jax.monitoring.register_event_duration_secs_listener(lambda name, s, **_: seen.update({name: s}))
from lgjax.harness.cli import main
encoding, recipe, work, change = sys.argv[1:5]
rows = []
for case, extra in (("first", []), ("again", []), ("changed", ["--set", change])):
    if case == "changed" and not change:
        break
    seen.clear()
    out = tempfile.mkdtemp(prefix=f"{recipe}-{case}-", dir=work)
    argv = ["profile", encoding, "--out", out, "--no-progress", *extra,
            *([f"--{recipe}"] if recipe != "default" else [])]
    t0 = time.perf_counter()
    assert main(argv) == 0, case
    rows.append({"case": case, "wall_seconds": time.perf_counter() - t0,
                 "compiled": seen["/jax/compilation_cache/cache_misses"],
                 "read": seen["/jax/compilation_cache/cache_hits"],
                 "tracing_seconds": seen["/jax/core/compile/jaxpr_trace_duration"],
                 "lowering_seconds": seen["/jax/core/compile/jaxpr_to_mlir_module_duration"],
                 "compiling_or_reading_seconds":
                     seen["/jax/core/compile/backend_compile_duration"]})
print(json.dumps(rows))
"""


def in_process_cases(a, recipe: str, cache: str, work: Path) -> list[dict]:
    """The three in-process cases (IN_PROCESS) on `cache`, printed."""
    done = subprocess.run([sys.executable, "-c", IN_PROCESS, a.encoding, recipe, str(work),
                           a.change_in_process], check=True,
                          env={**os.environ, "LGJAX_CACHE": cache}, stdout=subprocess.PIPE,
                          text=True)
    rows = [r | {"recipe": recipe, "cache": f"in one process: {r['case']}"}
            for r in json.loads(done.stdout.strip().splitlines()[-1])]
    for r in rows:
        print(f"{recipe:8s} {r['case']:7s} in one process: {r['wall_seconds']:6.1f} s wall "
              f"({r['compiled']} programs compiled, {r['read']} read; tracing "
              f"{r['tracing_seconds']:.1f} s, lowering {r['lowering_seconds']:.1f} s, compiling or "
              f"reading {r['compiling_or_reading_seconds']:.1f} s)", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encoding", default="alibi")
    ap.add_argument("--recipes", default="quick,default")
    ap.add_argument("--change", default="slope=0.5",
                    help="the option the 'changed' case sets (key=value; '': no such case)")
    ap.add_argument("--in-process", action="store_true",
                    help="also profile three times in one process (first, again, changed)")
    ap.add_argument("--change-in-process", default="slope=0.6",
                    help="the option its 'changed' case sets (not --change's value; '': none)")
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
            if a.in_process:
                rows += in_process_cases(a, recipe, cache, work)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"encoding": a.encoding, "rows": rows, "bytecode": bytecode,
                               "load_after": os.getloadavg()}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
