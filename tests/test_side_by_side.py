"""Runs side by side in one process (lgjax.harness.side_by_side), on two CPU devices in a
subprocess: the same results and checkpoints as one after another, each lane on its own device,
a twin waits for its twin, a failure in one lane stops the other at a boundary with its
checkpoint (what --resume continues from: tests/test_preemption.py), and a stop signal stops
both there, the command exiting 75, and --resume finishes them as one after another."""

from __future__ import annotations

import json
import subprocess
import sys

import jax
import numpy as np
from conftest import xla_flags

from lgjax.runs import open_run

TWO_DEVICES = r"""
import json, os, signal, sys, threading, time
from pathlib import Path

from lgjax import devices, preemption
from lgjax.checkpoints import driver
from lgjax.harness import side_by_side, study
from lgjax.harness.cli import main
from lgjax.config import ConfigError
from lgjax.studies.contract import train as contract

root = Path(sys.argv[1])
ARGS = ["multiseed", "--encodings", "alibi,rope", "--seeds", "1", "--steps", "6", "--batch",
        "8", "--d", "8", "--eval-lengths", "12,16", "--eval-sequences", "8", "--no-progress"]
where = lambda name: ["--ckpt-root", str(root / name), "--out", str(root / name / "out")]

# the contract matrix's cells: 5 seeds do not split over 2 devices, so one device each
runs = contract.runs(contract.Config())
assert side_by_side.lanes(runs, 0, 0) == 2
assert side_by_side.lanes(runs, 1, 0) == 1 and side_by_side.lanes(runs, 0, 1) == 1

# each lane trains on its own device
seen, real_train_one = {}, study.train_one
def recording(rc, run_dir, opts, label):
    seen[run_dir.name] = (threading.current_thread().name, devices.local_devices()[0].id)
    return real_train_one(rc, run_dir, opts, label)
study.train_one = recording
assert main(ARGS + where("side")) == 0
assert len({t for t, _ in seen.values()}) == 2 and len({d for _, d in seen.values()}) == 2, seen
study.train_one = real_train_one
assert main(ARGS + where("serial") + ["--side-by-side", "1"]) == 0

# a twin waits for its twin; another run goes beside it
class Config:
    def __init__(self, key): self.key = key
    def to_json(self): return self.key
log, shares = [], set()
def work(name):
    shares.add(devices.local_devices()[0].id)
    log.append(("start", name)); time.sleep(0.5); log.append(("end", name))
    return name.upper()
out = side_by_side.train_all({"a": Config("x"), "b": Config("x"), "c": Config("y")}, 2, work)
assert list(out.items()) == [("a", "A"), ("b", "B"), ("c", "C")], out
assert log.index(("start", "b")) > log.index(("end", "a")), log
assert log.index(("start", "c")) < log.index(("end", "a")), log
assert shares == {0, 1}, shares

# alibi fails once rope passed step 2; rope stops at that boundary, its checkpoint saved
passed = threading.Event()
def failing(rc, run_dir, opts, label):
    if run_dir.name == "alibi":
        assert passed.wait(120)
        raise ConfigError("--boom: a failure in one lane")
    return real_train_one(rc, run_dir, opts, label)
real_train_run = driver.train_run
def calling_at_boundaries(after):  # driver.train_run, with after(step) at each chunk boundary
    def train_run(cfg, path, resume=False, on_chunk=None, **kw):
        def tick(step, states, loss_S):
            on_chunk(step, states, loss_S)
            after(step)
        return real_train_run(cfg, path, resume=resume, on_chunk=tick, **kw)
    return train_run
def wait_until(done):  # polled for up to 120 s
    for _ in range(1200):
        if done(): return
        time.sleep(0.1)
def wait_for_the_halt(step):
    if step == 2:
        passed.set()
        wait_until(preemption.agreed)  # until the failure halts this loop
study.train_one, driver.train_run = failing, calling_at_boundaries(wait_for_the_halt)
assert main(ARGS + where("failed")) == 2
study.train_one, driver.train_run = real_train_one, real_train_run
rope = root / "failed" / "multiseed-K1" / "rope"
steps = sorted(int(p.name) for p in rope.iterdir() if p.name.isdigit())
assert steps == [0, 1, 2], steps
assert not (root / "failed" / "multiseed-K1" / "alibi").exists()
assert preemption.agreed() is None  # the halt ends with the command

# a stop signal once both lanes passed step 2: each stops at a chunk boundary with its checkpoint
# there, the command exits 75, and --resume ends as one after another did
both = threading.Barrier(2, timeout=120)
def stop_once_both_passed(step):
    if step != 2:
        return
    if both.wait() == 0:  # one of the two sends it
        os.kill(os.getpid(), signal.SIGTERM)
    # the handler runs in the main thread, at its next bytecode: the lanes wait until it ran
    # (in that moment a lane of these tiny runs could reach its last step, and finish)
    wait_until(preemption.requested)
driver.train_run = calling_at_boundaries(stop_once_both_passed)
assert main(ARGS + where("stopped")) == 75
driver.train_run = real_train_run
preemption.reset()
for scheme in ("alibi", "rope"):
    run = root / "stopped" / "multiseed-K1" / scheme
    steps = sorted(int(p.name) for p in run.iterdir() if p.name.isdigit())
    assert 2 <= steps[-1] < 6, (scheme, steps)
assert not (root / "stopped" / "out" / "results.json").exists()
assert main(ARGS + where("stopped") + ["--resume"]) == 0
print("OK")
"""


def _measured(path):
    """The results: times, folders and how the runs ran (side by side, resumed) left out."""
    results = json.loads((path / "out" / "results.json").read_text())
    for key in ("side_by_side", "resume", "out", "ckpt_root"):
        del results["config"]["run"][key]
    return {k: v for k, v in results.items() if not k.endswith("seconds") and k != "run_dirs"}


def test_runs_side_by_side_train_and_stop_as_one_after_another(tmp_path):
    proc = subprocess.run([sys.executable, "-c", TWO_DEVICES, str(tmp_path)], env=xla_flags(2),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr[-3000:]
    failure = [line for line in proc.stderr.splitlines() if "--boom" in line]
    assert failure == ["lgjax multiseed: configuration error: --boom: a failure in one lane"]
    assert jax.device_count() == 1
    assert _measured(tmp_path / "side") == _measured(tmp_path / "serial")
    assert sum("lgjax multiseed: stopped by SIGTERM at step " in line
               for line in proc.stderr.splitlines()) == 1, proc.stderr[-3000:]
    assert _measured(tmp_path / "stopped") == _measured(tmp_path / "serial")
    for way, scheme, steps in [("side", "alibi", (2, 6)), ("side", "rope", (2, 6)),
                               ("failed", "rope", (2,)), ("stopped", "alibi", (6,)),
                               ("stopped", "rope", (6,))]:  # every leaf, bit for bit
        a, b = (open_run(tmp_path / w / "multiseed-K1" / scheme)
                for w in (way, "serial"))
        for step in steps:
            jax.tree.map(np.testing.assert_array_equal, a.restore(step), b.restore(step))
        a.close()
        b.close()
