"""TrainConfig.fast_compile (XLA -O0 for short runs) and where the quick reproduction uses it."""

import dataclasses
import subprocess
import sys
from pathlib import Path

import jax
from conftest import tiny

from lgjax import train
from lgjax.checkpoints import driver, read_config

ROOT = Path(__file__).parent.parent


def test_fast_compile_is_part_of_the_run_config(tmp_path):
    rc = tiny(steps=4)
    fast = dataclasses.replace(rc, train=dataclasses.replace(rc.train, fast_compile=True))
    assert train.compiler_options(fast.train) == train.accepted_fast_compile(jax.default_backend())
    assert train.compiler_options(rc.train) is None
    driver.train_run(fast, tmp_path / "b")
    assert read_config(tmp_path / "b").train.fast_compile  # a resume compiles as it was


# The suite itself compiles at -O0 (conftest.py), where both sides below would be one program:
# they are compared in a process at XLA's defaults
AT_DEFAULTS = """
import dataclasses, os, sys
sys.path.insert(0, {root!r})
from tests.conftest import tiny
os.environ.pop("XLA_FLAGS")  # conftest set the suite's; XLA reads them when JAX first runs
import jax, numpy as np
from lgjax import keys, train
from lgjax.config import TaskConfig
from lgjax.studies.contract import measure
from lgjax.studies.contract.tasks import sample_shift_pair
from lgjax.tasks import sample_batch

rc = tiny(steps=4)
fast = dataclasses.replace(rc, train=dataclasses.replace(rc.train, fast_compile=True))
a, b = train.train(rc).params, train.train(fast).params
print("training", max(float(np.max(np.abs(x - y) / (1e-6 + np.abs(x))))
                      for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b))))
seeds = (0, 3)
for name, args, draw in [("ordered_update", (64, 8, 28, 32, 4), sample_shift_pair),
                         ("periodic_marker", (64, 40, 40, 40), sample_batch)]:
    task = TaskConfig(name, vocab=20)
    got = measure.sample(task, seeds, 7, *args, draw=draw)
    plain = jax.jit(measure._draw, static_argnums=(0, 1, 3, 4))(
        draw, task, keys.seed_keys(seeds), 7, args)
    same = all(np.array_equal(x, np.asarray(y))
               for x, y in zip(jax.tree.leaves(got), jax.tree.leaves(plain)))
    print("draws", name, draw.__name__, same)
"""


def test_fast_compile_moves_training_in_the_last_bits_and_no_evaluation_draw():
    """A run at fast_compile against one at XLA's defaults: parameters to float rounding; the
    contract's evaluation batches, whose sampler always compiles at -O0, bit for bit."""
    done = subprocess.run([sys.executable, "-c", AT_DEFAULTS.format(root=str(ROOT))],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.split("\n")
    assert float(lines[0].split()[1]) < 1e-3, lines[0]
    draws = [line for line in lines if line.startswith("draws")]
    assert len(draws) == 2 and all(line.endswith("True") for line in draws), draws


def test_fast_compile_drops_an_option_the_compiler_does_not_know(monkeypatch):
    # jax 0.11 removed xla_cpu_use_fusion_emitters; naming it failed every --quick compilation
    monkeypatch.setattr(train, "FAST_COMPILE", {"xla_backend_optimization_level": 0,
                                                "xla_no_such_option_in_any_xla": True})
    train.accepted_fast_compile.cache_clear()
    try:
        assert train.accepted_fast_compile("cpu") == {"xla_backend_optimization_level": 0}
    finally:
        train.accepted_fast_compile.cache_clear()


def test_quick_reproduction_compiles_fast_but_the_transformer():
    from lgjax.reproduce.command import Config, experiment_config

    cfg = Config(study="implicit-bias", quick=True)
    for name in ("prop1", "variants", "mechanics", "maxmargin"):
        _, c = experiment_config(name, cfg, Path("ck"))
        assert c.run.fast_compile
    _, c = experiment_config("transformer", cfg, Path("ck"))
    assert not c.run.fast_compile  # its steps outweigh its compilation
    _, c = experiment_config("prop1", Config(study="implicit-bias"), Path("ck"))
    assert not c.run.fast_compile  # the published scale
