"""One writer per run directory: a second process is refused, a stale lock is taken over."""

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading

import pytest

from lgjax import checkpoints
from lgjax.checkpoints import driver
from lgjax.checkpoints.lock import LOCK_FILE, RunDirLock, RunDirLocked
from lgjax.config import ConfigError
from tests.conftest import tiny

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOLDER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from tests.conftest import tiny
    from lgjax import checkpoints
    with checkpoints.RunDir({run!r}, tiny(), resume=True):
        print("LOCKED", flush=True)
        sys.stdin.readline()
    print("RELEASED", flush=True)
""")


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(proc.stdout)


def _write_lock(run_dir, **holder):
    run_dir.mkdir(parents=True, exist_ok=True)
    base = {"pid": _dead_pid(), "host": socket.gethostname(), "start": None, "time": 0,
            "token": "other"}
    (run_dir / LOCK_FILE).write_text(json.dumps({**base, **holder}))


def test_second_writer_process_is_refused_until_the_first_closes(tmp_path):
    run = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER.format(root=ROOT, run=str(run))],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "LOCKED"
        for attempt in (lambda: checkpoints.RunDir(run, tiny(), resume=True),
                        lambda: checkpoints.check_run_dir(run, tiny(), resume=True),
                        lambda: driver.train_run(tiny(), run, resume=True)):
            with pytest.raises(RunDirLocked) as err:
                attempt()
            msg = str(err.value)
            assert "\n" not in msg and str(run) in msg and f"pid {holder.pid} " in msg
            assert socket.gethostname() in msg and isinstance(err.value, ConfigError)
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "RELEASED"
    finally:
        holder.kill()
        holder.wait()
    assert not (run / LOCK_FILE).exists()
    with checkpoints.RunDir(run, tiny(), resume=True):
        assert json.loads((run / LOCK_FILE).read_text())["pid"] == os.getpid()
    assert not (run / LOCK_FILE).exists()


@pytest.mark.parametrize("holder", [{}, {"pid": os.getpid(), "start": "0"}],
                         ids=["dead_pid", "reused_pid"])
def test_stale_lock_is_taken_over_with_one_line(tmp_path, capsys, holder):
    _write_lock(tmp_path / "run", **holder)
    with checkpoints.RunDir(tmp_path / "run", tiny()):
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "took over the stale lock" in err[0] and str(tmp_path) in err[0]
        assert json.loads((tmp_path / "run" / LOCK_FILE).read_text())["token"] != "other"


@pytest.mark.parametrize("holder", [{"host": "elsewhere"}, {"pid": os.getpid()}],
                         ids=["other_host", "live_pid"])
def test_lock_that_cannot_be_proven_stale_is_respected(tmp_path, holder):
    _write_lock(tmp_path / "run", **holder)
    with pytest.raises(RunDirLocked, match="locked by pid"):
        checkpoints.RunDir(tmp_path / "run", tiny())
    assert (tmp_path / "run" / LOCK_FILE).exists()


def test_unreadable_lock_is_refused_naming_the_file(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / LOCK_FILE).write_text("{garbage")
    with pytest.raises(RunDirLocked, match=f"delete {tmp_path / 'run' / LOCK_FILE}"):
        checkpoints.RunDir(tmp_path / "run", tiny())


def test_lock_released_when_the_run_ends_in_an_exception(tmp_path):
    with pytest.raises(KeyError), checkpoints.RunDir(tmp_path / "run", tiny()):
        assert (tmp_path / "run" / LOCK_FILE).exists()
        raise KeyError("boom")
    assert not (tmp_path / "run" / LOCK_FILE).exists()


def test_refused_open_releases_the_lock(tmp_path):
    with checkpoints.RunDir(tmp_path / "run", tiny()):
        pass
    other = tiny(steps=7)
    with pytest.raises(ConfigError, match="different config"):
        checkpoints.RunDir(tmp_path / "run", other)
    assert not (tmp_path / "run" / LOCK_FILE).exists()


@pytest.mark.parametrize("stale", [False, True])
def test_concurrent_acquirers_exactly_one_wins(tmp_path, stale):
    if stale:
        _write_lock(tmp_path)
    locks = [RunDirLock(tmp_path) for _ in range(8)]
    barrier = threading.Barrier(len(locks))
    outcome = []

    def grab(lock):
        barrier.wait()
        try:
            lock.acquire()
            outcome.append("won")
        except RunDirLocked:
            outcome.append("refused")

    threads = [threading.Thread(target=grab, args=(lock,)) for lock in locks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcome) == ["refused"] * 7 + ["won"]
    winner = next(lock for lock in locks if lock.token is not None)
    assert json.loads((tmp_path / LOCK_FILE).read_text())["token"] == winner.token
    winner.release()
    assert not (tmp_path / LOCK_FILE).exists()
