import os
from importlib.metadata import version

# The suite compiles about a thousand small programs, and XLA CPU spends most of a small
# program's compilation in LLVM's optimisation passes and its MLIR fusion emitters
# (jax.random.randint alone: 1.35 s at the defaults, 0.35 s at -O0). At -O0 with the classic
# emitters the tiny programs here compile 3-4x faster (tests/test_encoding_zoo.py: 182 s at
# XLA's defaults, 87 s so). Code generation then fuses multiply-adds differently, so numbers
# move in the last bits: every comparison in the suite is between programs compiled here (or in
# a subprocess given these flags: `xla_flags`), none against numbers saved by a run at the
# defaults.
TEST_XLA_FLAGS = "--xla_backend_optimization_level=0"
# jaxlib 0.11's XLA has no emitter switch, and an unknown name in XLA_FLAGS aborts the process
if tuple(int(v) for v in version("jaxlib").split(".")[:2]) < (0, 11):
    TEST_XLA_FLAGS += " --xla_cpu_use_fusion_emitters=false"
os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {TEST_XLA_FLAGS}".strip()
# The CLI splits a CPU into one device per core (lgjax.runtime.split_cpu_into_devices); the
# suite keeps one device, in-process and in the CLI's subprocesses alike, so a worker's device
# count does not depend on which test ran JAX first (tests of the split set their own)
os.environ["LGJAX_CPU_DEVICES"] = "1"

import chex  # noqa: E402  (after XLA_FLAGS: jax reads them when its backend starts)
import pytest  # noqa: E402

from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig  # noqa: E402


def xla_flags(devices: int) -> dict:
    """The environment of a subprocess that sees `devices` CPU devices and compiles as this
    process does."""
    return {**os.environ, "XLA_FLAGS": f"{TEST_XLA_FLAGS} "
                                       f"--xla_force_host_platform_device_count={devices}"}


@pytest.fixture(scope="session", autouse=True)
def _compile_cache(tmp_path_factory):
    """One persistent compilation cache for the session, in a temporary folder: the CLI runs a
    test starts as processes and those in this process share compiled programs, and no test
    reads a warm cache from an earlier session (the timings are a clean machine's)."""
    from lgjax.runtime import enable_compile_cache

    # pytest-xdist's workers share one cache (their base folders are siblings)
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        (base.parent / "jax-cache").mkdir(exist_ok=True)
        path = str(base.parent / "jax-cache")
    else:
        path = str(tmp_path_factory.mktemp("jax-cache"))
    os.environ["LGJAX_CACHE"] = path
    enable_compile_cache(path)
    yield


@pytest.fixture(autouse=True)
def _clear_traces():
    chex.clear_trace_counter()
    yield


def task_config(name, vocab=20, **knobs) -> TaskConfig:
    """The task with those of `knobs` it takes (tests sweep one set of knobs over many tasks)."""
    import dataclasses

    from lgjax.tasks import TASKS

    takes = {f.name for f in dataclasses.fields(TASKS[name].options)}
    return TaskConfig.of(name, vocab, **{k: v for k, v in knobs.items() if k in takes})


def tiny(encoding="rope", task="fixed_offset", seeds=(0, 1), steps=6, query=None, **model):
    """A small run config every test can afford to compile."""
    from lgjax.tasks import TASKS

    q = query or TASKS[task].rows
    model = {"d": 16, "heads": 1, **model}
    return RunConfig(task_config(task, vocab=8, offset=1),
                     ModelConfig(encoding=encoding, query=q, **model),
                     TrainConfig(steps=steps, batch=16, lmin=6, lmax=10, seeds=tuple(seeds),
                                 ckpt_every=4, ckpt_early=2, chunk=3))


@pytest.fixture
def fresh_plugins(tmp_path_factory):
    """Call it to forget the plugins loaded in this process since the test began, as a new
    process would: the registries' entries from outside lgjax, plugins.LOADED and the plugin
    modules imported from the tests' folder or a temporary one. The test ends with it called."""
    import sys
    from pathlib import Path

    from lgjax import plugins
    from lgjax.encodings import ENCODINGS
    from lgjax.tasks import TASKS

    saved = [(r, dict(r), dict(r.providers)) for r in (ENCODINGS, TASKS)]
    loaded, modules = list(plugins.LOADED), set(sys.modules)
    homes = (str(Path(__file__).parent), str(tmp_path_factory.getbasetemp()))

    def forget():  # entries lgjax's own modules registered meanwhile (a study's tasks) stay
        for registry, entries, providers in saved:
            for key in list(registry):
                if key in entries and registry[key] is not entries[key]:
                    dict.__setitem__(registry, key, entries[key])
                    registry.providers[key] = providers[key]
                elif key not in entries and not registry.providers[key].startswith("lgjax"):
                    del registry[key]
        plugins.LOADED[:] = loaded
        for name in set(sys.modules) - modules:
            if (getattr(sys.modules[name], "__file__", None) or "").startswith(homes):
                del sys.modules[name]

    yield forget
    forget()


TRAIN = """
import os, sys, time
sys.path.insert(0, {root!r})
from tests.conftest import tiny
from lgjax.checkpoints import driver


def pause(step, *_):
    time.sleep({sleep})
    while {hold!r} and step >= 4 and not os.path.exists({hold!r}):
        time.sleep(0.01)


driver.train_run(tiny(steps={steps}), {run!r}, resume={resume}, on_chunk=pause)
"""


def start_training(run, steps=12, resume=False, sleep=0.0, hold=None):
    """`tiny(steps)` training into `run` in a process of its own. At every chunk boundary it
    sleeps `sleep` seconds (time for a test to kill it mid-run); given a file `hold`, from
    step 4 on it also waits there until that file exists (the run stays live while the test
    reads it)."""
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).parent.parent)
    return subprocess.Popen([sys.executable, "-c", TRAIN.format(
        root=root, steps=steps, run=str(run), resume=resume, sleep=sleep,
        hold=str(hold) if hold else None)])


def wait_for_step(proc, run, step, timeout=240):
    """Poll until the step folder `run/step` appears, the process ends or `timeout` passes."""
    import time

    deadline = time.monotonic() + timeout
    while not (run / str(step)).is_dir() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)


# The longest end-to-end tests, longest first (pytest --durations=0, the whole suite on two
# workers), are collected first: pytest-xdist's load scheduling then hands them out at the
# start, to each worker in turn, instead of leaving a worker on one of them at the end while
# the other idles
LONG_FIRST = (
    # the jobs' own pass: the grid job failed (its processes made no run folder, cause not found)
    # in 2 of 7 passes where it followed the multiseed job, in none of 4 where it ran alone
    "test_multihost.py::test_grid_program_over_two_processes",
    "test_reproduce_studies.py::test_reproduce_all_quick_end_to_end",
    "test_plugins.py::test_a_content_aware_plugin_trains_everywhere",
    "test_plugins.py::test_a_plugin_given_once_trains_everywhere",
    "test_reproduce_jobs.py::test_two_jobs_measure_what_one_process_measures",
    "test_profile.py::test_profiling_a_canonical_encoding_repeats_its_reference",
    "test_side_by_side.py::test_runs_side_by_side_train_and_stop_as_one_after_another",
    "test_content.py::test_profile_of_a_content_encoding_says_why",
    "test_layout.py::test_every_module_imports_on_its_own",
    "test_profile.py::test_profile_runs_go_under_ckpt_root",
    "test_devices.py::test_sharded_over_four_devices",
    "test_preemption.py::test_the_cli_stopped_mid_training_exits_75",
    "test_contract_matrix.py::test_rope_cell_gains_the_evaluation_time_extensions",
    "test_reproduce_jobs.py::test_a_workers_failure_is_one_line",
    "test_transformer.py::test_transformer_experiment_end_to_end",
    "test_experiments.py::test_variants",
    "test_metrics.py::test_open_run_reads_a_live_run_then_the_finished_one",
    "test_contract_matrix.py::test_a_cells_seed_trains_the_same_beside_any_other_seeds",
    "test_cli.py::test_multiseed_end_to_end",
    "test_experiments.py::test_maxmargin",
    "test_experiments.py::test_mechanics",
    "test_experiments.py::test_frequency",
    "test_grid.py::test_study_skips_measured_programs_and_resumes_unfinished",
    "test_contract_matrix.py::test_one_cell_trains_measures_and_reports_through_the_cli",
)


JOBS_FILE = "tests/test_multihost.py"  # .ci/run's jobs pass collects this file alone
SLURM_FILE = "tests/test_slurm.py"  # and its Slurm pass this one


def pytest_collection_modifyitems(items):
    for marker, home in (("jobs", JOBS_FILE), ("slurm", SLURM_FILE)):
        strays = [i.nodeid for i in items
                  if i.get_closest_marker(marker) and not i.nodeid.startswith(home)]
        if strays:
            raise pytest.UsageError(f"{strays[0]}: a test marked `{marker}` belongs in {home}, "
                                    f"the file .ci/run's {marker} pass collects")
    rank = lambda item: next((i for i, name in enumerate(LONG_FIRST) if name in item.nodeid),
                             len(LONG_FIRST))
    items.sort(key=rank)  # stable: the others keep their order


@pytest.fixture
def tiny_quick(monkeypatch, tmp_path_factory):
    """Call it with the tiny recipe's changes: `--quick` becomes that recipe (a profile test's
    budget), and the packaged reference is replaced by one at that recipe, for the card to
    compare with: the packaged quick entry's numbers relabelled (the profile refuses a
    reference made at another recipe; these tests check the profile's paths, not the values
    of its comparisons)."""
    import dataclasses
    import json

    from lgjax.profile import recipes, reference

    def make(**changes):
        tiny = dataclasses.replace(recipes.RECIPES["tiny"], name="quick", rz_tasks=("prev",),
                                   **changes)
        monkeypatch.setitem(recipes.RECIPES, "quick", tiny)
        entry = reference.load()["recipes"]["quick"] | {"recipe": tiny.as_dict()}
        path = tmp_path_factory.mktemp("reference") / "reference.json"
        path.write_text(json.dumps({"recipes": {"quick": entry}}))
        monkeypatch.setattr(reference, "FILE", path)
        return tiny

    return make
