"""Run directories: orbax checkpoints of the stacked (seed-axis) state plus the run's config.

Layout: <run_dir>/config.json and <run_dir>/<step>/ (orbax CheckpointManager). A directory that
holds a different config is refused; restores are strict, against `train.abstract_states(cfg)`.
"""

from __future__ import annotations

import json
from pathlib import Path

import orbax.checkpoint as ocp

from lgjax import train
from lgjax.config import ConfigError, RunConfig
from lgjax.devices import is_leader

CONFIG_FILE = "config.json"


class CheckpointError(RuntimeError):
    pass


def _diff(a: dict, b: dict, prefix="") -> list[str]:
    out = []
    for k in sorted(set(a) | set(b)):
        va, vb = a.get(k), b.get(k)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += _diff(va, vb, f"{prefix}{k}.")
        elif va != vb:
            out.append(f"{prefix}{k}: saved {va!r} vs now {vb!r}")
    return out


def read_config(run_dir: Path | str) -> RunConfig:
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise CheckpointError(f"{path} is missing: {run_dir} is not a run directory written by "
                              "lgjax (point at the folder holding config.json)")
    try:
        return RunConfig.from_json(path.read_text())
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise CheckpointError(f"{path} is corrupt ({err}); restore it or start a new run") from err


def config_diff(saved: RunConfig, now: RunConfig) -> list[str]:
    """Fields that differ between a saved run's config and the one asked for."""
    return _diff(json.loads(saved.to_json()), json.loads(now.to_json()))


class RunDir:
    """Open (or create) a run directory for `cfg`; `resume` allows continuing one."""

    def __init__(self, path: Path | str, cfg: RunConfig, resume: bool = False):
        self.path = Path(path).absolute()
        self.cfg = cfg
        cfg_file = self.path / CONFIG_FILE
        if cfg_file.exists():
            saved = read_config(self.path)
            diffs = _diff(json.loads(saved.to_json()), json.loads(cfg.to_json()))
            if diffs:
                raise ConfigError(f"run directory {self.path} holds a different config ("
                                  + "; ".join(diffs[:6]) + "); choose another run name/--out "
                                  "or delete that directory")
        self.manager = ocp.CheckpointManager(
            self.path, options=ocp.CheckpointManagerOptions(max_to_keep=None, create=True))
        if self.manager.latest_step() is not None and not resume:
            self.manager.close()
            raise ConfigError(f"run directory {self.path} already has checkpoints (latest step "
                              f"{self.manager.latest_step()}); pass --resume to continue it or "
                              "choose another run name")
        if not cfg_file.exists() and is_leader():  # one writer per job; atomic, since the
            tmp = cfg_file.with_suffix(".tmp")   # other processes may be reading it now
            tmp.write_text(cfg.to_json())
            tmp.replace(cfg_file)

    def steps(self) -> list[int]:
        return list(self.manager.all_steps())

    def latest(self) -> int | None:
        return self.manager.latest_step()

    def save(self, step: int, states: train.TrainState) -> None:
        self.manager.save(step, args=ocp.args.StandardSave(states))

    def restore(self, step: int | None = None) -> train.TrainState:
        step = self.latest() if step is None else step
        if step is None:
            raise CheckpointError(f"no complete checkpoint in {self.path}")
        target = train.abstract_states(self.cfg)
        try:
            restored = self.manager.restore(step, args=ocp.args.StandardRestore(target))
        except Exception as err:  # orbax raises several types for unreadable data
            raise CheckpointError(f"checkpoint {step} in {self.path} cannot be restored ({err}); "
                                  "it may be corrupt: delete that step folder to fall back to "
                                  "an earlier one") from err
        return train.TrainState(*restored) if not isinstance(restored, train.TrainState) \
            else restored

    def close(self) -> None:
        self.manager.wait_until_finished()
        self.manager.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_run(path: Path | str) -> tuple[RunConfig, RunDir]:
    """Open an existing run read-only-ish (for analysis): its config and manager."""
    cfg = read_config(path)
    return cfg, RunDir(path, cfg, resume=True)


def train_run(cfg: RunConfig, path: Path | str, resume: bool = False, on_chunk=None,
              runner=None, devices: int | None = None) -> train.TrainState:
    """Train with checkpoints at cfg's schedule; resume from the latest complete one."""
    want = set(train.checkpoint_steps(cfg.train))
    with RunDir(path, cfg, resume=resume) as run:
        states = run.restore() if run.latest() is not None else None

        def hook(step, states, loss_S):
            if step in want and step not in run.steps():
                run.save(step, states)
            if on_chunk is not None:
                on_chunk(step, states, loss_S)

        return train.train(cfg, states, hook, runner, devices)


__all__ = ["RunDir", "train_run", "open_run", "read_config", "CheckpointError"]
