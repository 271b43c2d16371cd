"""Seeds sharded over 4 forced CPU devices give the per-seed results of one device."""

import os
import pickle
import subprocess
import sys
import textwrap

import chex
import jax
import numpy as np

from lgjax import devices
from lgjax.runs import open_run
from tests.conftest import xla_flags

FOUR_DEVICES = textwrap.dedent("""
    import dataclasses, sys
    import chex, jax
    import numpy as np
    sys.path.insert(0, {root!r})
    from tests.conftest import tiny
    from lgjax import checkpoints
    from lgjax.checkpoints import driver
    from lgjax import evaluate, train
    assert jax.device_count() == 4
    cfg = tiny(seeds=(0, 1, 2, 3), steps=6)
    sharded = driver.train_run(cfg, {run!r}, devices=4)
    assert len(sharded.params["wq"].sharding.device_set) == 4
    one_device = train.train(cfg, devices=1)
    chex.assert_trees_all_close(sharded, one_device, atol=1e-6)
    # the parent compares its restore with this one-device run (not a second training there)
    import pickle
    with open({run!r} + "-one.pkl", "wb") as f:
        pickle.dump(jax.tree.map(np.asarray, one_device), f)
    acc4 = evaluate.evaluate(sharded.params, cfg, (8, 10), 64, devices=4).accuracy
    acc1 = evaluate.evaluate(sharded.params, cfg, (8, 10), 64, devices=1).accuracy
    assert (acc4 == acc1).all()
    # a grid's cells (2 tasks x 2 seeds) split over the devices like seeds: what one device
    # trains (to 1e-6: XLA's CPU devices split their threads, so sums may reassociate)
    import jax.numpy as jnp
    from lgjax import grid
    from lgjax.config import ModelConfig, TaskConfig, TrainConfig
    g = grid.Grid((TaskConfig("prev", vocab=6), TaskConfig.of("skip", vocab=6, offset=2)),
                  ModelConfig("rope", arch="transformer", layers=1, d=8, query="all"),
                  TrainConfig(steps=4, batch=4, lmin=6, lmax=6,
                              seeds=(0, 1), chunk=2, ckpt_every=2))
    two = grid.train_program(g, {run!r} + "-grid", devices=2)
    assert len(two.params["readout"]["kernel"].sharding.device_set) == 2
    one = grid.make_grid_runner(g, devices=1)(grid.init_states(g), jnp.int32(4))[0]
    chex.assert_trees_all_close(two, one, atol=1e-6)
    try:  # 4 cells in blocks of 1 would split a task's 2 seeds
        grid.check(dataclasses.replace(g, layout="tasks"), devices=4)
        raise SystemExit("a tasks layout over blocks that split a task was accepted")
    except grid.ConfigError as err:
        assert "--layout" in str(err)
    # left to choose, the tasks layout keeps tasks whole: 2 tasks x 3 seeds on 2 of the 4
    # devices (blocks of one task), where 6 cells alone would take 3 (blocks of 2 cells)
    g23 = dataclasses.replace(g, layout="tasks", train=dataclasses.replace(g.train,
                                                                        seeds=(0, 1, 2)))
    grid.check(g23)
    assert grid.cell_mesh(g23).size == 2
    assert grid.cell_mesh(dataclasses.replace(g23, layout="serial")).size == 3
    print("OK")
""")


def test_sharded_over_four_devices_matches_one_and_restores_on_one(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run = str(tmp_path / "run")
    env = xla_flags(4)
    proc = subprocess.run([sys.executable, "-c", FOUR_DEVICES.format(root=root, run=run)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr[-3000:]
    assert jax.device_count() == 1
    restored = open_run(run)
    state = restored.restore()
    restored.close()
    with open(run + "-one.pkl", "rb") as f:
        one_device = pickle.load(f)
    chex.assert_trees_all_close(jax.tree.map(np.asarray, state), one_device, atol=1e-6)


def test_device_count_must_divide_seeds():
    import pytest

    from lgjax.config import ConfigError

    with pytest.raises(ConfigError, match="--devices"):
        devices.seed_mesh(3, devices=2)
    assert devices.seed_mesh(8) is None  # one CPU device here: no mesh at all
