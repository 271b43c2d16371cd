"""The training driver: train a run with checkpoints on its schedule, resumable.

`train_run(cfg, run_dir)` opens (and locks) the run directory, continues from its newest intact
checkpoint, trains to cfg.train.steps with `lgjax.train.train`, and saves at every scheduled
step. Checkpoint files, digests and locks are `lgjax.checkpoints.rundir`' business; training is
`lgjax.train`'s; this module only joins them.
"""

from __future__ import annotations

from pathlib import Path

from lgjax import preemption, train
from lgjax.checkpoints import RunDir, metrics
from lgjax.config import RunConfig


def train_run(cfg: RunConfig, path: Path | str, resume: bool = False, on_chunk=None,
              runner=None, devices: int | None = None) -> train.TrainState:
    """Train with checkpoints at cfg's schedule; resume from the newest intact one.

    A stop signal (lgjax.preemption) ends training at the next chunk boundary with a checkpoint
    there, scheduled or not; an unscheduled one is deleted once the next scheduled step is
    committed, so a stopped and resumed run holds the steps of one never stopped."""
    want = set(train.checkpoint_steps(cfg.train))
    with preemption.stoppable(), RunDir(path, cfg, resume=resume) as run, \
            metrics.Log(path, metrics.seed_labels(cfg.train.seeds)) as log:
        found = run.restore_latest_intact()
        states = found[1] if found is not None else None
        log.resume(found[0] if found is not None else 0)
        runner = log.watch(runner or train.make_chunk_runner(cfg, devices=devices))
        extra = [s for s in run.steps() if s not in want]  # earlier stops' checkpoints

        def save(step, states):
            if not run.needs_save(step):
                return
            log.flush()  # the rows up to a checkpoint are on disk before it commits
            run.save(step, states)

        def hook(step, states, loss_S):
            if step in want:
                save(step, states)
                if extra and step > max(extra):
                    run.discard_committed(extra)  # (waits for this step's commit first)
                    extra.clear()
            if on_chunk is not None:
                on_chunk(step, states, loss_S)
            preemption.at_boundary(step, lambda s: save(s, states), str(run.path))

        with run.training():
            return train.train(cfg, states, hook, runner, devices)
