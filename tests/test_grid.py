import dataclasses
import functools
import json

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lgjax import grid, train
from lgjax.checkpoints import step_folders
from lgjax.config import ConfigError, ModelConfig, RunConfig, TaskConfig, TrainConfig
from lgjax.encodings import ENCODINGS

TASKS = (TaskConfig("prev", vocab=8), TaskConfig.of("skip", vocab=8, offset=2),
         TaskConfig("induction", vocab=8))


def tiny_grid(steps=6, seeds=(0, 1), **train_kw) -> grid.Grid:
    model = ModelConfig(encoding="rope", arch="transformer", layers=1, heads=1, d=16, query="all")
    t = TrainConfig(steps=steps, batch=8, lmin=8, lmax=8, seeds=seeds, chunk=3, ckpt_every=3,
                    **train_kw)
    return grid.Grid(TASKS, model, t)


def test_auto_layout_is_serial_on_a_cpu_and_flat_on_an_accelerator(monkeypatch):
    from lgjax.studies.realizability import train as realizability_train

    assert grid.resolve_layout("auto") == "serial"
    assert realizability_train.program_grid(realizability_train.Config(), "1L1H",
                                            "rope").layout == "serial"
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert grid.resolve_layout("auto") == "flat"  # serial ran the cells one by one on an H200
    assert realizability_train.program_grid(realizability_train.Config(), "1L1H",
                                            "rope").layout == "flat"
    assert grid.resolve_layout("tasks") == "tasks"  # a layout named is kept
    grid.check_layout("auto")  # what --layout accepts, everywhere a layout is checked
    with pytest.raises(ConfigError, match="or auto"):
        grid.check_layout("bogus")


@pytest.fixture(scope="module")
def trained_by_layout():
    g = tiny_grid()
    return g, {layout: grid.make_grid_runner(g, layout)(grid.init_states(g),
                                                         jnp.int32(g.train.steps))[0]
               for layout in grid.LAYOUTS}


@pytest.mark.parametrize("layout", sorted(grid.LAYOUTS))
def test_cell_in_grid_equals_cell_alone(trained_by_layout, layout):
    g, by_layout = trained_by_layout
    states = by_layout[layout]
    T, S = g.shape
    for t, i in ((1, 1), (2, 0)):  # cells off the grid's first row and column
        alone = solo(g, t, i)
        cell = jax.tree.map(lambda x, c=t * S + i: x[c:c + 1], states)
        # vmap over cells reassociates float sums: ~1e-7 apart after a few steps
        chex.assert_trees_all_close(cell.params, alone.params, atol=1e-5, rtol=1e-5)
    # and the tasks really differ: the same seed trained on two tasks ends elsewhere
    a, b = (jax.tree.leaves(states.params)[0][c] for c in (0, S))
    assert not np.allclose(a, b)


@functools.cache
def solo(g, t, i):
    """Task t's seed i trained alone by lgjax.train (once per test session)."""
    cfg = g.cell_config(t)
    return train.train(RunConfig(cfg.task, cfg.model, TrainConfig(
        **{**cfg.train.__dict__, "seeds": (g.train.seeds[i],)})))


def test_a_grid_trains_its_cells_at_random_positions_as_each_alone(trained_by_layout):
    g = tiny_grid(random_positions=24)
    states = grid.make_grid_runner(g, "serial")(grid.init_states(g), jnp.int32(g.train.steps))[0]
    S = g.shape[1]
    alone = solo(g, 1, 1)
    assert g.cell_config(1).train.random_positions == 24  # solo trains the cell's own config
    cell = jax.tree.map(lambda x: x[S + 1:S + 2], states)
    chex.assert_trees_all_close(cell.params, alone.params, atol=1e-5, rtol=1e-5)
    plain = jax.tree.map(lambda x: x[S + 1:S + 2], trained_by_layout[1]["serial"])
    assert not np.allclose(jax.tree.leaves(cell.params)[0], jax.tree.leaves(plain.params)[0])


def test_every_training_command_passes_random_positions_to_its_runs():
    from lgjax.harness.study import RunOptions
    from lgjax.studies.contract import train as contract_train
    from lgjax.studies.implicit_bias import multiseed, transformer
    from lgjax.studies.realizability import train as rtrain

    def configs(M):
        over = lambda c: dataclasses.replace(c, run=dataclasses.replace(c.run,
                                                                         random_positions=M))
        return [*multiseed.runs(over(multiseed.Config())).values(),
                *transformer.runs(over(transformer.Config())).values(),
                *contract_train.runs(over(contract_train.Config())).values(),
                rtrain.program_grid(over(rtrain.Config()), "1L1H", "rope")]

    assert {rc.train.random_positions for rc in configs(200)} == {200}
    assert {rc.train.random_positions for rc in configs(0)} == {0}
    assert RunOptions().random_positions == 0  # off unless asked


@pytest.mark.parametrize("own_size", [False, True])
def test_grid_evaluation_equals_each_task_evaluated_alone(trained_by_layout, own_size):
    """One program measures every cell (lax.switch on the cell's task) exactly as evaluate()
    measures each task's seeds alone: the same sequences, the same numbers, bit for bit, with
    every length padded to the longest or each read at its own size."""
    from lgjax import evaluate

    g, by_layout = trained_by_layout
    T, S = g.shape
    params_C = by_layout["serial"].params
    lengths = (8, 12)
    grid._grid_evaluator.cache_clear()
    ev = grid.evaluate_grid(g, params_C, lengths, 16, new_from=8, own_size=own_size)
    assert ev.accuracy.shape == (T, S, len(lengths))
    for t in range(T):
        alone = evaluate.evaluate(jax.tree.map(lambda x, t=t: x[t * S:(t + 1) * S], params_C),
                                  g.cell_config(t), lengths, 16, new_from=8, own_size=own_size)
        for field in ev._fields:
            np.testing.assert_array_equal(getattr(ev, field)[t], getattr(alone, field))
    assert not np.array_equal(ev.mean_attention[0], ev.mean_attention[1])  # tasks differ
    assert grid._grid_evaluator.cache_info().currsize == 1  # one program for both lengths


def test_a_grid_reads_each_length_at_its_own_size_where_the_padding_outweighs_a_compile():
    """The profile's default realizability row (20 cells x 512 sequences) reads each length at
    its own size; its quick row (4 cells x 256 sequences), whose padding costs less than the
    compilations, pads."""
    from pathlib import Path

    from lgjax.profile import instruments, recipes
    from lgjax.studies.realizability import train as rtrain

    def row(name):
        cfg = instruments.rz_config("alibi", recipes.RECIPES[name], Path("unused"))
        g = next(iter(rtrain.runs(cfg).values()))
        return grid.reads_own_size(g, rtrain.eval_lengths(cfg), cfg.run.eval_sequences)

    assert row("default") and not row("quick")


def test_grid_step_compiles_once():
    g = tiny_grid()
    run = grid.make_grid_runner(g, wrap=chex.assert_max_traces(n=1))
    states = grid.init_states(g)
    for n in (1, 2, 3):
        states, loss = run(states, jnp.int32(n))
    assert loss.shape == (g.shape[0] * g.shape[1],) and np.all(np.isfinite(loss))


def test_a_grid_compiled_ahead_trains_the_same_without_lowering_its_program_again(tmp_path):
    """`precompile` (a profile compiles its realizability row beside its other instruments)
    leaves `train_program` the runner it compiled: the training lowers no program at all
    (trained alone, it lowers its runner and initial states), and ends bit for bit where a
    grid not compiled ahead ends."""
    g = tiny_grid(seeds=(3,))
    lowered = {"alone": [], "ahead": []}
    phase = ["alone"]
    listen = lambda event, seconds, **kw: lowered[phase[0]].append(kw.get("fun_name")) \
        if event.endswith("jaxpr_to_mlir_module_duration") else None
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        alone = grid.train_program(g, tmp_path / "alone")
        grid._grid_runner.cache_clear()
        grid.precompile(g)
        phase[0] = "ahead"
        ahead = grid.train_program(g, tmp_path / "ahead")
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert lowered["alone"] and not lowered["ahead"], lowered  # alone: the runner, its init
    chex.assert_trees_all_equal(ahead, alone)


def test_a_replaced_encoding_is_never_served_by_a_program_built_with_the_old_one():
    """Programs are cached by config, and a config names its encoding: replacing the entry
    under that name (a notebook redefining its encoding) clears them, so the grid trains the
    new code, not the program compiled for the old."""
    g = tiny_grid(steps=3, seeds=(5,))
    rope, provider = ENCODINGS["rope"], ENCODINGS.providers["rope"]
    runner = grid.make_grid_runner(g)
    assert grid.make_grid_runner(g) is runner  # one runner per grid and arguments
    old, _ = runner(grid.init_states(g), jnp.int32(3))
    ENCODINGS.register("rope", ENCODINGS["nope"], replace=True)  # "rope" now computes NoPE
    try:
        assert grid.make_grid_runner(g) is not runner
        new, _ = grid.make_grid_runner(g)(grid.init_states(g), jnp.int32(3))
    finally:  # rope as it was, its provider too (runs record an entry's provider as a plugin)
        ENCODINGS.register("rope", rope, replace=True, module=provider)
    assert not np.array_equal(np.asarray(old.params["block0"]["query"]["kernel"]),
                              np.asarray(new.params["block0"]["query"]["kernel"]))


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
    assert step_folders(tmp_path / "killed") == [3, 6]  # the last two are kept
    with pytest.raises(ConfigError, match="--resume"):
        grid.train_program(g, tmp_path / "killed", runner=runner)
    seen = []
    resumed = grid.train_program(g, tmp_path / "killed", resume=True, runner=runner,
                                 on_chunk=lambda step, s, l: seen.append(step))
    assert seen == [9]  # only the missing chunk ran
    chex.assert_trees_all_equal(resumed, full)


def test_grid_refuses_mixed_shapes_and_other_configs(tmp_path):
    g = tiny_grid()
    bad = grid.Grid((*g.tasks, TaskConfig("prev", vocab=9)), g.model, g.train)
    with pytest.raises(ConfigError, match="vocabulary sizes"):
        grid.check(bad)
    grid.train_program(g, tmp_path)
    with pytest.raises(ConfigError, match="holds a different config"):
        grid.train_program(tiny_grid(steps=7), tmp_path, resume=True)


def test_grid_config_round_trips():
    g = tiny_grid()
    assert grid.Grid.from_json(g.to_json()) == g


def test_study_skips_measured_programs_and_resumes_unfinished(tmp_path, capsys):
    from lgjax.harness.study import RunOptions, run_study
    from lgjax.studies.realizability import train as rt

    run = RunOptions(seeds=2, steps=4, batch=4, eval_sequences=8, ckpt_root=str(tmp_path / "ck"),
                     out=str(tmp_path / "out"), progress=False)
    cfg = rt.Config(tiers=("1L1H",), encodings=("rope",), tasks=("prev", "skip-2"), L0=8,
                    test_lengths=(12,), d=16, vocab=8, chunk=2, ckpt_every=2, run=run)
    g = rt.program_grid(cfg, "1L1H", "rope")
    path = rt.program_dir(cfg, "1L1H", "rope")

    def stop(step, states, loss):
        if step == 2:
            raise Killed

    with pytest.raises(Killed):
        grid.train_program(g, path, on_chunk=stop)
    with pytest.raises(ConfigError, match="--resume"):
        run_study(rt.STUDY, cfg)
    resumed = run_study(rt.STUDY, dataclasses.replace(
        cfg, run=dataclasses.replace(run, resume=True)))
    first = resumed["programs"][0]
    assert np.shape(first["lg"]) == (2, 2, 1)
    clean = run_study(rt.STUDY, dataclasses.replace(cfg, run=dataclasses.replace(
        run, ckpt_root=str(tmp_path / "clean"))))["programs"][0]
    assert (first["lg"], first["train_acc"]) == (clean["lg"], clean["train_acc"])
    read_back = run_study(rt.STUDY, cfg)
    again = read_back["programs"][0]
    assert again == first  # read back from the program's results.json, not retrained
    # ... and still named, with what training it cost (both processes), not what reading took
    name = next(iter(resumed["run_dirs"]))
    assert read_back["run_dirs"] == resumed["run_dirs"] == {name: str(path)}
    assert read_back["trained_seconds"] == resumed["trained_seconds"]
    assert resumed["trained_seconds"][name] == first["trained_seconds"] > 0
    assert read_back["train_seconds"] == {name: 0.0}
    assert "prev" in capsys.readouterr().out
    cfg4 = dataclasses.replace(cfg, run=dataclasses.replace(run, eval_sequences=4))
    fewer = run_study(rt.STUDY, cfg4)
    assert fewer["programs"][0]["eval_sequences"] == 4  # measured again, from the last checkpoint
    # a measured program whose config.json is junk: its measurement is used, the damage named
    capsys.readouterr()
    (path / "config.json").write_text("junk")
    assert run_study(rt.STUDY, cfg4)["programs"][0] == fewer["programs"][0]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{path / 'config.json'} is corrupt" in err[0], err


def test_a_killed_study_keeps_the_programs_it_measured(tmp_path, monkeypatch):
    from lgjax.harness.study import RunOptions, run_study
    from lgjax.studies.realizability import train as rt

    run = RunOptions(seeds=1, steps=2, batch=4, eval_sequences=4, ckpt_root=str(tmp_path),
                     out=str(tmp_path / "out"), progress=False)
    cfg = rt.Config(tiers=("1L1H",), encodings=("rope", "nope"), tasks=("prev",), L0=8,
                    test_lengths=(12,), d=16, vocab=8, chunk=2, ckpt_every=2, run=run)
    train_program = grid.train_program

    def killed_at_nope(g, path, **kw):
        if g.model.encoding == "nope":
            raise Killed
        return train_program(g, path, **kw)

    monkeypatch.setattr(grid, "train_program", killed_at_nope)
    with pytest.raises(Killed):
        run_study(rt.STUDY, cfg)
    assert (rt.program_dir(cfg, "1L1H", "rope") / "results.json").is_file()
    assert list(rt.runs(cfg)) == ["realizability/1L1H/nope"]  # rope: measured, not retrained


def _measured_study(tmp_path):
    """A tiny realizability study, trained and measured once: (module, cfg, results.json)."""
    from lgjax.harness.study import RunOptions, run_study
    from lgjax.studies.realizability import train as rt

    run = RunOptions(seeds=1, steps=2, batch=4, eval_sequences=4, ckpt_root=str(tmp_path / "ck"),
                     out=str(tmp_path / "out"), progress=False)
    cfg = rt.Config(tiers=("1L1H",), encodings=("rope",), tasks=("prev",), L0=8,
                    test_lengths=(12,), d=16, vocab=8, chunk=2, ckpt_every=2, run=run)
    run_study(rt.STUDY, cfg)
    return rt, cfg, rt.program_dir(cfg, "1L1H", "rope") / rt.PROGRAM_RESULTS


def _no_training(monkeypatch):
    """Every chunk grid.train_program trains, counted."""
    chunks, train_program = [], grid.train_program

    def counted(g, path, on_chunk=None, **kw):
        return train_program(g, path, on_chunk=lambda *a: chunks.append(a[0]), **kw)

    monkeypatch.setattr(grid, "train_program", counted)
    return chunks


def test_damaged_program_results_are_named_and_measured_again(tmp_path, monkeypatch, capsys):
    """A truncated, empty, foreign or partial results.json is named in one line and the program
    measured again from its final checkpoint, nothing retrained; the rewrite is atomic."""
    from lgjax.harness.study import run_study

    rt, cfg, f = _measured_study(tmp_path)
    good = json.loads(f.read_text())
    chunks = _no_training(monkeypatch)
    damage = {"truncated": f.read_text()[:200], "empty": "", "list": "[]",
              "no grid": json.dumps({k: v for k, v in good.items() if k != "grid"})}
    for what, text in damage.items():
        f.write_text(text)
        capsys.readouterr()
        again = run_study(rt.STUDY, cfg)["programs"][0]
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(err) == 1 and f"{f} is damaged" in err[0] and "measured again" in err[0], what
        assert {k: again[k] for k in ("lg", "train_acc", "acc_all")} \
            == {k: good[k] for k in ("lg", "train_acc", "acc_all")}, what
        assert json.loads(f.read_text()) == again and not chunks, what
    assert [p.name for p in f.parent.iterdir() if p.name.startswith(".")] == []


def test_a_program_measured_by_another_job_is_neither_measured_nor_rewritten(tmp_path,
                                                                             monkeypatch):
    """Two jobs, opposite orders: this one listed the program before the other measured it."""
    from lgjax.harness.study import run_study

    rt, cfg, f = _measured_study(tmp_path)
    before = f.read_bytes()
    stale = {name: g for name, (_, _, g) in rt.programs(cfg).items()}  # listed before it ended
    monkeypatch.setattr(rt, "runs", lambda cfg: stale)
    monkeypatch.setattr(grid, "evaluate_grid", lambda *a, **kw: pytest.fail("measured again"))
    assert run_study(rt.STUDY, cfg)["programs"][0] == json.loads(before)
    assert f.read_bytes() == before
