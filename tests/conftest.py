import os

import chex
import pytest

from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig


@pytest.fixture(scope="session", autouse=True)
def _compile_cache(tmp_path_factory):
    """One persistent compilation cache for the session, in a temporary folder: the CLI runs a
    test starts as processes and those in this process share compiled programs, and no test
    reads a warm cache from an earlier session (the timings are a clean machine's)."""
    from lgjax.runtime import enable_compile_cache

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
