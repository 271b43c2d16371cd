"""`lgjax reproduce --jobs N`: steps in worker processes give what one process gives, never two
steps in one run directory at once, reports after what they read, a worker's failure as one
line."""

import json
import os

import pytest

from lgjax.checkpoints import twins
from lgjax.checkpoints.lock import RunDirLock
from lgjax.config import ConfigError
from lgjax.harness.cli import main
from lgjax.harness.study import RunOptions
from lgjax.reproduce import command as reproduce
from lgjax.reproduce.jobs import Claim, Lane, lane_ranks, next_step


def claim(dirs=(), configs=(), barrier=False, study="") -> Claim:
    return Claim(frozenset(dirs), frozenset(configs), barrier, study)


def test_a_shared_run_directory_waits_and_a_shared_config_is_taken_last():
    claims = [claim({"a"}, {"A"}), claim({"a"}, {"X"}), claim({"b"}, {"A"}), claim({"c"}, {"C"})]
    rank = [0, 1, 2, 3]
    # step 0 runs: 1 shares its folder (never), 2 its config (only if nothing else), 3 nothing
    assert next_step([1, 2, 3], [0], claims, rank) == 3
    assert next_step([1, 2], [0], claims, rank) == 2
    assert next_step([1], [0], claims, rank) is None
    assert next_step([1, 2, 3], [], claims, rank) == 1


def test_a_report_waits_for_every_step_before_it_and_holds_back_the_rest():
    claims = [claim({"a"}), claim(barrier=True), claim({"c"})]
    assert next_step([1, 2], [0], claims, [0, 1, 2]) is None  # the report waits for step 0
    assert next_step([1, 2], [], claims, [0, 1, 2]) == 1
    assert next_step([2], [1], claims, [0, 1, 2]) is None  # nothing beside the report
    # a step after the report never starts before it, however it ranks
    assert next_step([1, 2], [0], claims, [1, 2, 0]) is None


def test_a_report_orders_only_its_own_studys_steps():
    """`reproduce all --jobs N`: one pool over the studies; study a's report waits for a's
    steps, not for b's, and b's steps start beside it."""
    claims = [claim({"a0"}, study="a"), claim(barrier=True, study="a"),
              claim({"b0"}, study="b"), claim(barrier=True, study="b"), claim({"b1"}, study="b")]
    rank = [0, 1, 2, 3, 4]
    assert next_step([1, 2, 3, 4], [0], claims, rank) == 2  # a's report waits for a0 only
    assert next_step([1, 3, 4], [2], claims, rank) == 1  # ... and runs beside b's steps
    assert next_step([3, 4], [1, 2], claims, rank) is None  # b's report waits for b0
    assert next_step([3, 4], [1], claims, rank) == 3
    assert next_step([4], [1, 3], claims, rank) is None  # b1 waits for b's report


def test_every_studys_longest_start_first():
    class Step:
        def __init__(self, experiment):
            self.experiment, self.part_of = experiment, ""

    lanes = [Lane("a", [Step("lab"), Step("train")], None, ("train",)),
             Lane("b", [Step("x"), Step("y"), Step("z")], None, ("z", "y")),
             Lane("c", [Step("alpha")], None)]
    # the first-named of each study (train, z), then the second-named (y), then plan order
    assert lane_ranks(lanes) == [3, 0, 4, 2, 1, 5]


def test_the_longest_start_first_then_plan_order():
    class Step:
        def __init__(self, experiment, part_of=""):
            self.experiment, self.part_of = experiment, part_of

    def ranks(steps, first):  # one study's lane
        return lane_ranks([Lane("", steps, None, first)])

    steps = [Step(n) for n in ("multiseed", "shift", "variants", "mechanics")]
    assert ranks(steps, ("mechanics", "variants")) == [2, 3, 1, 0]
    # a step goes by its own name, not by the experiment it serves
    grids = [Step("train-scale", "train"), Step("train"), Step("train-L0", "train")]
    assert ranks(grids, ("train",)) == [1, 0, 2]
    assert ranks(grids, ("train", "train-L0")) == [2, 0, 1]
    claims = [claim({n}) for n in "abcd"]
    assert next_step([0, 1, 2, 3], [], claims, ranks(steps, ("mechanics", "variants"))) == 3


def test_a_step_waits_for_its_pieces_even_when_ranked_first():
    """Pieces a, b of a step that names both: the step, although its experiment is ranked
    first, takes its run directories after them, in plan order."""
    claims = [claim({"a"}), claim({"b"}), claim({"a", "b"}), claim({"c"})]
    rank = [1, 2, 0, 3]
    assert next_step([0, 1, 2, 3], [], claims, rank) == 0
    assert next_step([1, 2, 3], [0], claims, rank) == 1
    assert next_step([2, 3], [0, 1], claims, rank) == 3  # not the step: its pieces are running
    assert next_step([2], [1], claims, rank) is None
    assert next_step([2], [], claims, rank) == 2


@pytest.fixture
def tiny_quick(monkeypatch):
    monkeypatch.setattr(reproduce, "QUICK_RUN", RunOptions(seeds=1, steps=3, batch=8,
                                                           eval_sequences=16))


def numbers(results: dict) -> dict:
    """What a results file measured: its paths, timings and options left out."""
    drop = {"run_dirs", "train_seconds", "trained_seconds", "measure_seconds", "wall_seconds",
            "config"}
    return {k: v for k, v in results.items() if k not in drop}


def test_two_jobs_measure_what_one_process_measures(tmp_path, tiny_quick, capsys):
    """Also `reproduce --quick` end to end at a tiny scale (the one-job run): experiments run
    through the harness, every claim gets a verdict (those of experiments left out: not run),
    the report is written."""
    only = "multiseed,prop1"  # prop1 trains configs multiseed trains: twins or copies
    printed = {}
    for jobs in ("1", "2"):
        assert main(["reproduce", "implicit-bias", "--quick", "--only", only, "--jobs", jobs,
                     "--out", str(tmp_path / f"out{jobs}"), "--ckpt-root",
                     str(tmp_path / f"ck{jobs}"), "--no-progress"]) == 0
        printed[jobs] = capsys.readouterr()
    assert "claim checks match" in printed["1"].out
    assert "wall seconds per experiment" in printed["1"].out
    assert "elapsed with 2 jobs" in printed["2"].out and "(started)" in printed["2"].err
    report = json.loads((tmp_path / "out1" / "report.json").read_text())
    assert report["reduced"] is True
    by_id = {v["id"]: v for v in report["verdicts"]}
    assert by_id["t1.rope_acc"]["status"] in ("matches", "differs")  # measured
    assert by_id["t5.base10000"]["status"] == "not run"  # frequency was left out
    html = (tmp_path / "out1" / "report.html").read_text()
    assert "data:image/png;base64," in html and "REDUCED" in html
    assert (tmp_path / "ck1" / "quick" / "multiseed-K1" / "rope").is_dir()
    for name in only.split(","):
        one, two = (json.loads((tmp_path / f"out{j}" / name / "results.json").read_text())
                    for j in "12")
        assert numbers(one) == numbers(two), name
    assert (tmp_path / "out2" / "logs" / "multiseed.out").read_text()  # the step's own table
    report = [json.loads((tmp_path / f"out{j}" / "report.json").read_text())["verdicts"]
              for j in "12"]
    assert [v["status"] for v in report[0]] == [v["status"] for v in report[1]]
    # run again over the finished runs: they reload in moments, and the report still says what
    # training them cost (their run directories' records), not what reloading them took
    assert main(["reproduce", "implicit-bias", "--quick", "--only", only, "--jobs", "1",
                 "--out", str(tmp_path / "again"), "--ckpt-root", str(tmp_path / "ck1"),
                 "--no-progress"]) == 0
    assert "cost across processes" in capsys.readouterr().out
    first, again = (json.loads((tmp_path / d / "report.json").read_text())["cost"]
                    for d in ("out1", "again"))
    assert first["runs"] > 0 and first["unrecorded"] == again["unrecorded"] == 0
    assert again["training_seconds"] == first["training_seconds"] > 0


def reproduce_with_runs_held(tmp_path) -> tuple[int, list]:
    """A live process (this one) writes the first run each of two steps needs."""
    held = [tmp_path / "ck" / "quick" / "prop1" / "K3",
            tmp_path / "ck" / "quick" / "multiseed-K1" / "rope"]
    locks = [RunDirLock(h) for h in held]
    for h, lock in zip(held, locks):
        h.mkdir(parents=True)
        lock.acquire()
    try:
        return main(["reproduce", "implicit-bias", "--quick", "--only", "multiseed,prop1",
                     "--jobs", "2", "--out", str(tmp_path / "out"), "--ckpt-root",
                     str(tmp_path / "ck"), "--no-progress"]), held
    finally:
        for lock in locks:
            lock.release()


def test_a_run_held_by_another_process_is_refused_before_any_worker_starts(tmp_path, capsys):
    code, held = reproduce_with_runs_held(tmp_path)
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert str(held[1]) in err and "locked by" in err  # the first step's run: multiseed's
    assert not (tmp_path / "out").exists()


def test_a_workers_failure_is_one_line_and_exit_code_2(tmp_path, tiny_quick, capsys,
                                                       monkeypatch):
    # the parent's checks would refuse the held runs before any worker starts (the test
    # above); without them the workers meet the locks, as when another process takes a run
    # between the checks and the step: both fail as soon as they start, and the first failure
    # is the one relayed
    monkeypatch.setattr(reproduce, "preflight", lambda module, cfg: None)
    code, held = reproduce_with_runs_held(tmp_path)
    err = capsys.readouterr().err
    assert code == 2
    last = err.strip().splitlines()[-1]
    assert last.startswith("lgjax reproduce: configuration error: run directory") and \
        any(str(h) in last for h in held) and "locked by" in last
    # in workers, each its one line
    assert "Traceback" not in err and "== implicit-bias: prop1 (failed)" in err
    assert "== implicit-bias: multiseed (failed)" in err
    assert not (tmp_path / "out" / "report.json").exists()  # no report over a failed step


def test_a_twin_that_a_live_process_holds_is_not_taken(tmp_path):
    from lgjax.checkpoints.rundir import CONFIG_FILE
    from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig

    rc = RunConfig(TaskConfig(), ModelConfig("rope"), TrainConfig(steps=3, seeds=(0,)))
    twin = tmp_path / "a"
    (twin / "3").mkdir(parents=True)
    (twin / CONFIG_FILE).write_text(rc.to_json())
    assert twins.finished_twin(tmp_path, rc, tmp_path / "b") == twin.absolute()
    lock = RunDirLock(twin)
    lock.acquire()
    try:
        assert twins.finished_twin(tmp_path, rc, tmp_path / "b") is None
    finally:
        lock.release()


def test_jobs_default_to_one_per_core_only_at_quick_on_a_cpu(monkeypatch):
    cores = len(os.sched_getaffinity(0))
    assert reproduce.run_jobs(reproduce.Config(quick=True)) == cores
    assert reproduce.run_jobs(reproduce.Config()) == 1
    assert reproduce.run_jobs(reproduce.Config(jobs=3)) == 3
    monkeypatch.setenv("LGJAX_DISTRIBUTED", "1")
    assert reproduce.run_jobs(reproduce.Config(quick=True)) == 1
    with pytest.raises(ConfigError, match="--jobs"):
        reproduce.run_jobs(reproduce.Config(jobs=2))


def test_jobs_share_one_gpu_but_not_a_tpu(monkeypatch):
    import jax

    from lgjax import runtime

    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert reproduce.run_jobs(reproduce.Config(jobs=3)) == 3
    assert reproduce.run_jobs(reproduce.Config(quick=True)) == 1  # quick: one per core on a CPU
    monkeypatch.setattr(jax, "default_backend", lambda: "tpu")
    with pytest.raises(ConfigError, match="--jobs: .* not tpu; give --jobs 1"):
        reproduce.run_jobs(reproduce.Config(jobs=2))
    monkeypatch.delenv("XLA_PYTHON_CLIENT_PREALLOCATE", raising=False)
    runtime.share_accelerator()
    assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "true")  # a user's own choice stays
    runtime.share_accelerator()
    assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "true"


def test_a_stopped_reproduction_continues_with_resume(tmp_path, tiny_quick, capsys):
    """A run the reproduction left unfinished (checkpoints, not its last step) is refused
    without --resume, before anything trains, and continued with it."""
    from lgjax.checkpoints import driver, step_folders

    class Stopped(Exception):
        pass

    def stop(step, *_):
        if step_folders(run_dir):
            raise Stopped

    cfg = reproduce.Config(quick=True, out=str(tmp_path / "out"), ckpt_root=str(tmp_path / "ck"))
    root = tmp_path / "ck" / "quick"
    module, exp = reproduce.experiment_config("multiseed", cfg, root)
    name, rc = next(iter(module.runs(exp).items()))  # its first run (rope)
    run_dir = root / name
    with pytest.raises(Stopped):
        driver.train_run(rc, run_dir, on_chunk=stop)
    left = step_folders(run_dir)
    assert left and left[-1] < rc.train.steps
    argv = ["reproduce", "implicit-bias", "--quick", "--only", "multiseed", "--jobs", "1",
            "--out", str(tmp_path / "out"), "--ckpt-root", str(tmp_path / "ck"), "--no-progress"]
    assert main(argv) == 2
    assert "--resume" in capsys.readouterr().err
    assert step_folders(run_dir) == left  # nothing trained or written
    assert main([*argv, "--resume"]) == 0
    assert step_folders(run_dir)[-1] == rc.train.steps
