"""The cost of measuring trained contract cells (`lgjax contract-train`'s measure_cell), the code
of a git revision (BEFORE) against the working tree (AFTER), back to back on the same cells.

Command: python benchmarks/contract_measure_cost.py --ckpt-root ROOT --cells TASK/SCHEME,...
                 [--before REV] [--steps N] [--eval-sequences N] [--warm-rounds N]
                 [--out DIR] [--against-saved]
ROOT holds the cells already trained (`lgjax contract-train --tasks T --schemes S --steps N
--ckpt-root ROOT`; N as given here, the other options at their defaults). BEFORE's package is
exported (`git archive REV lgjax`) to a temporary folder; each side runs in its own process
(PYTHONPATH at its package, the CPU split into devices and the compilation cache on, as the
command line does) and times `measure_cell` on every cell, loading excluded. Order: before
cold, after cold (each with an empty compilation cache of its own), before warm, after warm
(each again over the cache its cold run filled), the warm pair --warm-rounds times; a side's
time is the least of its runs (the machine may be shared). Per run: seconds per cell, XLA
compilations and their seconds. The cells' measurements go to DIR/<side>-<cache>/results.json,
compared value by value (benchmarks/compare_results.py); DIR/summary.json holds the timings.
--against-saved: no timing; the working tree measures each cell once and its measurement is
compared with the one saved in the cell's run directory (measure.CELL_FILE, written by the code
that trained it), e.g. cells trained and measured by the code before a change.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
from lgjax import runtime
runtime.split_cpu_into_devices()
runtime.enable_compile_cache()
from jax import monitoring
from lgjax.harness import study
from lgjax.harness.outputs import jsonable
from lgjax.harness.study import RunOptions
from lgjax.studies.contract import measure, train

args = json.loads(sys.argv[1])
compiles = []
monitoring.register_event_duration_secs_listener(
    lambda name, secs, **kw: compiles.append(secs)
    if name == "/jax/core/compile/backend_compile_duration" else None)
cells, seconds, saved = {}, {}, {}
n0, s0 = 0, 0.0
for cell in args["cells"]:
    task, scheme = cell.split("/")
    cfg = train.Config(tasks=(task,), schemes=(scheme,), run=RunOptions(
        seeds=5, steps=args["steps"], batch=64, eval_sequences=args["eval_sequences"],
        ckpt_root=args["ckpt_root"], progress=False))
    (name, rc), = train.runs(cfg).items()
    run_dir = study.own_or_twin(name, rc, study.options(cfg))
    if not study.is_finished(run_dir, rc):
        sys.exit(f"{run_dir}: not a finished run of these options; train it first")
    t = study.train_one(rc, run_dir, study.options(cfg), name)
    n0, s0 = len(compiles), sum(compiles)
    t0 = time.perf_counter()
    out = measure.measure_cell(cfg, t)
    seconds[cell] = {"seconds": time.perf_counter() - t0, "compilations": len(compiles) - n0,
                     "compile_seconds": sum(compiles) - s0}
    cells[cell] = json.loads(json.dumps(out, default=jsonable))
    saved[cell] = measure.saved_cell(cfg, t)
print(json.dumps({"cells": cells, "timing": seconds, "saved": saved}))
"""


def run_side(package: Path, cache: Path, args) -> dict:
    env = {**os.environ, "PYTHONPATH": str(package), "LGJAX_CACHE": str(cache)}
    child = json.dumps({"cells": args.cells, "steps": args.steps,
                        "eval_sequences": args.eval_sequences,
                        "ckpt_root": str(Path(args.ckpt_root).resolve())})
    done = subprocess.run([sys.executable, "-c", CHILD, child], env=env, cwd=tempfile.gettempdir(),
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ckpt-root", required=True)
    ap.add_argument("--cells", required=True, type=lambda s: s.split(","))
    ap.add_argument("--before", default="HEAD")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--eval-sequences", type=int, default=512)
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "contract-measure-cost"))
    ap.add_argument("--warm-rounds", type=int, default=1)
    ap.add_argument("--against-saved", action="store_true")
    args = ap.parse_args()
    out = Path(args.out)
    if args.against_saved:
        with tempfile.TemporaryDirectory() as tmp:
            result = run_side(ROOT, Path(tmp) / "cache", args)
        for side in ("saved", "cells"):
            (out / side).mkdir(parents=True, exist_ok=True)
            (out / side / "results.json").write_text(json.dumps(result[side]))
        return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compare_results.py"),
                               str(out / "saved" / "results.json"),
                               str(out / "cells" / "results.json")]).returncode
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp) / "before"
        before.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "lgjax"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        packages = {"before": before, "after": ROOT}
        summary = {"before": args.before, "cells": args.cells, "load": os.getloadavg(),
                   "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "runs": {}}
        for cache in ["cold"] + ["warm"] * args.warm_rounds:
            for side, package in packages.items():
                result = run_side(package, Path(tmp) / f"cache-{side}", args)
                (out / f"{side}-{cache}").mkdir(parents=True, exist_ok=True)
                (out / f"{side}-{cache}" / "results.json").write_text(json.dumps(result["cells"]))
                summary["runs"].setdefault(f"{side}-{cache}", []).append(result["timing"])
                per = [t["seconds"] for t in result["timing"].values()]
                print(f"{side:6s} {cache}: {sum(per) / len(per):6.1f} s per cell "
                      + " ".join(f"{c} {t['seconds']:.1f} s ({t['compilations']} compilations, "
                                 f"{t['compile_seconds']:.1f} s)"
                                 for c, t in result["timing"].items()), flush=True)
        summary["load_after"] = os.getloadavg()
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    rc = 0
    for cache in ("cold", "warm"):
        total = {side: min(sum(t["seconds"] for t in run.values())
                           for run in summary["runs"][f"{side}-{cache}"]) for side in packages}
        print(f"{cache}: after / before = {total['after'] / total['before']:.3f} "
              f"({total['before']:.1f} s -> {total['after']:.1f} s, the least of its runs)")
        rc |= subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compare_results.py"),
                              str(out / f"before-{cache}" / "results.json"),
                              str(out / f"after-{cache}" / "results.json")]).returncode
    return rc


if __name__ == "__main__":
    sys.exit(main())
