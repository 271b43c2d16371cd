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
