"""The dynamics analyzer: read a run's checkpoint trajectory and compute every metric per step.

Works on any run directory the trainer wrote (also one still running: orbax lists only
committed steps). All seeds of a step are analysed at once (vmapped); nothing is retrained.
Output is tidy rows {seed, step, metric, value} (metric names carry the head and the length,
e.g. "carrier_key/h0", "accuracy@48", "margin/h0@16").
"""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import jax
import numpy as np

from lgjax import checkpoints, evaluate
from lgjax.checkpoints import events, metrics
from lgjax.config import ConfigError, RunConfig
from lgjax.encodings import ENCODINGS
from lgjax.harness import outputs
from lgjax.harness.outputs import check_writable, save, subplots
from lgjax.harness.ranges import option
from lgjax.runs import open_run
from lgjax.studies.implicit_bias import analysis


def static_metrics(params, cfg: RunConfig, lengths: tuple[int, ...]) -> dict:
    """Metrics that need no data: per head, and per length for the margin."""
    K, m = cfg.task.opts.offset, cfg.model
    out = {k: v for k, v in analysis.head_metrics(params, m, K, max(lengths)).items()
           if k != "carrier_profile"}
    for L in lengths if analysis.margin_undefined(m) is None else ():
        mu = analysis.margin(analysis.logit_profile(params, m, L), K)
        out[f"margin@{L}"] = mu
        out[f"margin_bound@{L}"] = analysis.margin_bound(mu, L)
    if ENCODINGS[m.encoding].kind == "additive" and "ape" in params:
        inside, beyond = analysis.ape_row_norms(params, cfg.train.lmax)
        out["ape_norm_in_range"], out["ape_norm_beyond"] = inside, beyond
    return out


def _rows_from(metrics: dict, seeds, step: int) -> list[dict]:
    """One row per seed, and per head of a per-head metric ("margin@16" -> "margin/h0@16")."""
    rows = []
    for name, value in metrics.items():
        base, at, length = name.partition("@")
        for seed, v in zip(seeds, np.asarray(value)):
            labels = [name] if v.ndim == 0 else [f"{base}/h{h}{at}{length}" for h in range(len(v))]
            rows += [{"seed": seed, "step": step, "metric": label, "value": float(x)}
                     for label, x in zip(labels, np.atleast_1d(v))]
    return rows


@functools.lru_cache(maxsize=8)
def _static_over_seeds(cfg: RunConfig, lengths: tuple[int, ...]):
    """One compiled program per (run, lengths), reused for every checkpoint."""
    return jax.jit(jax.vmap(lambda p: static_metrics(p, cfg, lengths)))


def step_rows(params_S, cfg: RunConfig, step: int, lengths, n_eval: int) -> list[dict]:
    static = _static_over_seeds(cfg, tuple(lengths))(params_S)
    ev = evaluate.evaluate(params_S, cfg, lengths, n_eval)
    metrics = dict(static)
    K = cfg.task.opts.offset
    for j, L in enumerate(lengths):
        metrics[f"accuracy@{L}"] = ev.accuracy[:, j]
        metrics[f"selected_offset@{L}"] = ev.selected_offset[:, j]
        metrics[f"peak_height@{L}"] = ev.peak_height[:, j]
        metrics[f"target_attention@{L}"] = ev.mean_attention[:, j, :, L - 1 - K]
        metrics[f"pin_position@{L}"] = np.argmax(ev.mean_attention[:, j], -1)
    return _rows_from(metrics, cfg.train.seeds, step)


def analyze(run_dir: str | Path, lengths=(16, 48), n_eval: int = 1024,
            steps: list[int] | None = None) -> tuple[RunConfig, list[dict], dict[int, str]]:
    """Rows of every intact checkpoint; damaged ones are skipped and returned {step: reason}."""
    run = open_run(run_dir)
    cfg = run.config
    try:
        rows = []
        for step, states in run.readable_steps(steps):
            rows += step_rows(states.params, cfg, step, tuple(lengths), n_eval)
        damaged = dict(run.damaged)
    finally:
        run.close()
    if not rows:
        raise checkpoints.CheckpointError(
            f"{run_dir} has no readable checkpoint"
            + (f" (damaged: {sorted(damaged)})" if damaged else " (killed before its first "
               "save?)") + "; train it first or point at another run")
    return cfg, rows, damaged


def write(rows: list[dict], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "dynamics.json").write_text(json.dumps(rows))
    outputs.write_csv(rows, out / "dynamics.csv")  # columns seed, step, metric, value


EVENTS_SUFFIX = ".dynamics"  # ends the event files of the analysis (replaced when it reruns)


def events_root(run_dir: str | Path) -> Path | None:
    """<run_dir>/tb when tensorboardX is installed and it can be written there, else None (with
    a notice: the event files are an extra, the analysis goes on)."""
    root = Path(run_dir) / events.TB_DIR
    if not events.available():
        return None
    try:
        check_writable(root, "tensorboard")
    except ConfigError as err:
        print(f"lgjax dynamics: no TensorBoard scalars ({err})", file=sys.stderr)
        return None
    return root


def write_events(rows: list[dict], root: Path) -> None:
    """Every row as a scalar of its seed's event folder, beside training's: "margin/h0@16" as
    dynamics/margin/h0/L16 (TensorBoard tags take no "@")."""
    events.remove(root, EVENTS_SUFFIX)
    folders = events.EventFolders(root, suffix=EVENTS_SUFFIX)
    try:
        for r in rows:
            tag = "dynamics/" + r["metric"].replace("@", "/L")
            folders.add(metrics.folder_name(r), tag, r["value"], r["step"])
    finally:
        folders.close()


def series(rows: list[dict], metric: str) -> tuple[np.ndarray, np.ndarray]:
    """(steps, values [seeds, steps]) of one metric."""
    steps, _, grid = metrics.curves([r for r in rows if r["metric"] == metric], "value")
    return steps, grid


def dynamics_figure(rows: list[dict], metrics, stem: Path, title: str = "") -> None:
    """Each metric over training steps: mean over seeds and a min-max band."""
    n = len(metrics)
    cols = min(n, 4)
    fig, axes = subplots(-(-n // cols), cols, figsize=(4 * cols, 3 * -(-n // cols)),
                         squeeze=False)
    for ax, metric in zip(axes.flat, metrics):
        steps, grid = series(rows, metric)
        ax.plot(steps, np.nanmean(grid, 0), marker=".")
        ax.fill_between(steps, np.nanmin(grid, 0), np.nanmax(grid, 0), alpha=0.25)
        ax.set_xscale("symlog", linthresh=1)
        ax.set_title(metric, fontsize=9)
        ax.set_xlabel("step")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(title)
    save(fig, stem, dpi=110)


def summary_table(rows: list[dict], metrics) -> str:
    steps = sorted({r["step"] for r in rows})
    show = [s for s in steps if s in (0, 1, 8, 64) or s == steps[-1] or s % 1000 == 0]
    lines = [f"{'metric':28s}" + "".join(f"{'step ' + str(s):>13s}" for s in show)]
    for metric in metrics:
        st, grid = series(rows, metric)
        cells = "".join(f"{np.nanmean(grid[:, list(st).index(s)]):>13.4f}" for s in show)
        lines.append(f"{metric:28s}{cells}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Config:
    run_dir: str = field(default="", metadata={"positional": True})  # run folder (config.json)
    lengths: tuple[int, ...] = option((16, 48), ge=1)  # evaluation lengths of the per-step metrics
    eval_sequences: int = option(1024, ge=1)  # evaluation sequences per length and step
    out: str = ""  # output folder (default: <run_dir>/dynamics)


def default_metrics(cfg: RunConfig, rows: list[dict], lengths) -> list[str]:
    """What the summary and the figure show: per head, then at the longest length."""
    heads = [f"/h{h}" for h in range(cfg.model.heads)]
    L = max(lengths)
    metrics = [f"{m}{h}" for h in heads for m in ("carrier_key", "carrier_query", "sv_energy",
                                                  "align_shifted")]
    margin = [f"margin{heads[0]}@{L}"] if analysis.margin_undefined(cfg.model) is None else []
    metrics += [*margin, f"accuracy@{L}", f"peak_height{heads[0]}@{L}",
                f"selected_offset{heads[0]}@{L}"]
    return metrics + [m for m in ("ape_norm_in_range", "ape_norm_beyond")
                      if any(r["metric"] == m for r in rows)]


def main(cfg: Config) -> None:
    out = Path(cfg.out or Path(cfg.run_dir) / "dynamics")
    check_writable(out, "--out")  # before the analysis, not after it
    tb = events_root(cfg.run_dir)
    run_cfg, rows, damaged = analyze(cfg.run_dir, cfg.lengths, cfg.eval_sequences)
    write(rows, out)
    if tb is not None:
        write_events(rows, tb)
        print(f"wrote {tb}/seed-*/ TensorBoard scalars dynamics/*")
    metrics = default_metrics(run_cfg, rows, cfg.lengths)
    dynamics_figure(rows, metrics, out / "dynamics", title=str(cfg.run_dir))
    print(summary_table(rows, metrics))
    why = analysis.margin_undefined(run_cfg.model)
    if why is not None:
        print(why)
    print(f"wrote {out}/dynamics.csv, dynamics.json, dynamics.png/.pdf ({len(rows)} rows)")
    if damaged:
        print("skipped damaged checkpoints: " + "; ".join(f"step {s}: {why}"
                                                           for s, why in damaged.items()))
