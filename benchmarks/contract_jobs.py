"""Two contract cells one after another in one process, side by side in one process (threads,
each on its own CPU device: `contract-train`'s default, lgjax.harness.side_by_side) and side by
side in two processes (as `reproduce --jobs 2` runs the matrix's cells), in one run.

A cell's five seeds do not split over a 2-core machine's two CPU devices (5 is odd), so a cell
trains on one device; this measures whether a second cell beside it uses the rest of the CPU.
Each variant trains and measures both cells from an empty checkpoint root; the variants take
turns over the rounds, each round in another order (the first round fills the compilation cache
for all). Printed: wall and CPU seconds per variant and round, each variant's ratio against one
after another (best walls), and whether the variants' cell measurements agree (the same code
and device split: they should, value for value; the matched-loss reading, which compares the
schemes in one results file, is left out).

    python benchmarks/contract_jobs.py [--cells absolute_anchor/rope,absolute_anchor/ape]
                                       [--steps 1000] [--rounds 3] [--eval-sequences N]
                                       [--out results/contract-jobs.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import compare_results  # noqa: E402


def command(cells: list[tuple[str, str]], steps: int, work: Path, extra: list[str]) -> list[str]:
    tasks = ",".join(dict.fromkeys(t for t, _ in cells))
    schemes = ",".join(dict.fromkeys(s for _, s in cells))
    return [sys.executable, "-m", "lgjax", "contract-train", "--tasks", tasks, "--schemes",
            schemes, "--steps", str(steps), "--ckpt-root", str(work / "ck"), "--out",
            str(work / "out"), "--no-progress", *extra]


def run(groups: list[list[tuple[str, str]]], steps: int, work: Path,
        extra: list[str]) -> tuple[float, float]:
    """Each group of cells in its own process, all processes at once: (wall, CPU seconds)."""
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    procs = [subprocess.Popen(command(g, steps, work / str(i), extra), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for i, g in enumerate(groups)]
    for p in procs:
        _, err = p.communicate()
        if p.returncode:
            sys.exit(f"contract-train failed ({p.returncode}): {err.strip().splitlines()[-1:]}")
    wall = time.perf_counter() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)


def cell_results(work: Path) -> dict:
    """Every cell's measured results, whichever process wrote them."""
    cells = {}
    for f in work.glob("*/out/results.json"):
        for task, by_scheme in json.loads(f.read_text())["cells"].items():
            for scheme, res in by_scheme.items():
                cells[f"{task}/{scheme}"] = res
    return cells


def differences(a: dict, b: dict) -> list[str]:
    """`compare_results.diff` of two variants' cells, timings and paths ignored there, and the
    matched-loss reading left out: it compares a cell with the other schemes of its task in the
    same results file, which a one-cell process does not hold."""
    drop = lambda cells: {c: {k: v for k, v in r.items() if k != "matched"}
                          for c, r in cells.items()}
    out: list[str] = []
    compare_results.diff(drop(a), drop(b), "", out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", default="absolute_anchor/rope,absolute_anchor/ape")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="results/contract-jobs.json")
    ap.add_argument("--eval-sequences", type=int, help="contract-train's (default: its own)")
    a = ap.parse_args()
    extra = [] if a.eval_sequences is None else ["--eval-sequences", str(a.eval_sequences)]
    cells = [tuple(c.split("/")) for c in a.cells.split(",")]
    if len(cells) != 2 or len({t for t, _ in cells}) > 1 and len({s for _, s in cells}) > 1:
        sys.exit("--cells: two cells of one task (or one scheme), e.g. absolute_anchor/rope,"
                 "absolute_anchor/ape: one contract-train command trains them both")
    serial = ["--side-by-side", "1"]
    variants = {"one after another": ([cells], serial), "two threads": ([cells], []),
                "two processes": ([[c] for c in cells], serial)}
    names = list(variants)
    rows, results = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for name in names[r % 3:] + names[:r % 3]:
                groups, how = variants[name]
                work = Path(tmp) / f"{r}-{names.index(name)}"
                wall, cpu = run(groups, a.steps, work, extra + how)
                results.setdefault(name, cell_results(work))
                rows.append({"round": r, "variant": name, "wall_s": wall, "cpu_s": cpu})
                print(f"round {r} {name:17s}: {wall:7.1f} s wall, {cpu:7.1f} s CPU", flush=True)
        diffs = {name: differences(results[names[0]], results[name]) for name in names[1:]}
    best = {n: min(x["wall_s"] for x in rows if x["variant"] == n) for n in variants}
    speedup = {n: best[names[0]] / best[n] for n in names[1:]}
    print(f"best walls: {best[names[0]]:.1f} s one after another; " + "; ".join(
        f"{best[n]:.1f} s {n}: {speedup[n]:.2f}x, results "
        f"{'equal' if not diffs[n] else f'{len(diffs[n])} differences, e.g. {diffs[n][:3]}'}"
        for n in names[1:]))
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"cells": a.cells, "steps": a.steps, "cpus": os.cpu_count(),
                               "rows": rows, "speedup": speedup, "differences": diffs}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
