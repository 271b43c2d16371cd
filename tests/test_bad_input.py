"""Every bad input is one line on stderr naming the field or path, exit code 2, no traceback,
and nothing written: checked before anything trains or compiles."""

import subprocess
import sys

import pytest

CASES = [  # (argv, what the one line must name)
    (["multiseed", "--eval-sequences", "0"], "--eval-sequences"),
    (["multiseed", "--eval-lengths=0,16"], "eval lengths"),
    (["multiseed", "--eval-lengths=-3,16"], "eval lengths"),
    (["multiseed", "--K", "4", "--eval-lengths", "3,16"], "eval lengths"),
    (["multiseed", "--eval-lengths", ","], "--eval-lengths"),
    (["multiseed", "--encodings", ","], "--encodings"),
    (["multiseed", "--devices=-1"], "--devices"),
    (["multiseed", "--encodings", "ape", "--eval-lengths", "12,80"], "model.enc.size"),
    (["multiseed", "--d", "15", "--encodings", "rope"], "model.d"),
    (["multiseed", "--d", "30", "--heads", "4"], "model.d"),
    (["multiseed", "--K", "8", "--train-lengths", "8,16"], "task.opts.offset"),
    (["multiseed", "--encodings", "nosuch"], "model.encoding"),
    (["transformer", "--lr=-1e-3"], "train.lr"),
    (["transformer", "--lr", "nan"], "train.lr"),
    (["multiseed", "--out", "a_file"], "--out"),  # a file where a folder is needed
    (["dynamics", "/nonexistent/run"], "/nonexistent/run"),
    (["multiseed", "--steps", "x"], "--steps"),
    # --out is checked before the analysis, the measuring or the bootstraps, not after them
    (["dynamics", "/nonexistent/run", "--out", "a_file"], "--out"),
    (["contract-report", "ckroot", "--out", "a_file"], "--out"),
    (["realizability-report", "nowhere", "--out", "a_file"], "--out"),
]


@pytest.mark.parametrize("argv, field", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, argv, field):
    ck = tmp_path / "ck"
    (tmp_path / "a_file").write_text("not a folder")
    (tmp_path / "ckroot" / "contract").mkdir(parents=True)  # a contract-train --ckpt-root
    extra = ["--ckpt-root", str(ck)] if argv[0] in ("multiseed", "transformer") else []
    proc = subprocess.run([sys.executable, "-m", "lgjax", *argv, *extra],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert field in lines[0], lines[0]
    assert not ck.exists() and not (tmp_path / "results").exists()
