"""Run directories: orbax checkpoints of a run (or a grid program) with its config, digests and
a writer's lock; `driver.train_run` joins them to the trainer.

  rundir     RunDir (open, check, save, restore the newest intact step), read_config
  folders    which numbered folders are checkpoints (stray ones are kept out of orbax's sight)
  integrity  digests of every saved step, atomic writes, damage reports
  lock       one writer per run directory
  ledger     the seconds of training to each checkpoint, across the processes that trained it
  driver     train a run with checkpoints on its schedule, resumable
  metrics    metrics.jsonl: per-seed loss at every chunk boundary, as a run trains
  events     the same as TensorBoard scalars, one folder per seed (with tensorboardX)
"""

from lgjax.checkpoints.integrity import CheckpointError
from lgjax.checkpoints.rundir import (
    CONFIG_FILE,
    RunDir,
    check_run_dir,
    ocp,
    read_config,
    step_folders,
)

__all__ = ["CONFIG_FILE", "CheckpointError", "RunDir", "check_run_dir", "ocp", "read_config",
           "step_folders"]
