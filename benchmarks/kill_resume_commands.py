"""Kill -9 battery of the three training commands: multiseed, realizability-train, contract-train.

Command: python benchmarks/kill_resume_commands.py [--kills 8,7,5] [--per-root 4] [--seed 0]
Runtime here (2 loaded CPU cores): ~15-25 min for 20 kills.

Each command runs at a tiny size. An uninterrupted reference run is made first. Then the command
is started with --resume over a fresh checkpoint root and SIGKILLed at a random moment: at a
uniform random time of its run, or just after an orbax tmp folder appears (inside a save);
after `--per-root` kills the command is left to finish. Then every checkpoint under that root
must restore bitwise equal to the reference's, the per-program results.json of the
realizability grid must hold the reference's numbers, and so must the command's results.json
(timings and paths aside). benchmarks/kill_resume.py does the same for the training driver alone,
with damage on top.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from lgjax import checkpoints, grid, train  # noqa: E402
from lgjax.runs import open_run  # noqa: E402

COMMANDS = {  # tiny, but long enough to be killed while training and while saving
    "multiseed": ["--encodings", "rope,ape", "--seeds", "2", "--steps", "1000", "--batch", "8",
                  "--d", "16", "--vocab", "8", "--eval-sequences", "8", "--eval-lengths", "12,20"],
    "realizability-train": ["--tiers", "1L1H", "--encodings", "rope,nope", "--tasks",
                            "prev,skip-2", "--L0", "8", "--test-lengths", "12", "--d", "16",
                            "--vocab", "8", "--chunk", "10", "--ckpt-every", "20", "--seeds", "2",
                            "--steps", "200", "--batch", "8", "--eval-sequences", "8"],
    "contract-train": ["--tasks", "offset_copy", "--schemes", "rope,alibi", "--train-lengths",
                       "8,16", "--extend", "24", "--shifts", "4", "--vocab", "8", "--d", "16",
                       "--heads", "1", "--layers", "1", "--seeds", "2", "--steps", "400",
                       "--batch", "8", "--eval-sequences", "8", "--probe-sequences", "8"],
}
VOLATILE = ("seconds", "run_dirs", "config")  # result keys that hold timings or paths


def start(command: str, root: Path, env: dict) -> subprocess.Popen:
    args = [sys.executable, "-m", "lgjax", command, *COMMANDS[command], "--no-progress",
            "--resume", "--ckpt-root", str(root / "ck"), "--out", str(root / "out")]
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "stderr.log", "a") as err:  # the child keeps its own copy open
        return subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err)


def stderr_tail(root: Path) -> str:
    return (root / "stderr.log").read_text()[-3000:]


def run_dirs(root: Path) -> list[Path]:
    return sorted(p.parent for p in (root / "ck").rglob(checkpoints.CONFIG_FILE))


def in_save(root: Path) -> bool:
    return any("orbax-checkpoint-tmp" in p.name for d in run_dirs(root) for p in d.iterdir())


def states_of(run: Path) -> dict:
    """Every step of a run directory (a run or a grid program), restored and verified."""
    text = (run / checkpoints.CONFIG_FILE).read_text()
    if "tasks" in json.loads(text):
        g = checkpoints.read_config(run, grid.Grid)
        reader = checkpoints.RunDir(run, g, readonly=True, template=train.abstract_states(
            g.cell_config(0), math.prod(g.shape)))
    else:
        reader = open_run(run)
    with reader:
        states = dict(reader.readable_steps())
        assert not reader.damaged, reader.damaged
    return states


def stable(result):
    """The result without timings and paths."""
    if isinstance(result, dict):
        return {k: stable(v) for k, v in result.items() if not any(w in k for w in VOLATILE)}
    if isinstance(result, list):
        return [stable(v) for v in result]
    return result


def outcome(root: Path, ref: Path) -> list[str]:
    """What differs from the reference; [] when every checkpoint and number is bitwise equal."""
    problems = []
    runs, ref_runs = run_dirs(root), run_dirs(ref)
    if [r.relative_to(root) for r in runs] != [r.relative_to(ref) for r in ref_runs]:
        return [f"run directories {runs} vs {ref_runs}"]
    for run, ref_run in zip(runs, ref_runs):
        got, want = states_of(run), states_of(ref_run)
        if sorted(got) != sorted(want):
            problems.append(f"{run}: steps {sorted(got)} vs {sorted(want)}")
        for step in sorted(set(got) & set(want)):
            if not all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(got[step]),
                                                            jax.tree.leaves(want[step]))):
                problems.append(f"{run}: step {step} differs")
        leftovers = [p.name for p in run.iterdir() if "tmp" in p.name or "trash" in p.name
                     or p.name == "lgjax.lock"]
        if leftovers:
            problems.append(f"{run}: left over {leftovers}")
        if (ref_run / "results.json").exists():  # a realizability program's measurement
            if stable(json.loads((run / "results.json").read_text())) \
                    != stable(json.loads((ref_run / "results.json").read_text())):
                problems.append(f"{run}/results.json differs")
    if stable(json.loads((root / "out" / "results.json").read_text())) \
            != stable(json.loads((ref / "out" / "results.json").read_text())):
        problems.append("results.json differs")
    return problems


def battery(command: str, kills: int, per_root: int, work: Path, env: dict,
            rng: random.Random) -> dict:
    ref = work / command / "reference"
    t0 = time.monotonic()
    proc = start(command, ref, env)
    if proc.wait() != 0:
        raise SystemExit(f"{command}: the reference failed:\n{stderr_tail(ref)}")
    wall = time.monotonic() - t0
    print(f"{command}: reference {wall:.1f} s")
    log, roots, n = [], [], 0
    while n < kills:
        root = work / command / f"try{len(roots)}"
        roots.append(root)
        k = 0
        while k < per_root and n < kills:
            proc = start(command, root, env)
            mode = rng.choice(["time", "save"])
            end = time.monotonic() + (rng.uniform(1.0, wall) if mode == "time" else wall * 2)
            while proc.poll() is None and time.monotonic() < end \
                    and not (mode == "save" and in_save(root)):
                time.sleep(0.002)
            saving = in_save(root)
            if proc.poll() is not None:
                log.append({"root": root.name, "mode": mode, "landed": "after it finished"})
                break  # it finished first: this root is complete
            if mode == "save":
                time.sleep(rng.uniform(0.0, 0.01))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            k, n = k + 1, n + 1
            log.append({"root": root.name, "mode": mode,
                        "landed": "inside a save" if saving or in_save(root) else "outside a save"})
            print(f"  kill {n:2d} ({root.name}, {mode}): {log[-1]['landed']}")
        proc = start(command, root, env)  # to the end
        if proc.wait() != 0:
            raise SystemExit(f"{command} {root}: the final resume failed:\n{stderr_tail(root)}")
    results = {root.name: outcome(root, ref) for root in roots}
    for name, problems in results.items():
        print(f"  {command} {name}: " + ("bitwise equal to the reference" if not problems
                                         else "; ".join(problems)))
    landed = Counter(e["landed"] for e in log if e["landed"] != "after it finished")
    return {"kills": n, "landed": landed, "equal": all(not p for p in results.values()),
            "roots": len(roots)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", default="8,7,5", help="kills of multiseed, realizability-train, "
                                                     "contract-train")
    ap.add_argument("--per-root", type=int, default=4, help="kills before a root is finished")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dir", default="", help="work folder (default: a fresh temporary one)")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    work = Path(args.dir or tempfile.mkdtemp(prefix="kill_resume_commands-"))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "JAX_COMPILATION_CACHE_DIR": str(work / "jax-cache"),
           "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
    t0 = time.monotonic()
    summary = {c: battery(c, int(k), args.per_root, work, env, rng)
               for c, k in zip(COMMANDS, args.kills.split(","))}
    print("\nsummary")
    for c, s in summary.items():
        print(f"  {c}: {s['kills']} kills over {s['roots']} roots "
              f"({', '.join(f'{w} {n}' for w, n in sorted(s['landed'].items()))}); "
              f"every checkpoint and number bitwise equal to the reference: {s['equal']}")
    print(f"  wall time {time.monotonic() - t0:.0f} s; work folder {work}")
    return 0 if all(s["equal"] for s in summary.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
