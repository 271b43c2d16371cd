"""What a published-scale reproduction asks of this machine: its training counted in FLOP, against
the fastest this CPU runs those FLOP, measured in the same run.

Every run a study's `lgjax reproduce` plan trains on this backend (the plans `reproduce` itself
builds, so nothing is copied by hand: every study at its published scale, and with --tiers the
deeper realizability tiers and the d = 128 scale check) is counted once (a run two steps share,
once), as cells x training steps. A cell-step's FLOP are those of the matmuls (dot_general) in
the training step's own jaxpr, forward and backward, for any model the plan trains (the
implicit-bias heads, the transformers of the contract matrix and the realizability grids).
Evaluation is not counted. Printed, as hours of wall with every core busy all along (CPU-hours:
that times the cores), per part of the plan and per goal (`reproduce all`, each part --tiers
adds):
  peak    every FLOP at the square-matmul rate (n = 1024, 2048), one matmul on each device at once
  alone   each model shape's matmuls run alone at their own operand shapes, one cell per device
          (benchmarks/grid_ceiling.py's runner), as if every other op were free; shapes under
          --min-share of the FLOP count at the peak
  step    each such shape's training step, timed as a grid of one cell per device (the serial
          layout); the shapes under --min-share are left out (their share is printed)
and per timed shape its GFLOP, both times per cell-step, their ratio and the matmuls' rate. The
measurements are on docs/results/performance.md.

    python benchmarks/goal_floors.py [--tiers 2L4H] [--min-share 0.005] [--steps 10]
                                     [--repeats 3] [--out results/goal-floors.json]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from lgjax import runtime  # noqa: E402

runtime.split_cpu_into_devices()  # the devices every lgjax command uses

import jax  # noqa: E402
from grid_ceiling import dot_flop, grid_and_matmuls, step_dots  # noqa: E402

from lgjax import grid, models  # noqa: E402
from lgjax.config import RunConfig  # noqa: E402
from lgjax.devices import place, seed_mesh, shard_seeds  # noqa: E402
from lgjax.harness.study import options  # noqa: E402
from lgjax.reproduce import command  # noqa: E402
from lgjax.studies import STUDIES  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Work:
    study: str
    experiment: str
    cell: RunConfig  # one cell's config (a grid's first task)
    cells: int  # seeds, or tasks x seeds of a grid
    steps: int
    key: str  # the run directory's absolute path (a run counts once)


def planned_work(tiers: tuple[str, ...], root: Path) -> list[Work]:
    """Every run `lgjax reproduce <study>` trains, each once, for every study with claims."""
    seen, work = set(), []
    for name, study in STUDIES.items():
        if not study.claims:
            continue
        cfg = command.Config(study=name, out=str(root / "out" / name), ckpt_root=str(root / "ck"),
                             tiers=tiers if study.tiers else (), progress=False)
        for step in command.prepare(cfg).planned:
            if not hasattr(step.module, "STUDY"):
                continue
            where = Path(options(step.config).ckpt_root)
            for run, rc in step.module.STUDY.runs(step.config).items():
                key = os.path.abspath(where / run)
                if key in seen:
                    continue
                seen.add(key)
                if isinstance(rc, grid.Grid):
                    cell, cells = rc.cell_config(0), math.prod(rc.shape)
                else:
                    cell, cells = rc, len(rc.train.seeds)
                work.append(Work(name, step.experiment, cell, cells, rc.train.steps, key))
    return work


def shape_key(rc: RunConfig) -> str:
    """What a cell-step's matmuls depend on: the model, the batch and lengths, the task's
    vocabulary (not its rule, seeds or steps)."""
    t = rc.train
    return json.dumps([json.loads(rc.to_json())["model"], t.batch, t.lmin, t.lmax,
                       t.random_positions, models.vocab_sizes(rc)], sort_keys=True)


def one_cell_grid(rc: RunConfig) -> grid.Grid:
    """A grid of one cell per device, each the cell `rc` trains (for the matmuls alone)."""
    n = len(jax.devices())
    return grid.Grid((rc.task,) * n, rc.model, dataclasses.replace(rc.train, seeds=(0,)))


def square_peak(repeats: int = 5) -> float:
    """GFLOP/s of square fp32 matmuls (n = 1024, 2048), one on every device at once, as the
    shapes below are timed: the best of `repeats`."""
    devices = len(jax.devices())
    mesh = seed_mesh(devices)
    best = 0.0
    for n in (1024, 2048):
        x = place(jax.random.normal(jax.random.key(0), (devices, n, n)), mesh)
        f = jax.jit(shard_seeds(lambda x: x @ x, mesh))
        jax.block_until_ready(f(x))
        for _ in range(repeats):
            t0 = time.perf_counter()
            jax.block_until_ready(f(x))
            best = max(best, devices * 2 * n**3 / (time.perf_counter() - t0) / 1e9)
    return best


def label(rc: RunConfig) -> str:
    m = rc.model
    if m.arch != "transformer":
        return m.arch
    return f"{m.layers}L{m.heads}H" + (f" d={m.d}" if m.d != 64 else "") + f" L={rc.train.lmax}"


def time_shape(rc: RunConfig, dots: list, steps: int, repeats: int) -> tuple[float, float]:
    """(training step, its matmuls alone) in ms per cell-step, one cell per device."""
    g = one_cell_grid(rc)
    (step, _), (alone, _) = grid_and_matmuls(g, dots, steps, repeats)
    return tuple(1e3 * s / (steps * math.prod(g.shape)) for s in (step, alone))


def add(r: collections.Counter, s: dict, n: int, peak: float) -> None:
    """Count n cell-steps of shape s into row r."""
    r["runs"] += 1
    r["cell_steps"] += n
    r["tflop"] += n * s["gflop"] / 1e3
    r["peak_h"] += n * s["gflop"] / peak / 3600
    r["alone_h"] += n * s.get("ms_alone", 1e3 * s["gflop"] / peak) / 1e3 / 3600
    if "ms_step" in s:
        r["step_h"] += n * s["ms_step"] / 1e3 / 3600
        r["timed_alone_h"] += n * s["ms_alone"] / 1e3 / 3600
    else:
        r["untimed_tflop"] += n * s["gflop"] / 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiers", default="", help="realizability tiers besides 1L1H (e.g. 2L4H)")
    ap.add_argument("--min-share", type=float, default=0.005)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="results/goal-floors.json")
    a = ap.parse_args()
    t0 = time.perf_counter()
    tiers = tuple(t for t in a.tiers.split(",") if t)
    with tempfile.TemporaryDirectory() as tmp:
        work = planned_work(tiers, Path(tmp))
        default = {w.key for w in planned_work((), Path(tmp))}
    group = {w.key: "reproduce all" if w.key in default else f"--tiers {a.tiers}: {w.experiment}"
             for w in work}
    shapes: dict[str, dict] = {}
    for w in work:
        key = shape_key(w.cell)
        if key not in shapes:
            dots = step_dots(one_cell_grid(w.cell))
            shapes[key] = {"cell": w.cell, "dots": dots, "gflop": dot_flop(dots) / 1e9,
                           "cell_steps": 0}
        shapes[key]["cell_steps"] += w.cells * w.steps
    total = sum(s["cell_steps"] * s["gflop"] for s in shapes.values())
    peak = square_peak()
    cores = len(os.sched_getaffinity(0))
    for s in shapes.values():
        s["share"] = s["cell_steps"] * s["gflop"] / total
        if s["share"] >= a.min_share:
            s["ms_step"], s["ms_alone"] = time_shape(s["cell"], s["dots"], a.steps, a.repeats)
    rows = collections.defaultdict(collections.Counter)
    groups = collections.defaultdict(collections.Counter)
    for w in work:
        s = shapes[shape_key(w.cell)]
        n = w.cells * w.steps
        for r in rows[(w.study, w.experiment, label(w.cell))], groups[group[w.key]]:
            add(r, s, n, peak)
    print(f"fp32 matmul peak {peak:.0f} GFLOP/s, {len(jax.devices())} devices, {cores} cores; "
          f"realizability tiers: 1L1H{''.join(',' + t for t in tiers)}")
    print("hours of wall with every core busy: every FLOP at the peak; each shape's matmuls "
          "alone; its training step (measured here)")
    print(f"{'study':14s} {'experiment':26s} {'model':16s} {'runs':>4s} {'cell-steps':>10s} "
          f"{'TFLOP':>7s} {'peak':>6s} {'alone':>6s} {'step':>6s}")
    sums = collections.Counter()
    for (study, exp, model), r in sorted(rows.items(), key=lambda kv: -kv[1]["tflop"]):
        sums.update({k: r[k] for k in ("tflop", "peak_h", "alone_h", "step_h", "untimed_tflop")})
        step = f"{r['step_h']:6.2f}" if not r["untimed_tflop"] else f"{'-':>6s}"
        print(f"{study:14s} {exp:26s} {model:16s} {r['runs']:4d} {r['cell_steps']:10d} "
              f"{r['tflop']:7.1f} {r['peak_h']:6.2f} {r['alone_h']:6.2f} {step}")
    print(f"{'all':58s} {sums['tflop']:18.1f} {sums['peak_h']:6.2f} {sums['alone_h']:6.2f} "
          f"{sums['step_h']:6.2f}  (x {cores} cores: {sums['peak_h'] * cores:.2f} / "
          f"{sums['alone_h'] * cores:.2f} / {sums['step_h'] * cores:.2f} CPU-hours; the step "
          f"column leaves out the {100 * sums['untimed_tflop'] / sums['tflop']:.1f}% of the FLOP "
          "under --min-share)")
    print("per goal (h of wall, every core busy; CPU-hours = wall x cores): floor at the peak, "
          "floor of the matmuls alone, training steps")
    for name, r in groups.items():
        untimed = r["untimed_tflop"] / r["tflop"]
        print(f"  {name:48s} {r['peak_h']:.2f} h ({r['peak_h'] * cores:.2f}), "
              f"{r['alone_h']:.2f} h ({r['alone_h'] * cores:.2f}), {r['step_h']:.2f} h "
              f"({r['step_h'] * cores:.2f})" + (f" and runs of {100 * untimed:.1f}% of the FLOP "
                                                 "untimed" if untimed else "")
              + (f"; the timed steps {r['step_h'] / r['timed_alone_h']:.2f}x their matmuls "
                 "alone" if r["timed_alone_h"] else ""))
    print(f"{'model':16s} {'encoding':22s} {'GFLOP':>6s} {'step ms':>8s} {'alone ms':>9s} "
          f"{'ratio':>6s} {'alone GFLOP/s':>14s} {'share':>6s}  (per cell-step)")
    for s in sorted(shapes.values(), key=lambda s: -s["share"]):
        if "ms_alone" in s:
            print(f"{label(s['cell']):16s} {s['cell'].model.encoding:22s} {s['gflop']:6.3f} "
                  f"{s['ms_step']:8.2f} {s['ms_alone']:9.2f} {s['ms_step'] / s['ms_alone']:6.2f} "
                  f"{s['gflop'] / s['ms_alone'] * 1e3:14.0f} {100 * s['share']:5.1f}%")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "peak_gflops": peak, "devices": len(jax.devices()), "cores": cores, "tiers": tiers,
        "jax": jax.__version__,
        "parts": [{"study": s, "experiment": e, "model": m, **r} for (s, e, m), r in rows.items()],
        "goals": {name: dict(r) for name, r in groups.items()},
        "shapes": [{"model": label(s["cell"]), "encoding": s["cell"].model.encoding,
                    "gflop_per_cell_step": s["gflop"], "cell_steps": s["cell_steps"],
                    "share": s["share"], "ms_step": s.get("ms_step"),
                    "ms_alone": s.get("ms_alone")} for s in shapes.values()],
        "seconds": time.perf_counter() - t0}, indent=1))
    print(f"wrote {out} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
