"""Every bad input is one line on stderr naming the field or path, exit code 2, no traceback,
and nothing written: checked before anything trains or compiles."""

import json
import os
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
    (["transformer", "--lr=-1e-3"], "--lr"),
    (["transformer", "--lr", "nan"], "--lr"),
    (["multiseed", "--out", "a_file"], "--out"),  # a file where a folder is needed
    (["dynamics", "/nonexistent/run"], "/nonexistent/run"),
    (["multiseed", "--steps", "x"], "--steps"),
    # --out is checked before the analysis, the measuring or the bootstraps, not after them
    (["dynamics", "/nonexistent/run", "--out", "a_file"], "--out"),
    (["contract-report", "ckroot", "--out", "a_file"], "--out"),
    (["realizability-report", "nowhere", "--out", "a_file"], "--out"),
    # randomized positions must cover every evaluated position
    (["multiseed", "--random-positions", "40"], "--random-positions"),
    (["multiseed", "--random-positions=-1"], "--random-positions"),
    (["realizability-train", "--random-positions", "60", "--tasks", "prev", "--ckpt-root", "ck"],
     "--random-positions"),
]


def bad_input_case(tmp_path, argv):
    """argv with its --ckpt-root, in a folder holding what the cases name (a file, a root)."""
    (tmp_path / "a_file").write_text("not a folder")
    (tmp_path / "ckroot" / "contract").mkdir(parents=True)  # a contract-train --ckpt-root
    extra = ["--ckpt-root", "ck"] if argv[0] in ("multiseed", "transformer") else []
    return [*argv, *extra]


@pytest.mark.parametrize("argv, field", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, monkeypatch, argv,
                                                         field):
    monkeypatch.chdir(tmp_path)  # the cases' relative paths, and the default --out, are here
    line = one_line_exit_2(bad_input_case(tmp_path, argv), capsys)
    assert field in line, line
    assert not (tmp_path / "ck").exists() and not (tmp_path / "results").exists()


# a usage error and a config error also in a process of its own, as a user runs them: nothing
# that JAX or Python prints at start or at exit may add a line
PROCESS_CASES = [c for c in CASES if c[0] in (["multiseed", "--steps", "x"],
                                              ["multiseed", "--d", "15", "--encodings", "rope"])]


@pytest.mark.parametrize("argv, field", PROCESS_CASES,
                         ids=[" ".join(c[0]) for c in PROCESS_CASES])
def test_bad_input_in_a_process_of_its_own_is_one_line_exit_2(tmp_path, argv, field):
    proc = subprocess.run([sys.executable, "-m", "lgjax", *bad_input_case(tmp_path, argv)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert field in lines[0], lines[0]
    assert not (tmp_path / "ck").exists() and not (tmp_path / "results").exists()


# ---- in-process (the cli's main): each cause, before anything trains, compiles or is written

def one_line_exit_2(argv, capsys, code=2) -> str:
    from lgjax.harness.cli import main

    try:
        rc = main(argv)
    except SystemExit as stop:  # a usage error (argparse) exits from inside
        rc = stop.code
    err = capsys.readouterr().err
    assert rc == code, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def nothing_written(tmp_path):
    return not any(p.name in ("ck", "out") for p in tmp_path.iterdir())


RANGE_CASES = [  # (argv, the flag the line names): every number within its declared range
    (["realizability-train", "--rope-scale", "nan"], "--rope-scale"),
    (["realizability-alpha", "--lr", "nan"], "--lr"),
    (["realizability-alpha", "--tie=-1"], "--tie"),
    (["realizability-alpha", "--rcond", "nan"], "--rcond"),
    (["contract-train", "--learnable", "nan"], "--learnable"),
    (["contract-train", "--probe-sequences", "0"], "--probe-sequences"),
    (["realizability-report", "r.json", "--resamples=-5"], "--resamples"),
    (["realizability-report", "r.json", "--resamples", "0"], "--resamples"),
    (["realizability-report", "r.json", "--learnable", "nan"], "--learnable"),
    (["contract-report", "ck", "--eval-sequences", "0"], "--eval-sequences"),
    (["multiseed", "--steps", "99999999999999999999"], "--steps"),
]
SMALL = {  # so that a check that fails to refuse costs seconds, not a published-scale run
    "multiseed": ["--encodings", "rope", "--seeds", "1", "--steps", "2", "--batch", "8", "--d",
                  "8", "--vocab", "6", "--train-lengths", "4,6", "--eval-lengths", "6",
                  "--eval-sequences", "16", "--no-progress"],
    "transformer": ["--encodings", "rope", "--seeds", "1", "--steps", "2", "--batch", "8", "--d",
                    "16", "--heads", "2", "--eval-lengths", "12", "--eval-sequences", "16",
                    "--no-progress"],
    "realizability-train": ["--tiers", "1L1H", "--encodings", "rope", "--tasks", "prev",
                            "--test-lengths", "30", "--seeds", "1", "--steps", "2", "--batch",
                            "8", "--eval-sequences", "16", "--d", "8", "--chunk", "2",
                            "--ckpt-every", "2", "--no-progress"],
    "realizability-alpha": ["--encodings", "rope", "--tasks", "prev", "--lengths", "30",
                            "--focus-length", "30", "--steps", "5", "--sweep-nums", "16",
                            "--sweep-bases", "10000", "--sweep-scales", "1"],
    "contract-train": ["--tasks", "offset_copy", "--schemes", "rope", "--seeds", "1", "--steps",
                       "2", "--batch", "8", "--eval-sequences", "16", "--d", "16", "--heads", "2",
                       "--layers", "1", "--train-lengths", "8,16", "--extend", "24", "--shifts",
                       "4", "--no-progress"],
}


def small(argv: list[str]) -> list[str]:
    return [argv[0], *SMALL.get(argv[0], []), *argv[1:]]


@pytest.mark.parametrize("argv, flag", RANGE_CASES, ids=[" ".join(c[0]) for c in RANGE_CASES])
def test_a_number_outside_its_range_is_refused_up_front(tmp_path, capsys, argv, flag):
    trains = argv[0] not in ("realizability-alpha", "realizability-report", "contract-report")
    where = ["--out", str(tmp_path / "out")] + (["--ckpt-root", str(tmp_path / "ck")]
                                                 if trains else [])
    line = one_line_exit_2([*small(argv), *where], capsys)
    assert flag in line and "must be" in line, line
    assert nothing_written(tmp_path)


LIST_CASES = [  # an empty list is never "all" or "none"; a list names nothing twice
    (["transformer", "--profile-lengths", ""], "--profile-lengths"),
    (["reproduce", "--quick", "--only", ""], "--only"),
    (["multiseed", "--encodings", "rope,rope"], "--encodings"),
    (["realizability-train", "--test-lengths", "30,30"], "--test-lengths"),
]


@pytest.mark.parametrize("argv, flag", LIST_CASES, ids=[" ".join(c[0]) for c in LIST_CASES])
def test_an_empty_or_repeating_list_is_refused_up_front(tmp_path, capsys, argv, flag):
    line = one_line_exit_2([*small(argv), "--out", str(tmp_path / "out"), "--ckpt-root",
                            str(tmp_path / "ck")], capsys)
    assert flag in line, line
    assert nothing_written(tmp_path)


REPRODUCE_CASES = [  # `lgjax reproduce`: every step's checks before its first step starts
    (["reproduce", "all", "--quick", "--jobs=-1"], "--jobs"),
    (["reproduce", "all", "--quick", "--devices=-3"], "--devices"),
    (["reproduce", "contract", "--quick", "--tiers", "2L4H"], "--tiers"),
    # a run directory that cannot be made: the first study's first run names it, before any
    # worker starts (workers used to start, fail and print their own lines)
    (["reproduce", "all", "--quick", "--ckpt-root", "a_file/ck"], "a_file"),
]


@pytest.mark.parametrize("argv, field", REPRODUCE_CASES,
                         ids=[" ".join(c[0]) for c in REPRODUCE_CASES])
def test_a_reproduction_checks_every_step_before_any_starts(tmp_path, capsys, monkeypatch,
                                                            argv, field):
    monkeypatch.chdir(tmp_path)
    line = one_line_exit_2([*bad_input_case(tmp_path, argv), "--out", "out"], capsys)
    assert field in line, line
    assert nothing_written(tmp_path)


def test_a_reproduction_refuses_a_damaged_results_file_it_would_read_before_training(
        tmp_path, capsys):
    """--only reruns one experiment and reads the others' files: a truncated one is one line
    naming it, before the rerun trains (it used to train, then end in a traceback)."""
    damaged = tmp_path / "out" / "linear" / "results.json"
    damaged.parent.mkdir(parents=True)
    damaged.write_text('{"experiment": "linear", "acc')
    line = one_line_exit_2(["reproduce", "implicit-bias", "--quick", "--only", "shift",
                            "--out", str(tmp_path / "out"), "--ckpt-root",
                            str(tmp_path / "ck")], capsys)
    assert str(damaged) in line and "not valid JSON" in line, line
    assert not (tmp_path / "ck").exists() and not (tmp_path / "out" / "shift").exists()


NAN_PLUGIN = """
import jax.numpy as jnp
import lgjax
from lgjax.encodings import Encoding, bias_kernel, float_dtype

def nan_bias(params, dist, cfg):  # NaN logits: every run diverges at its first step
    nan = jnp.asarray(dist, float_dtype()) * jnp.nan
    return jnp.repeat(nan[..., None], cfg.heads, axis=-1)

lgjax.register_encoding("nan_bias", Encoding("bias", bias_kernel(nan_bias), bias=nan_bias))
"""


def test_a_diverging_run_is_one_line_also_where_it_writes_tensorboard_events(tmp_path):
    """tensorboardX (a test extra) warned on stderr for every NaN loss it recorded, before the
    run's own line; the NaN is still recorded, the warning is not printed. In a process of its
    own: pytest captures logging in this one."""
    (tmp_path / "nan_bias_plugin.py").write_text(NAN_PLUGIN)
    argv = [*small(["multiseed"]), "--plugin", "nan_bias_plugin", "--encodings", "nan_bias",
            "--out", "out", "--ckpt-root", "ck"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
        str(tmp_path), os.environ.get("PYTHONPATH", "")]))}
    proc = subprocess.run([sys.executable, "-m", "lgjax", *argv], capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=300)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "training diverged" in lines[0] and "seed 0" in lines[0], lines[0]
    assert list((tmp_path / "ck").glob("*/nan_bias/tb/*/events*"))  # the events were written


def test_a_results_file_that_is_damaged_or_of_another_command_is_one_line(tmp_path, capsys):
    """Both reports name the file: truncated, empty, not an object, another command's, partial,
    a program or row lacking a field; and a heatmap length that was not measured."""
    program = {"tier": "1L1H", "encoding": "rope", "tasks": ["prev"], "seeds": [0],
               "lengths": [30], "lg": [[[1.0]]], "acc_all": [[[1.0]]], "train_acc": [[1.0]],
               "train_seconds": 1.0}
    train = {"experiment": "realizability-train", "reduced": True, "config": {"L0": 20},
             "programs": [program]}
    files = {"trunc": '{"experiment": "realizability-train", "prog', "empty": "", "list": "[]",
             "pair": "[1, 2]", "multiseed": json.dumps({"experiment": "multiseed"}),
             "noprog": json.dumps({k: v for k, v in train.items() if k != "programs"}),
             "noenc": json.dumps(train | {"programs": [
                 {k: v for k, v in program.items() if k != "encoding"}]}),
             "train": json.dumps(train),
             "partial": json.dumps({"tasks": ["offset_copy"], "schemes": ["rope"]})}
    for name, text in files.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(text)
    at = lambda name: str(tmp_path / name / "results.json")
    out = ["--out", str(tmp_path / "out")]
    for name in ("trunc", "empty", "list", "multiseed", "noprog", "noenc"):
        assert at(name) in one_line_exit_2(["realizability-report", at(name), *out], capsys)
    for name in ("trunc", "list", "multiseed", "train"):  # --alpha: not an alpha result
        line = one_line_exit_2(["realizability-report", at("train"), "--alpha", at(name),
                                "--heatmap-length", "30", *out], capsys)
        assert "--alpha" in line and at(name) in line, line
    line = one_line_exit_2(["realizability-report", at("train"), "--heatmap-length", "999",
                            *out], capsys)
    assert "--heatmap-length" in line and "[30]" in line, line
    for name in ("trunc", "empty", "multiseed", "pair", "partial"):
        assert at(name) in one_line_exit_2(["contract-report", str(tmp_path / name), *out],
                                           capsys)
    assert not (tmp_path / "out").exists()


def test_an_out_that_cannot_be_written_names_the_flag(tmp_path, capsys):
    """contract-report from a results file, and curves given a folder for its figure: --out
    is named (it was only the path, from the OS error at the write)."""
    from lgjax.studies.contract.report import RESULT_KEYS

    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "results.json").write_text(json.dumps(
        {"experiment": "contract-train"} | dict.fromkeys(RESULT_KEYS, [])))
    (tmp_path / "a_file").write_text("not a folder")
    for out in ("/proc/lgjax-out", str(tmp_path / "a_file" / "sub")):
        line = one_line_exit_2(["contract-report", str(tmp_path / "res"), "--out", out], capsys)
        assert "--out" in line, line
    (tmp_path / "fig.png").mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.jsonl").write_text(
        '{"step": 1, "seed": 0, "loss": 1.0, "param_norm": 1.0, "diverged": false}\n')
    line = one_line_exit_2(["curves", str(tmp_path / "run"), "--out", str(tmp_path / "fig.png")],
                           capsys)
    assert "--out" in line and "is a folder" in line, line


def test_contract_report_checks_its_options_before_restoring_a_cell(tmp_path, capsys,
                                                                    monkeypatch):
    from lgjax.studies.contract import train as contract_train

    cfg = contract_train.Config(tasks=("offset_copy",), schemes=("rope",))
    for name, rc in contract_train.runs(cfg).items():  # a finished cell, as far as names go
        (tmp_path / "ck" / name / str(rc.train.steps)).mkdir(parents=True)
        (tmp_path / "ck" / name / "config.json").write_text(rc.to_json())
    from lgjax.studies.contract import report as contract_report

    monkeypatch.setattr(contract_report, "open_run", lambda *a: pytest.fail("restored a cell"))
    for flag, value in (("--extend", "8"), ("--shifts", "99")):
        line = one_line_exit_2(["contract-report", str(tmp_path / "ck"), flag, value, "--out",
                                str(tmp_path / "out")], capsys)
        assert flag in line, line


TINY = small(["multiseed"])


FOLDER_CASES = {  # --out is probed by making a file (os.access says yes to root on /proc);
    # orbax cannot take a non-UTF-8 --ckpt-root; a run name stays inside --ckpt-root
    "proc-out": ([*TINY, "--ckpt-root", "{tmp}/ck", "--out", "/proc/lgjax_out"], "--out"),
    "proc-out-alpha": ([*small(["realizability-alpha"]), "--out", "/proc/lgjax_a"], "--out"),
    "non-utf8-root": ([*TINY, "--out", "{tmp}/out", "--ckpt-root", "{tmp}/ck\udcff"],
                      "--ckpt-root"),
    "climbing-name": ([*TINY, "--ckpt-root", "{tmp}/ck", "--out", "{tmp}/out", "--run-name",
                       "../../x"], "--run-name"),
    "absolute-name": ([*TINY, "--ckpt-root", "{tmp}/ck", "--out", "{tmp}/out", "--run-name",
                       "{tmp}/abs"], "--run-name"),
}


@pytest.mark.parametrize("case", FOLDER_CASES)
def test_a_folder_that_cannot_be_written_or_left_is_refused_before_training(tmp_path, capsys,
                                                                            case):
    argv, flag = FOLDER_CASES[case]
    assert flag in one_line_exit_2([a.format(tmp=tmp_path) for a in argv], capsys)
    assert list(tmp_path.iterdir()) == []


def test_a_batch_beyond_the_memory_is_refused_and_an_allocation_failure_is_one_line(
        tmp_path, capsys, monkeypatch):
    from lgjax import devices

    monkeypatch.setattr(devices, "free_bytes", lambda: 16 * 2**30)  # any machine: 16 GiB free
    where = ["--ckpt-root", str(tmp_path / "ck"), "--out", str(tmp_path / "out")]
    line = one_line_exit_2([*TINY, *where, "--batch", "100000000"], capsys)
    assert "--batch" in line and "GiB" in line, line
    assert list(tmp_path.iterdir()) == []
    from lgjax.harness import study

    def exhausted(module, cfg):  # what XLA raises when an allocation fails mid-run
        raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 36800004744 bytes.")

    monkeypatch.setattr(study, "run_study", exhausted)
    line = one_line_exit_2([*TINY, *where], capsys)
    assert "out of memory" in line and "--batch" in line, line


def test_a_job_whose_port_is_taken_or_whose_peer_is_gone_says_so_in_one_line(
        tmp_path, capsys, monkeypatch):
    import socket

    from lgjax import runtime
    from lgjax.harness import study

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        monkeypatch.setenv("LGJAX_DISTRIBUTED", "1")
        monkeypatch.setenv("JAX_COORDINATOR_ADDRESS", f"127.0.0.1:{port}")
        monkeypatch.setenv("JAX_NUM_PROCESSES", "2")
        monkeypatch.setenv("JAX_PROCESS_ID", "0")
        monkeypatch.setattr(runtime.jax.config, "update", lambda *a: None)  # stays one process
        monkeypatch.setattr(runtime.jax.distributed, "initialize",
                            lambda **kw: pytest.fail("initialize reached: it segfaults"))
        line = one_line_exit_2([*TINY, "--out", str(tmp_path / "o")], capsys)
        assert f"port {port} is already in use" in line, line

    def peer_gone(module, cfg):  # process 0 of a job whose process 1 was killed
        raise RuntimeError("UNKNOWN: Gloo AllGather failed: [pair.cc:538] Read error "
                           "[127.0.0.1]:37512: Connection reset by peer")

    monkeypatch.setattr(runtime, "maybe_initialize_distributed", lambda: None)
    monkeypatch.setattr(study, "run_study", peer_gone)
    line = one_line_exit_2([*TINY, "--out", str(tmp_path / "o")], capsys, code=1)
    assert "lost contact with another process" in line, line


def test_contract_lab_names_a_grid_program_for_what_it_is(tmp_path, capsys):
    from lgjax.studies.realizability import train as rtrain

    cfg = rtrain.Config(tiers=("1L1H",), encodings=("rope",), tasks=("prev",))
    (name, g), = rtrain.runs(cfg).items()
    (tmp_path / "prog").mkdir()
    (tmp_path / "prog" / "config.json").write_text(g.to_json())
    line = one_line_exit_2(["contract-lab", "--run-dir", str(tmp_path / "prog"), "--out",
                            str(tmp_path / "out")], capsys)
    assert "grid program" in line and "corrupt" not in line, line


def test_processes_probing_one_missing_out_folder_at_once_all_pass_and_make_nothing(tmp_path):
    """The processes of a job check --out together; a check neither fails because another is
    checking nor leaves a folder behind (making and removing the same folder raced: a job's
    process 1 stopped with 'cannot write in two/out' on a loaded machine)."""
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor

    from lgjax.harness.outputs import check_writable

    out = tmp_path / "two" / "out"
    # spawned: a fork of this process (JAX's threads running) could deadlock the child
    with ProcessPoolExecutor(4, mp_context=multiprocessing.get_context("spawn")) as pool:
        done = [pool.submit(_probe_many, out, 300) for _ in range(4)]
        errors = [e for f in done for e in f.result()]
    assert errors == []
    assert os.listdir(tmp_path) == []
    check_writable(out, "--out")  # and once more alone
    assert not (tmp_path / "two").exists()


def _probe_many(out, n: int) -> list[str]:
    from lgjax.config import ConfigError
    from lgjax.harness.outputs import check_writable

    errors = []
    for _ in range(n):
        try:
            check_writable(out, "--out")
        except ConfigError as err:
            errors.append(str(err))
    return errors
