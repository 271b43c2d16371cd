"""Kill -9 battery: SIGKILL a small training at random moments, resume it, compare bitwise.

Command: python benchmarks/kill_resume.py [--kills 24] [--per-run 6] [--damage-every 4] [--seed 0]
Runtime here (2 loaded CPU cores): ~5-8 min for 24 kills.

An uninterrupted reference run is trained first. Then each run directory is trained in a fresh
subprocess (`train_run(..., resume=True)`) that is SIGKILLed at a random moment: during startup
and restore, at a uniform random time during training, or just after a save's orbax tmp folder
appears (inside the save). Every `--damage-every`-th kill also flips one random bit in a random
file of the newest step, so the next resume has to refuse that step and fall back. After
`--per-run` kills a run is left to finish; then every checkpoint it holds (and its final state)
must equal the reference's bitwise, with nothing damaged or left over (tmp folders, lock).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from lgjax import checkpoints, train  # noqa: E402
from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig  # noqa: E402
from lgjax.runs import open_run  # noqa: E402

CHILD = """
import sys, time
from lgjax.checkpoints import driver
from lgjax.config import RunConfig
cfg = RunConfig.from_json(open(sys.argv[1]).read())
tick = lambda step, *_: print(f"step {step}", flush=True)
driver.train_run(cfg, sys.argv[2], resume=True, on_chunk=tick)
print("done", flush=True)
"""


def battery_config() -> RunConfig:
    return RunConfig(TaskConfig("fixed_offset", vocab=16, offset=1),
                     ModelConfig(encoding="rope", d=32, heads=1),
                     TrainConfig(steps=600, batch=32, lmin=8, lmax=16, seeds=(0, 1, 2, 3),
                                 ckpt_every=20, ckpt_early=16, chunk=20))


class Child:
    """One training process; stdout lines are timestamped by a reader thread."""

    def __init__(self, cfg_file: Path, run: Path, env: dict):
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, str(cfg_file), str(run)],
                                     cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.started = time.monotonic()
        self.first_step: float | None = None
        self.steps: list[int] = []
        self.times: list[float] = []
        self.stderr = ""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("step "):
                self.first_step = self.first_step or time.monotonic()
                self.steps.append(int(line.split()[1]))
                self.times.append(time.monotonic())

    def _read_err(self):
        self.stderr = self.proc.stderr.read()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> bool:
        """SIGKILL; False when it had already exited."""
        if not self.alive():
            return False
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        return self.proc.returncode == -signal.SIGKILL

    def wait(self) -> int:
        rc = self.proc.wait()
        time.sleep(0.05)  # let the reader threads drain the pipes
        return rc


def tmp_folders(run: Path) -> list[str]:
    return [p.name for p in run.iterdir() if "orbax-checkpoint-tmp" in p.name] \
        if run.exists() else []


def wait_until(pred, child: Child, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end and child.alive():
        if pred():
            return True
        time.sleep(0.001)
    return False


def kill_moment(child: Child, run: Path, mode: str, rng: random.Random, startup: float,
                train_s: float, cfg: RunConfig) -> None:
    """Block until the moment to kill for `mode` (or until the child exits)."""
    done = (checkpoints.step_folders(run) or [0])[-1]
    saves_left = [s for s in train.checkpoint_steps(cfg.train) if s > done]
    train_s *= (cfg.train.steps - done) / cfg.train.steps
    if mode == "startup":
        wait_until(lambda: time.monotonic() - child.started > rng.uniform(0.3, startup), child,
                   startup + 60)
        return
    wait_until(lambda: child.first_step is not None, child, 300)
    if mode == "training":
        at = child.first_step + rng.uniform(0.0, train_s)
        wait_until(lambda: time.monotonic() >= at, child, train_s + 60)
    else:  # "save": a random save, caught while its tmp folder exists
        skip = rng.randrange(0, max(len(saves_left), 1))
        seen: set[str] = set()

        def in_save():
            names = tmp_folders(run)
            seen.update(names)
            return len(seen) > skip and bool(names)

        if wait_until(in_save, child, train_s + 60):
            time.sleep(rng.uniform(0.0, 0.004))


def snapshot(run: Path) -> dict[str, set]:
    """What an unfinished save leaves on disk: orbax tmp folders, digests written for a step
    orbax has not committed, committed steps whose file digests are not recorded yet."""
    steps = set(checkpoints.step_folders(run))
    digests = {int(p.stem): p for p in (run / "digests").glob("*.json")} \
        if (run / "digests").exists() else {}
    return {"inside a save (orbax tmp folder left)": set(tmp_folders(run)),
            "between digest and orbax commit": set(digests) - steps,
            "between commit and file digests": {s for s in steps & set(digests)
                                                if '"files"' not in digests[s].read_text()}}


def classify(run: Path, before: dict[str, set]) -> str:
    """Where the kill landed: what it left on disk that was not there before the process."""
    after = snapshot(run)
    return next((where for where in after if after[where] - before[where]), "outside a save")


def damage_newest(run: Path, rng: random.Random) -> str | None:
    """Flip a bit of the newest step, when an older one is left to fall back to (with none
    intact, resume refuses rather than delete every step: see RunDir.restore_latest_intact)."""
    steps = checkpoints.step_folders(run)
    if len(steps) < 2:
        return None
    files = sorted(f for f in (run / str(steps[-1])).rglob("*") if f.is_file())
    target = rng.choice(files)
    data = bytearray(target.read_bytes())
    if not data:
        return None
    bit = rng.randrange(8 * len(data))
    data[bit // 8] ^= 1 << (bit % 8)
    target.write_bytes(bytes(data))
    return f"step {steps[-1]}: bit {bit} of {target.relative_to(run)}"


def compare(run: Path, ref_states: dict) -> list[str]:
    """Every step of `run` against the reference, bitwise; a list of problems."""
    problems = []
    reader = open_run(run)
    with reader:
        states = dict(reader.readable_steps())
        problems += [f"step {s} damaged: {why}" for s, why in reader.damaged.items()]
    if sorted(states) != sorted(ref_states):
        problems.append(f"steps {sorted(states)} vs reference {sorted(ref_states)}")
    for step in sorted(set(states) & set(ref_states)):
        same = all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(states[step]),
                                                        jax.tree.leaves(ref_states[step])))
        if not same:
            problems.append(f"step {step} differs from the reference")
    leftovers = [p.name for p in run.iterdir() if "tmp" in p.name or "trash" in p.name
                 or p.name == "lgjax.lock"]
    if leftovers:
        problems.append(f"left over: {leftovers}")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=24, help="kills that land in a live process")
    ap.add_argument("--per-run", type=int, default=6, help="kills per run directory")
    ap.add_argument("--damage-every", type=int, default=4, help="0: never damage a step")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dir", default="", help="work folder (default: a fresh temporary one)")
    ap.add_argument("--no-cache", action="store_true",
                    help="no persistent compilation cache (every restart compiles)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    rng = random.Random(args.seed)
    work = Path(args.dir or tempfile.mkdtemp(prefix="kill_resume-"))
    work.mkdir(parents=True, exist_ok=True)
    cfg = battery_config()
    cfg_file = work / "config.json"
    cfg_file.write_text(cfg.to_json())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if not args.no_cache:
        env |= {"JAX_COMPILATION_CACHE_DIR": str(work / "jax-cache"),
                "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}

    ref_run = work / "reference"
    shutil.rmtree(ref_run, ignore_errors=True)
    ref = Child(cfg_file, ref_run, env)
    assert ref.wait() == 0, ref.stderr[-3000:]
    startup = ref.first_step - ref.started
    train_s = ref.times[-1] - ref.times[1]  # from the end of the first chunk: no compile
    print(f"reference: {cfg.train.steps} steps, {len(cfg.train.seeds)} seeds, "
          f"{len(checkpoints.step_folders(ref_run))} checkpoints; startup {startup:.1f} s, "
          f"training {train_s:.1f} s")
    reader = open_run(ref_run)
    with reader:
        ref_states = dict(reader.readable_steps())

    modes = ["training", "save", "startup", "save", "training", "save"]
    kills: list[dict] = []
    runs: list[dict] = []
    missed = 0
    while len(kills) < args.kills:
        run = work / f"run{len(runs)}"
        shutil.rmtree(run, ignore_errors=True)
        n_kills, fallbacks, damaged = 0, 0, 0
        while True:
            left = snapshot(run)
            child = Child(cfg_file, run, env)
            if n_kills >= args.per_run or len(kills) >= args.kills:
                rc = child.wait()
                fallbacks += "resuming from step" in child.stderr
                if rc != 0:
                    raise SystemExit(f"{run}: the final resume failed:\n{child.stderr[-3000:]}")
                break
            mode = modes[len(kills) % len(modes)]
            kill_moment(child, run, mode, rng, startup, train_s, cfg)
            before = max(child.steps, default=None)
            if not child.kill():
                missed += 1  # it finished first: this run is complete
                if child.wait() != 0:
                    raise SystemExit(f"{run}: a resume failed:\n{child.stderr[-3000:]}")
                fallbacks += "resuming from step" in child.stderr
                break
            child.wait()
            fallbacks += "resuming from step" in child.stderr
            n_kills += 1
            where = classify(run, left)
            hurt = None
            if args.damage_every and len(kills) % args.damage_every == args.damage_every - 1:
                hurt = damage_newest(run, rng)
                damaged += hurt is not None
            kills.append({"run": run.name, "mode": mode, "last_step_done": before,
                          "latest_checkpoint": (checkpoints.step_folders(run) or [None])[-1],
                          "where": where, "damaged": hurt})
            k = kills[-1]
            print(f"kill {len(kills):2d} ({run.name}, {mode:8s}): after step "
                  f"{k['last_step_done']}, latest checkpoint {k['latest_checkpoint']}, "
                  f"{where}" + (f"; damaged {hurt}" if hurt else ""))
        problems = compare(run, ref_states)
        runs.append({"run": run.name, "kills": n_kills, "damaged": damaged,
                     "fallbacks": fallbacks, "problems": problems})
        print(f"{run.name}: {n_kills} kills, {damaged} steps damaged, {fallbacks} resumes fell "
              f"back, {'bitwise equal to the reference' if not problems else problems}")

    wall = time.monotonic() - t0
    by_mode = Counter(k["mode"] for k in kills)
    by_where = Counter(k["where"] for k in kills)
    ok = all(not r["problems"] for r in runs)
    print("\nsummary")
    print(f"  kills: {len(kills)} ({', '.join(f'{m} {n}' for m, n in sorted(by_mode.items()))});"
          f" {missed} more came after the process had finished")
    for where, n in sorted(by_where.items()):
        print(f"  {where}: {n}")
    print(f"  resumes: {len(kills)}; runs: {len(runs)}; steps damaged on purpose: "
          f"{sum(r['damaged'] for r in runs)}, resumes that fell back: "
          f"{sum(r['fallbacks'] for r in runs)}")
    print(f"  every checkpoint of every run bitwise equal to the reference: {ok}")
    print(f"  wall time {wall:.0f} s; work folder {work}")
    print(dataclasses.asdict(cfg.train))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
