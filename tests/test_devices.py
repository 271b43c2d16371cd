"""Seeds sharded over 4 forced CPU devices give the per-seed results of one device."""

import os
import subprocess
import sys
import textwrap

import chex
import jax

from lgjax import devices, train
from lgjax.runs import open_run
from tests.conftest import tiny

FOUR_DEVICES = textwrap.dedent("""
    import sys
    import chex, jax
    sys.path.insert(0, {root!r})
    from tests.conftest import tiny
    from lgjax import checkpoints
    from lgjax.checkpoints import driver
    from lgjax import evaluate, train
    assert jax.device_count() == 4
    cfg = tiny(seeds=(0, 1, 2, 3), steps=6)
    sharded = driver.train_run(cfg, {run!r}, devices=4)
    assert len(sharded.params["wq"].sharding.device_set) == 4
    chex.assert_trees_all_close(sharded, train.train(cfg, devices=1), atol=1e-6)
    acc4 = evaluate.evaluate(sharded.params, cfg, (8, 10), 64, devices=4).accuracy
    acc1 = evaluate.evaluate(sharded.params, cfg, (8, 10), 64, devices=1).accuracy
    assert (acc4 == acc1).all()
    print("OK")
""")


def test_sharded_over_four_devices_matches_one_and_restores_on_one(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run = str(tmp_path / "run")
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
    proc = subprocess.run([sys.executable, "-c", FOUR_DEVICES.format(root=root, run=run)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr[-3000:]
    assert jax.device_count() == 1
    restored = open_run(run)
    state = restored.restore()
    restored.close()
    chex.assert_trees_all_close(state, train.train(tiny(seeds=(0, 1, 2, 3), steps=6)),
                                atol=1e-6)


def test_device_count_must_divide_seeds():
    import pytest

    from lgjax.config import ConfigError

    with pytest.raises(ConfigError, match="--devices"):
        devices.seed_mesh(3, devices=2)
    assert devices.seed_mesh(8) is None  # one CPU device here: no mesh at all
