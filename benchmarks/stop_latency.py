"""Signal-to-exit time of a stopped run, and its resume against an uninterrupted run.

Command: python benchmarks/stop_latency.py [--stops 10] [--processes 1] [--signal TERM] [--seed 0]
Runtime here (2 loaded CPU cores): ~4 min for 10 stops of one process, ~8 min of 2.

A reference `multiseed` run is trained first. Then `--stops` times a fresh run of the same
command (one process, or `lgjax launch --processes N`, whose launcher gets the signal and
forwards it) is sent the signal at a random moment: every other time uniformly within its
training (after its first checkpoint), else as soon as an orbax save is in flight. The time
from the signal to the command's exit is measured; the exit code must be 75 with a committed
checkpoint; resumed with --resume, every checkpoint and number must equal the reference's
bitwise. Prints each stop and the median and worst time.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.kill_resume_commands import in_save, outcome  # noqa: E402
from lgjax import checkpoints  # noqa: E402

COMMAND = ["multiseed", "--encodings", "rope", "--seeds", "4", "--steps", "3000", "--batch", "32",
           "--d", "32", "--vocab", "8", "--train-lengths", "4,8", "--eval-lengths", "8,12",
           "--eval-sequences", "64", "--no-progress"]


def argv(root: Path, processes: int, resume: bool = False) -> list[str]:
    launch = ["launch", "--processes", str(processes), "--devices-per-process", "1", "--"] \
        if processes > 1 else []
    return [sys.executable, "-m", "lgjax", *launch, *COMMAND, "--ckpt-root", str(root / "ck"),
            "--out", str(root / "out"), *(["--resume"] if resume else [])]


def run_dir(root: Path) -> Path:
    return root / "ck" / "multiseed-K1" / "rope"


def main(args=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stops", type=int, default=10)
    p.add_argument("--processes", type=int, default=1)
    p.add_argument("--signal", default="TERM", choices=["TERM", "USR1"])
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(args)
    rng = random.Random(a.seed)
    sig = signal.Signals[f"SIG{a.signal}"]
    # the same device layout everywhere: one device per process
    env = {**os.environ, "LGJAX_CPU_DEVICES": "1"}
    work = Path(tempfile.mkdtemp(prefix="lgjax-stop-"))
    env.setdefault("LGJAX_CACHE", str(work / "cache"))
    ref = work / "reference"
    subprocess.run(argv(ref, a.processes), env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    # a second run, compiled programs cached as the stopped ones will find them: how long its
    # training lasts from the first checkpoint, the window the signals fall in
    warm = subprocess.Popen(argv(work / "warm", a.processes), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not (run_dir(work / "warm") / "1").is_dir() and warm.poll() is None:
        time.sleep(0.002)
    t0 = time.perf_counter()
    while not (run_dir(work / "warm") / COMMAND[COMMAND.index("--steps") + 1]).is_dir():
        time.sleep(0.002)
    train_s = time.perf_counter() - t0
    warm.wait()
    print(f"training after the first checkpoint: {train_s:.1f} s ({a.processes} process(es), "
          f"{work})", flush=True)
    walls, failures = [], 0
    for i in range(a.stops):
        root = work / f"stop-{i}"
        mode = "in-save" if i % 2 else "training"
        with open(work / f"stop-{i}.log", "w") as log:
            proc = subprocess.Popen(argv(root, a.processes), env=env, stdout=subprocess.DEVNULL,
                                    stderr=log)
        while not (run_dir(root) / "1").is_dir() and proc.poll() is None:
            time.sleep(0.002)
        if mode == "training":
            time.sleep(rng.uniform(0, train_s * 0.8))
        else:
            time.sleep(rng.uniform(0, train_s * 0.6))
            while not in_save(root) and proc.poll() is None:
                time.sleep(0.001)
        if proc.poll() is not None:
            print(f"stop {i}: the run ended before the signal", flush=True)
            failures += 1
            continue
        sent = time.perf_counter()
        proc.send_signal(sig)
        code = proc.wait()
        wall = time.perf_counter() - sent
        saved = checkpoints.step_folders(run_dir(root))[-1]
        resumed = subprocess.run(argv(root, a.processes, resume=True), env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        problems = outcome(root, ref) if resumed.returncode == 0 else [resumed.stderr[-300:]]
        ok = code == 75 and not problems
        failures += not ok
        walls.append(wall)
        print(f"stop {i} ({mode}): SIG{a.signal} -> exit {code} in {wall:.2f} s, newest step "
              f"{saved}; resumed: {'bitwise equal' if not problems else problems}", flush=True)
    if walls:
        print(f"signal to exit over {len(walls)} stops: median {statistics.median(walls):.2f} s, "
              f"worst {max(walls):.2f} s; {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
