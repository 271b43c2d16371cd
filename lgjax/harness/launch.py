"""`lgjax launch`: run one lgjax command as a job of several processes on this machine.

Each process is a simulated host with its own CPU devices; together they form one
jax.distributed job with the coordinator on 127.0.0.1 (a free port), exactly as on a cluster
where the cluster's launcher starts the same command on every host. Process 0's output is
shown; the others' goes to log files. When any process fails the others are stopped and the
job fails with one line naming the process, its exit status and its log. SIGTERM and SIGUSR1 to
the launcher are passed on to every process (lgjax.preemption: each saves and exits 75), and
the launcher exits 75 once all have.
Command: lgjax launch --processes 2 --devices-per-process 2 -- multiseed --seeds 8
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from lgjax.config import ConfigError
from lgjax.errors import Preempted

POLL_SECONDS = 0.2
STOP_SECONDS = 2.0  # SIGTERM first, SIGKILL after this: a process blocked in a collective
# does not end on SIGTERM (jax.distributed catches it to note a preemption)


@dataclass(frozen=True)
class Config:
    processes: int = 2  # processes of the job (simulated hosts on this machine)
    devices_per_process: int = 2  # CPU devices each process sees
    command: tuple[str, ...] = field(default=(), metadata={"rest": True})  # lgjax command, after --


def check(cfg: Config) -> None:
    from lgjax.harness.commands import commands

    if cfg.processes < 1 or cfg.devices_per_process < 1:
        raise ConfigError("--processes/--devices-per-process: must be >= 1")
    if not cfg.command or cfg.command[0] not in commands() or cfg.command[0] == "launch":
        raise ConfigError("command: give the lgjax command to run after --, e.g. "
                          "lgjax launch --processes 2 -- multiseed --seeds 8")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_env(cfg: Config, index: int, port: int) -> dict[str, str]:
    from lgjax.runtime import FORCE_COUNT  # (jax with it: not at import, `--help` stays fast)

    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith(FORCE_COUNT)]
    return {**os.environ, "LGJAX_DISTRIBUTED": "1", "JAX_PLATFORMS": "cpu",
            "XLA_FLAGS": " ".join([*flags, f"{FORCE_COUNT}={cfg.devices_per_process}"]),
            "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}",
            "JAX_NUM_PROCESSES": str(cfg.processes), "JAX_PROCESS_ID": str(index)}


def last_line(log: Path) -> str:
    """The log's last line that is not gloo's connection chatter."""
    lines = [x for x in log.read_text(errors="replace").splitlines()
             if x.strip() and "peer ranks" not in x]
    return lines[-1].strip()[:200] if lines else "(no output)"


def stop(procs: list[subprocess.Popen]) -> None:
    alive = [p for p in procs if p.poll() is None]
    for p in alive:
        p.terminate()
    deadline = time.monotonic() + STOP_SECONDS
    for p in alive:
        try:
            p.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def wait_all(procs: list[subprocess.Popen], logs: list[Path | None]) -> tuple[str, int] | None:
    """None once every process has succeeded; at the first failure, after stopping the others,
    one line naming the process, its exit status and its log, and that exit status. A process
    that stopped on a signal with its checkpoint saved (EXIT_PREEMPTED) is no failure: the
    others stop at the same chunk boundary and are waited for, not killed mid-save."""
    while True:
        codes = [p.poll() for p in procs]
        if None not in codes and Preempted.exit_code in codes and set(codes) <= {
                0, Preempted.exit_code}:
            return ("every process stopped on a signal with its checkpoint committed; rerun "
                    "with --resume to continue", Preempted.exit_code)
        failed = next((i for i, c in enumerate(codes)
                       if c not in (None, 0, Preempted.exit_code)), None)
        if failed is not None:
            stop(procs)
            code, log = codes[failed], logs[failed]
            how = f"was killed by {signal.Signals(-code).name}" if code < 0 else \
                f"exited with code {code}"
            where = "output above" if log is None else f"log {log}: {last_line(log)}"
            return f"process {failed} of {len(procs)} {how}; stopped the others ({where})", code
        if all(c == 0 for c in codes):
            return None
        time.sleep(POLL_SECONDS)


def main(cfg: Config) -> int:
    """Run the job; 0 when every process succeeded, else (after one line on stderr) 2 when the
    failing process refused its input (exit 2, as the command alone), 1 otherwise."""
    check(cfg)
    port = free_port()
    log_dir = Path(tempfile.mkdtemp(prefix="lgjax-launch-"))
    logs = [None] + [log_dir / f"process-{i}.log" for i in range(1, cfg.processes)]
    argv = [sys.executable, "-m", "lgjax", *cfg.command]
    procs = []  # filled as they start, so that all can be stopped

    def forward(signum, _frame):  # a scheduler's stop notice: every process saves and stops
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    from lgjax.preemption import STOP_SIGNALS

    for sig in STOP_SIGNALS:
        signal.signal(sig, forward)
    try:
        for i, log in enumerate(logs):  # no log: process 0 shares our stdout/stderr
            with contextlib.nullcontext() if log is None else log.open("w") as out:
                procs.append(subprocess.Popen(argv, env=process_env(cfg, i, port), stdout=out,
                                              stderr=None if out is None else subprocess.STDOUT))
        print(f"lgjax launch: {cfg.processes} processes x {cfg.devices_per_process} devices, "
              f"coordinator 127.0.0.1:{port}, pids {' '.join(str(p.pid) for p in procs)}, "
              f"logs of processes 1.. in {log_dir}", file=sys.stderr, flush=True)
        failure = wait_all(procs, logs)
        if failure is not None:
            print(f"lgjax launch: {failure[0]}", file=sys.stderr)
            # 2: the command refused its input, as alone; EXIT_PREEMPTED: stopped and saved
            return failure[1] if failure[1] in (2, Preempted.exit_code) else 1
    except KeyboardInterrupt:
        stop(procs)
        print("lgjax launch: interrupted; stopped every process", file=sys.stderr)
        return 130
    finally:
        stop(procs)
    shutil.rmtree(log_dir, ignore_errors=True)  # kept only when the job failed
    return 0
