"""The grid runner: many cells x seeds trained in one compiled program.

A grid is a list of tasks sharing one model and one recipe (the realizability study: every task
of one (encoding, tier); the contract matrix: cells that differ in task). Tasks differ only in
data, so cells stack like seeds: the state has a leading axis of T x S cells, task-major
(cell c = task c // S, seed c % S), and a step's batch comes from lax.switch over the tasks'
samplers on the cell's task index. How the cells share the program is a layout (LAYOUTS):
lax.map over cells, over tasks with their seeds vmapped as `lgjax.train` runs seeds, or one
wide vmap for an accelerator. Cell (t, s) takes its keys from seed s exactly as `lgjax.train`
does for task t alone, so it trains the same inside the grid as alone (up to vmap's float
reassociation).

`train_program` adds checkpoints in one run directory per grid (lgjax.checkpoints: the grid as
config.json, orbax steps, digests, a lock), so a killed program resumes from its newest intact
checkpoint; `evaluate_grid` measures every cell. lgjax.harness.study trains a Grid like a
RunConfig.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from lgjax import evaluate, models, preemption, tasks, train
from lgjax.checkpoints import RunDir, metrics
from lgjax.config import (
    ConfigError,
    ModelConfig,
    RunConfig,
    TaskConfig,
    TrainConfig,
    canonical_json,
    plugin_modules,
    saved,
)
from lgjax.devices import first_local, local_devices, place, seed_mesh, shard_seeds, to_host
from lgjax.keys import DATA, seed_keys, stream
from lgjax.registry import clears_on_change
from lgjax.validation import validate


@dataclass(frozen=True)
class Grid:
    tasks: tuple[TaskConfig, ...]  # one row of cells per task; all share the model's vocab sizes
    model: ModelConfig  # the model every cell trains
    train: TrainConfig  # the shared recipe; train.seeds are every task's seeds
    # how the cells share the program (LAYOUTS); not saved with the grid: layouts differ in
    # float summation order only, so a program may resume under another
    layout: str = field(default="serial", compare=False)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.tasks), len(self.train.seeds)

    def cell_config(self, t: int) -> RunConfig:
        """The RunConfig that trains task t alone (its seeds as train.seeds)."""
        return RunConfig(self.tasks[t], self.model, self.train)

    def to_json(self) -> str:
        d = {k: v for k, v in saved(self).items() if k != "layout"}
        plugins = plugin_modules([self.model.encoding], [k.name for k in self.tasks])
        return canonical_json(d | ({"plugins": plugins} if plugins else {}))

    @staticmethod
    def from_json(text: str) -> Grid:
        d = json.loads(text)
        rcs = [RunConfig.from_dict({"task": k, "model": d["model"], "train": d["train"]})
               for k in d["tasks"]]
        return Grid(tuple(rc.task for rc in rcs), rcs[0].model, rcs[0].train)


def check(grid: Grid, eval_lengths: tuple[int, ...] = (), devices: int | None = None) -> None:
    """Every cell's config is valid, all cells share parameter shapes, and the cells split
    over `devices` devices of the job (None: all that divide the cell count)."""
    if not grid.tasks:
        raise ConfigError("tasks: a grid needs at least one task")
    check_layout(grid.layout)
    check_mesh(grid, devices)
    for t in range(len(grid.tasks)):
        validate(grid.cell_config(t), eval_lengths)
    sizes = {models.vocab_sizes(grid.cell_config(t)) for t in range(len(grid.tasks))}
    if len(sizes) > 1:
        raise ConfigError(f"tasks: cells of one grid must share vocabulary sizes (one parameter "
                          f"shape) but they have {sorted(sizes)}; split them into two grids")


def cell_mesh(grid: Grid, devices: int | None = None):
    """The job's mesh over the cell axis (T x S cells split like seeds; None: one device).
    Left to choose (devices None) in one process, the tasks layout takes the most devices that
    keep tasks whole (a CPU has one device per core by default, and its count need not)."""
    if devices is None and grid.layout == "tasks" and jax.process_count() == 1:
        return seed_mesh(grid.shape[0])
    return seed_mesh(math.prod(grid.shape), devices)


def cell_devices(grid: Grid, devices: int | None = None) -> int:
    """How many devices the grid's cells split over (`cell_mesh`'s size; 1 without a mesh)."""
    mesh = cell_mesh(grid, devices)
    return mesh.size if mesh is not None else 1


def check_mesh(grid: Grid, devices: int | None) -> None:
    block = math.prod(grid.shape) // cell_devices(grid, devices)
    if grid.layout == "tasks" and block % grid.shape[1]:
        raise ConfigError(f"--layout: tasks runs whole tasks on a device, but the "
                          f"{math.prod(grid.shape)} cells split into blocks of {block}, not a "
                          f"multiple of the {grid.shape[1]} seeds; use --layout serial or flat, "
                          "or a device count that keeps tasks whole")


def init_states(grid: Grid) -> train.TrainState:
    """[T * S] stacked states; cell (t, s) starts where task t's seed s starts alone."""
    return train.init_states(grid.cell_config(0), repeat=grid.shape[0])


def _by_task(run_one: Callable, grid: Grid) -> Callable:
    """lax.map over (a device's block of) tasks; a task's seeds as train.seed_axis says
    (unbatched task index)."""
    S = grid.shape[1]
    per_task = train.over_seeds(run_one, S, train.resolve_strategy(grid.cell_config(0)))

    def run(states_C, task_C, n_steps):
        T = task_C.shape[0] // S  # whole tasks per block (check_mesh)
        states_TxS = jax.tree.map(lambda x: x.reshape(T, S, *x.shape[1:]), states_C)
        out = jax.lax.map(lambda a: per_task(a[0], (a[1], n_steps)),
                          (states_TxS, task_C.reshape(T, S)[:, 0]))
        return jax.tree.map(lambda x: x.reshape(T * S, *x.shape[2:]), out)

    return run


def _task_of_cell(grid: Grid) -> np.ndarray:
    T, S = grid.shape
    return np.repeat(np.arange(T, dtype=np.int32), S)


def _serial(run_one: Callable, grid: Grid) -> Callable:
    """lax.map over every cell, no vmap (unbatched task index)."""
    return lambda states_C, task_C, n_steps: jax.lax.map(
        lambda a: run_one(a[0], (a[1], n_steps)), (states_C, task_C))


def _flat(run_one: Callable, grid: Grid) -> Callable:
    """One vmap over every cell: the task index is batched, so lax.switch evaluates every
    task's sampler and selects (cheap next to the model on an accelerator)."""
    return lambda states_C, task_C, n_steps: jax.vmap(run_one, in_axes=(0, (0, None)))(
        states_C, (task_C, n_steps))


# How the cells share the program. Measured here (benchmarks/bench_grid.py, 1L1H, CPU time per
# cell-step): serial 8.5 ms, tasks 9.3 ms, tasks one program after another 10.4 ms; flat
# is for accelerators. Layouts differ in float summation order only, so a program may resume
# under another layout.
LAYOUTS: dict[str, Callable] = {"serial": _serial, "tasks": _by_task, "flat": _flat}


def resolve_layout(layout: str) -> str:
    """"auto": serial on a CPU (the fastest measured there), flat on an accelerator, where
    serial runs the cells one after another, so a program's time grows with its cells (docs/results/
    performance.md, the measurements behind the defaults)."""
    if layout != "auto":
        return layout
    return "serial" if jax.default_backend() == "cpu" else "flat"


def check_layout(layout: str) -> None:
    if resolve_layout(layout) not in LAYOUTS:
        raise ConfigError(f"--layout: unknown layout {layout!r}; use one of {sorted(LAYOUTS)} "
                          "or auto")


def make_grid_runner(grid: Grid, layout: str | None = None,
                     wrap: Callable = lambda f: f, devices: int | None = None) -> Callable:
    """jit(states_C, n_steps) -> (states_C, mean loss per cell over the chunk), cells laid out
    as `layout` says (default: grid.layout), in blocks over the job's devices (`cell_mesh`;
    each device runs its block with the one-cell program, so a cell trains the same on any
    device count). `wrap` decorates the traced function (tests pass
    chex.assert_max_traces(n=1)). One runner per grid, arguments and device share in a
    process: the runner `precompile` compiled is the one `train_program` calls."""
    return _grid_runner(grid, layout, wrap, devices, tuple(local_devices()))


def precompile(grid: Grid, devices: int | None = None) -> None:
    """Compile the grid's training program (and its initial states') in this process before
    `train_program` needs it, by one call of zero steps, so that a caller with other work
    first can compile it beside that work (a profile: while its other instruments run)."""
    make_grid_runner(grid, devices=devices)(init_states(grid), jnp.int32(0))


@clears_on_change
@functools.lru_cache(maxsize=8)
def _grid_runner(grid: Grid, layout: str | None, wrap: Callable, devices: int | None,
                 share: tuple) -> Callable:
    layout = resolve_layout(layout or grid.layout)
    check_layout(layout)
    mesh = cell_mesh(grid, devices)
    t = grid.train
    cfg = grid.cell_config(0)
    samplers = [lambda key, k=k: tasks.sample_batch(k, key, t.batch, t.lmin, t.lmax, t.lmax)
                for k in grid.tasks]

    def run_one(state, rest):
        task, n_steps = rest
        step = train.make_seed_step(cfg, sample=lambda st: jax.lax.switch(
            task, samplers, stream(st.key, DATA, st.step)))
        return train.run_steps(step, state, n_steps)

    run = jax.jit(wrap(shard_seeds(LAYOUTS[layout](run_one, grid), mesh, n_replicated=1)),
                  compiler_options=train.compiler_options(t))
    task_C = place(_task_of_cell(grid), mesh)
    return lambda states_C, n_steps: run(place(states_C, mesh), task_C, n_steps)


def cell_names(grid: Grid) -> list[str]:
    knobs = lambda k: ", ".join(f"{f.name}={getattr(k.opts, f.name)}"
                                for f in dataclasses.fields(k.opts))
    return [f"{k.name}({knobs(k)}) seed {s}" for k in grid.tasks for s in grid.train.seeds]


def cell_labels(grid: Grid) -> list[dict]:
    """How each cell's rows of metrics.jsonl name it: its index, task and seed."""
    S = grid.shape[1]
    return [{"cell": c, "task": name.rsplit(" seed ", 1)[0], "seed": grid.train.seeds[c % S]}
            for c, name in enumerate(cell_names(grid))]


def boundaries(t: TrainConfig, start: int) -> list[int]:
    """Chunk ends after `start`: every t.chunk steps and the last step."""
    return sorted({*range(t.chunk, t.steps + 1, t.chunk), t.steps} - set(range(start + 1)))


def train_program(grid: Grid, path: Path | str, resume: bool = False,
                  on_chunk: Callable | None = None, runner: Callable | None = None,
                  devices: int | None = None) -> train.TrainState:
    """Train every cell to grid.train.steps in the run directory `path` (lgjax.checkpoints: lock,
    digests, strict restores), continuing from its newest intact checkpoint when `resume`; saves
    every train.ckpt_every steps and the last, keeping the last two; on_chunk(step, states,
    loss_C). The cells split over the job's devices and processes (`cell_mesh`); every process
    saves its own block, as for a harness run."""
    t = grid.train
    template = train.abstract_states(grid.cell_config(0), math.prod(grid.shape))
    with preemption.stoppable(), \
            RunDir(path, grid, resume=resume, template=template, keep=2) as run, \
            metrics.Log(path, cell_labels(grid)) as log:
        found = run.restore_latest_intact()
        states = found[1] if found is not None else init_states(grid)
        states = place(states, cell_mesh(grid, devices))
        start = int(first_local(states.step))
        log.resume(start)
        runner = log.watch(runner or make_grid_runner(grid, devices=devices))
        for end in boundaries(t, start):
            states, loss_C = runner(states, jnp.int32(end - start))
            # one exchange per chunk: every process sees every cell's flag, decides alike
            bad_C, loss_C = to_host((states.bad_step, loss_C))
            with run.training():
                train.check_finite(states._replace(bad_step=bad_C),
                                   [f"cell {c}" for c in cell_names(grid)])
            if (end % t.ckpt_every == 0 or end == t.steps) and run.needs_save(end):
                log.flush()  # the rows up to a checkpoint are on disk before it commits
                run.save(end, states)
            if on_chunk is not None:
                on_chunk(end, states, loss_C)
            # a stop's checkpoint off the schedule goes as orbax keeps only the newest two
            preemption.at_boundary(end, lambda s, x=states: _save_if_needed(run, log, s, x),
                                   str(run.path))
            start = end
    return states


def _save_if_needed(run: RunDir, log, step: int, states) -> None:
    if run.needs_save(step):
        log.flush()
        run.save(step, states)


@clears_on_change
@functools.lru_cache(maxsize=8)
def _grid_evaluator(grid: Grid, n_seqs: int, lengths: tuple[int, ...], new_from: int,
                    own_size: bool):
    """One compiled program that measures every cell: lax.map over the cells (as evaluate() maps
    over seeds), each drawing its task's sequences by lax.switch on the cell's task index, as
    training does; the cells split over the job's devices as the serial layout splits them.
    Called once per length (the length an argument, the model reading every length padded to
    the longest) or, `own_size`, once for every length (evaluate's `own_size`)."""
    cfg = grid.cell_config(0)
    apply = models.make_apply(cfg, forward_only=True)
    samplers = [lambda key, n, k=k: tasks.sample_batch(k, key, n_seqs, n, n, max(lengths))
                for k in grid.tasks]
    sampler = lambda task: lambda key, n: jax.lax.switch(task, samplers, key, n)

    def one(params, key_data, task, *length):  # the length: the padded program's argument
        return evaluate.per_seed(lengths, cfg, n_seqs, apply, new_from, own_size,
                                 sample=sampler(task))(params, key_data, *length)

    mesh = seed_mesh(math.prod(grid.shape))
    per_cell = lambda *args: jax.lax.map(lambda a: one(*a), args)
    return jax.jit(shard_seeds(per_cell, mesh),
                   compiler_options=train.compiler_options(grid.train)), mesh


# Where the model's work on the padding outweighs a compilation of the model per length, a grid
# reads each length at its own size: past this many padded token rows (cells x sequences x the
# lengths' padding), between where the two cost alike on one CPU device and on two (the docs'
# Performance page, Profile). Counted over the whole grid, not per device, so that the numbers
# (which the choice moves by float rounding) do not depend on the machine's devices; the
# profile's quick row is below it, its default row above.
OWN_SIZE_ROWS = 1_000_000


def padded_rows(grid: Grid, lengths: tuple[int, ...], n_seqs: int) -> int:
    """The token rows of padding a measurement with every length padded to the longest holds."""
    return math.prod(grid.shape) * n_seqs * sum(max(lengths) - L for L in lengths)


def reads_own_size(grid: Grid, lengths: tuple[int, ...], n_seqs: int) -> bool:
    """Whether evaluate_grid reads each length at its own size by default (OWN_SIZE_ROWS)."""
    return padded_rows(grid, lengths, n_seqs) > OWN_SIZE_ROWS


def evaluate_grid(grid: Grid, params_C, lengths, n_seqs: int, new_from: int = 0,
                  own_size: bool | None = None):
    """evaluate() for every task's seeds, in one program for every cell: LengthEval fields with
    leading axes [T, S, n_lengths]. `own_size`: as evaluate's; None: where the padding's work
    outweighs a compilation per length (reads_own_size)."""
    T, S = grid.shape
    lengths = tuple(int(x) for x in lengths)
    if own_size is None:
        own_size = reads_own_size(grid, lengths, n_seqs)
    run, mesh = _grid_evaluator(grid, n_seqs, evaluate.program_lengths(lengths, own_size),
                                new_from, own_size)
    keys_C = np.tile(np.asarray(seed_keys(grid.train.seeds)), (T, 1))  # cell t*S + s: seed s
    params_C, keys_C, task_C = place((to_host(params_C), keys_C, _task_of_cell(grid)), mesh)
    out = evaluate.call_every_length(run, (params_C, keys_C, task_C), T * S, lengths, own_size,
                                     mesh)
    return jax.tree.map(lambda x: x.reshape(T, S, *x.shape[1:]), out)
