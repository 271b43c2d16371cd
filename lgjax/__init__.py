"""lgjax: length generalization of attention under positional encodings, in JAX.

The public face (each name imported on first use, so `lgjax --help` stays fast):
  register_encoding, register_task      a user's encodings and tasks (lgjax.plugins)
  Encoding, Task                        what they register (lgjax.encodings, lgjax.tasks)
  RunConfig, TaskConfig, ModelConfig, TrainConfig, ConfigError   configs (lgjax.config)
  run_study, RunOptions                 the harness (lgjax.harness.study)
  open_run                              a run directory read-only: config, steps, restore(step),
                                        metrics(), dynamics() (lgjax.runs)
"""

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time `__getattr__` imports on use
    from lgjax.config import ConfigError, ModelConfig, RunConfig, TaskConfig, TrainConfig
    from lgjax.encodings import Encoding
    from lgjax.harness.study import RunOptions, run_study
    from lgjax.plugins import register_encoding, register_task
    from lgjax.runs import open_run
    from lgjax.tasks import Task

_PUBLIC = {
    "register_encoding": "lgjax.plugins", "register_task": "lgjax.plugins",
    "Encoding": "lgjax.encodings", "Task": "lgjax.tasks",
    "RunConfig": "lgjax.config", "TaskConfig": "lgjax.config", "ModelConfig": "lgjax.config",
    "TrainConfig": "lgjax.config", "ConfigError": "lgjax.config",
    "run_study": "lgjax.harness.study", "RunOptions": "lgjax.harness.study",
    "open_run": "lgjax.runs",
}
# written out, as type checkers and linters read it (tests/test_public_names.py holds it, the
# TYPE_CHECKING block and _PUBLIC to the same names)
__all__ = ["ConfigError", "Encoding", "ModelConfig", "RunConfig", "RunOptions", "Task",
           "TaskConfig", "TrainConfig", "open_run", "register_encoding", "register_task",
           "run_study"]


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'lgjax' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)


def __dir__():
    return sorted({*globals(), *_PUBLIC})
