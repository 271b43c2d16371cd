"""What every experiment does: train a run (with checkpoints, resumable), evaluate it, write
results and figures. Experiments are configs plus a short `run` built from these pieces."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from lgjax import checkpoints, evaluate
from lgjax.config import RunConfig, validate
from lgjax.devices import seed_mesh


def check_all(configs: list[RunConfig], eval_lengths, devices: int = 0) -> None:
    """Every config error surfaces before anything compiles or touches the disk."""
    for rc in configs:
        validate(rc, tuple(eval_lengths))
        seed_mesh(len(rc.train.seeds), devices or None)


def train(rc: RunConfig, run_dir: Path, resume: bool = False, progress: bool = True,
          devices: int = 0, label: str = ""):
    """Train (or continue, or just reload a finished run when resume=True); (states, seconds)."""
    bar = tqdm(total=rc.train.steps, desc=label or run_dir.name, disable=not progress)

    def tick(step, states, loss_S):
        bar.update(step - bar.n)
        if loss_S is not None:
            bar.set_postfix(loss=f"{float(np.mean(loss_S)):.3f}")

    t0 = time.perf_counter()
    states = checkpoints.train_run(rc, run_dir, resume=resume, on_chunk=tick,
                                   devices=devices or None)
    bar.close()
    return states, time.perf_counter() - t0


def train_eval(rc: RunConfig, run_dir: Path, lengths, n_eval: int, **kw):
    states, t_train = train(rc, run_dir, **kw)
    t0 = time.perf_counter()
    ev = evaluate.evaluate(states.params, rc, lengths, n_eval, kw.get("devices") or None)
    return states, ev, {"train_seconds": t_train, "eval_seconds": time.perf_counter() - t0}


def peak_head(ev: evaluate.LengthEval):
    """Per seed x length: the peak head's height and offset (H = 1: the head itself)."""
    head = np.argmax(ev.peak_height, axis=-1)[..., None]
    pick = lambda a: np.take_along_axis(np.asarray(a), head, axis=-1)[..., 0]
    return pick(ev.peak_height), pick(ev.selected_offset)


def write_json(results: dict, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "results.json"
    path.write_text(json.dumps(results, indent=1, default=_jsonable))
    return path


def _jsonable(x):
    if isinstance(x, np.ndarray | np.generic):
        return x.tolist()
    if hasattr(x, "tolist"):
        return np.asarray(x).tolist()
    raise TypeError(type(x))


SPEC_SCALE = {"seeds": 5, "steps": 4000, "batch": 256, "n_eval": 4096}  # validation studies


def is_reduced(cfg, **scale) -> bool:
    """True when any of the config's scale fields is below the spec's (SPEC_SCALE, overridden)."""
    want = {**SPEC_SCALE, **scale}
    return any(getattr(cfg, k) < v for k, v in want.items() if hasattr(cfg, k))


def mean_sd(a) -> str:
    a = np.asarray(a, float)
    return f"{a.mean():.3f}+-{a.std():.3f}"
