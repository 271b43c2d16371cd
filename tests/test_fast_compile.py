"""TrainConfig.fast_compile (XLA -O0 for short runs) and where the quick reproduction uses it."""

import dataclasses
from pathlib import Path

import jax
import numpy as np
from conftest import tiny

from lgjax import train
from lgjax.checkpoints import driver, read_config


def test_fast_compile_is_part_of_the_run_config_and_moves_only_the_last_bits(tmp_path):
    rc = tiny(steps=4)
    fast = dataclasses.replace(rc, train=dataclasses.replace(rc.train, fast_compile=True))
    assert train.compiler_options(fast.train) == train.accepted_fast_compile(jax.default_backend())
    assert train.compiler_options(rc.train) is None
    a = driver.train_run(rc, tmp_path / "a")
    b = driver.train_run(fast, tmp_path / "b")
    assert read_config(tmp_path / "b").train.fast_compile  # a resume compiles as it was
    for x, y in zip(jax.tree.leaves(a.params), jax.tree.leaves(b.params)):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-6)


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
