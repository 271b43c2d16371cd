import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lgjax import grid, train
from lgjax.config import ConfigError, ModelConfig, RunConfig, TaskConfig, TrainConfig

TASKS = (TaskConfig("prev", vocab=8), TaskConfig("skip", vocab=8, offset=2),
         TaskConfig("induction", vocab=8))


def tiny_grid(steps=6, seeds=(0, 1), **train_kw) -> grid.Grid:
    model = ModelConfig(encoding="rope", arch="transformer", layers=1, heads=1, d=16, query="all")
    t = TrainConfig(steps=steps, batch=8, lmin=8, lmax=8, seeds=seeds, chunk=3, ckpt_every=3,
                    **train_kw)
    return grid.Grid(TASKS, model, t)


def test_cell_in_grid_equals_cell_alone():
    g = tiny_grid()
    states = grid.make_grid_runner(g)(grid.init_states(g), jnp.int32(g.train.steps))[0]
    T, S = g.shape
    for t, i in ((1, 1), (2, 0)):  # cells off the grid's first row and column
        cfg = g.cell_config(t)
        solo = TrainConfig(**{**cfg.train.__dict__, "seeds": (g.train.seeds[i],)})
        alone = train.train(RunConfig(cfg.task, cfg.model, solo))
        cell = jax.tree.map(lambda x, c=t * S + i: x[c:c + 1], states)
        # vmap over a task's seeds reassociates float sums: ~1e-7 apart after a few steps
        chex.assert_trees_all_close(cell.params, alone.params, atol=1e-5, rtol=1e-5)
    # one wide vmap over every cell (the accelerator layout) trains the same cells
    flat = grid.make_grid_runner(g, "flat")(grid.init_states(g), jnp.int32(g.train.steps))[0]
    chex.assert_trees_all_close(flat.params, states.params, atol=1e-5, rtol=1e-5)
    # and the tasks really differ: the same seed trained on two tasks ends elsewhere
    a, b = (jax.tree.leaves(states.params)[0][c] for c in (0, S))
    assert not np.allclose(a, b)


def test_grid_step_compiles_once():
    g = tiny_grid()
    run = grid.make_grid_runner(g, wrap=chex.assert_max_traces(n=1))
    states = grid.init_states(g)
    for n in (1, 2, 3):
        states, loss = run(states, jnp.int32(n))
    assert loss.shape == (g.shape[0] * g.shape[1],) and np.all(np.isfinite(loss))


class Killed(Exception):
    pass


def test_resume_mid_grid_equals_uninterrupted(tmp_path):
    g = tiny_grid(steps=9)
    runner = grid.make_grid_runner(g)
    full = grid.train_program(g, tmp_path / "full", runner=runner)

    def kill(step, states, loss):
        if step == 6:
            raise Killed

    with pytest.raises(Killed):
        grid.train_program(g, tmp_path / "killed", on_chunk=kill, runner=runner)
    assert grid.GridDir(tmp_path / "killed", g).latest() == 6
    seen = []
    resumed = grid.train_program(g, tmp_path / "killed", runner=runner,
                                 on_chunk=lambda step, s, l: seen.append(step))
    assert seen == [9]  # only the missing chunk ran
    chex.assert_trees_all_equal(resumed, full)


def test_grid_refuses_mixed_shapes_and_other_configs(tmp_path):
    g = tiny_grid()
    bad = grid.Grid((*g.tasks, TaskConfig("prev", vocab=9)), g.model, g.train)
    with pytest.raises(ConfigError, match="vocabulary sizes"):
        grid.check(bad)
    grid.GridDir(tmp_path, g).close()
    with pytest.raises(ConfigError, match="different grid"):
        grid.GridDir(tmp_path, tiny_grid(steps=7))


def test_grid_config_round_trips():
    g = tiny_grid()
    assert grid.Grid.from_json(g.to_json()) == g
