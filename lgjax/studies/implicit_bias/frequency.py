"""frequency: the rotary base sets the kernel g(s) = sum_i cos(s theta_i); does selection hold?

docs/studies/implicit-bias.md, experiment `frequency`. RoPE bases {1e3, 1e4, 1e5} at
K = 2 (the study's setting), K = 1 as an extra row; 5 seeds, 4000 steps, batch 256; accuracy at
48 and the selected offset at 32 (and at every length). g is read from the encoding's own
positional-only kernel.
Command: lgjax frequency        (~3 min here)
Expect: selection at -K for every base, mild loss at the largest base.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from lgjax.config import ConfigError, ModelConfig, RunConfig, TaskConfig
from lgjax.encodings import ENCODINGS, RopeOptions
from lgjax.harness import study
from lgjax.harness.ranges import option
from lgjax.harness.study import RunOptions, Study
from lgjax.studies.implicit_bias import common
from lgjax.studies.implicit_bias import figures as plots


@dataclass(frozen=True)
class Config:
    bases: tuple[float, ...] = option(
        (1e3, 1e4, 1e5), gt=1)  # rotary bases, one run each per offset
    Ks: tuple[int, ...] = (2, 1)  # target offsets: the first is the study's, the rest extra rows
    eval_lengths: tuple[int, ...] = (16, 24, 32, 48)  # accuracy and selected-offset lengths
    offset_length: int = 32  # the length whose selected offset the table reports
    run: RunOptions = RunOptions(seeds=5)  # shared options


def run_config(cfg: Config, base: float, K: int) -> RunConfig:
    return study.run_config(cfg, TaskConfig.of("fixed_offset", offset=K),
                             ModelConfig("rope", enc=RopeOptions(base=base)))


def row_name(base: float, K: int, main_K: int) -> str:
    """The study's K keeps the bare base as its row name; extra offsets are prefixed."""
    return f"{base:g}" if K == main_K else f"K{K}/{base:g}"


def runs(cfg: Config) -> dict[str, RunConfig]:
    return {f"frequency/K{K}/base{b:g}": run_config(cfg, b, K) for K in cfg.Ks for b in cfg.bases}


def check(cfg: Config) -> None:
    if cfg.offset_length not in cfg.eval_lengths:
        raise ConfigError(f"--offset-length: {cfg.offset_length} is not one of --eval-lengths "
                          f"{cfg.eval_lengths}; add it there")
    if not cfg.Ks:
        raise ConfigError("--Ks: give at least one offset, e.g. 2,1")


def kernel_ratios(cfg: ModelConfig, far: range) -> dict:
    """g(1)/g(0) and max over s in `far` of g(s)/g(0), g the encoding's positional kernel."""
    s = jnp.asarray([0, 1, *far])
    g = np.asarray(ENCODINGS[cfg.encoding].kernel({}, jnp.zeros_like(s), s, cfg))[:, 0]
    return {"g1_over_g0": float(g[1] / g[0]), "max_far_over_g0": float(g[2:].max() / g[0])}


def measure(cfg: Config, trained: dict) -> dict:
    j = cfg.eval_lengths.index(cfg.offset_length)
    far = range(4, max(cfg.eval_lengths))
    res = {"lengths": list(cfg.eval_lengths), "bases": list(cfg.bases), "Ks": list(cfg.Ks),
           "K": cfg.Ks[0], "offset_length": cfg.offset_length, "far": [far.start, far.stop - 1],
           "rows": []}
    for K in cfg.Ks:
        for base in cfg.bases:
            t = trained[f"frequency/K{K}/base{base:g}"]
            ev = common.evaluate_run(t, cfg.eval_lengths, cfg.run)
            _, offset = common.peak_head(ev)
            name = row_name(base, K, cfg.Ks[0])
            res[name] = {**kernel_ratios(t.config.model, far), "K": K, "base": base,
                         "accuracy": ev.accuracy, "selected_offset": offset,
                         "selected_offset_at_length": offset[:, j]}
            res["rows"].append(name)
    return res


figure = plots.frequency_figure  # (result, stem): drawn from the results alone


def table(res: dict) -> str:
    L, Lo = max(res["lengths"]), res["offset_length"]
    lo, hi = res["far"]
    lines = [f"{'K':>3s}{'base':>8s}{'g(1)/g(0)':>11s}{f'max g(s)/g(0), s={lo}..{hi}':>24s}"
             f"{'acc@' + str(L) + ' (mean+-std)':>22s}{'offset@' + str(Lo) + ' by seed':>22s}"
             f"{'offsets (all cells)':>22s}"]
    for name in res["rows"]:
        r = res[name]
        acc = np.asarray(r["accuracy"])[:, -1]
        offs = sorted(set(np.asarray(r["selected_offset"]).ravel().tolist()))
        lines.append(f"{r['K']:>3d}{r['base']:>8g}{r['g1_over_g0']:>11.3f}"
                     f"{r['max_far_over_g0']:>24.3f}{common.mean_sd(acc):>22s}"
                     f"{str(list(r['selected_offset_at_length'])):>22s}{str(offs):>22s}")
    return "\n".join(lines)


STUDY = Study(__name__, Config, runs, measure, table, check=check, figure=figure)
