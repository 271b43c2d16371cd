"""contract-lab: which relations each positional scheme keeps and which it forgets.

The contract study's lab (no training; docs/studies/contract.md). Four metrics each
(scores.py): shift error of the pair (2, 7), out-of-table fraction, collisions and monotonic
breaks of score(0, d), d = 1..test-1, for three kinds of rows:
  stand-ins    the six pinned scores over the content pair (Q, K);
  registered   every encoding in lgjax.encodings.ENCODINGS (with those of --plugin),
               through its positional-only kernel at init (seed 0) of the one-layer head at
               ModelConfig's defaults (`lab_run_config`), in float64, per head; a content-aware
               encoding has none: its row is the one line that says so;
  trained      with --run-dir: the same kernel with the final parameters of each seed of a run;
               a content-aware encoding's one-layer head run: its positional term (logits minus
               content logits) averaged over --sequences of the run's evaluation data, labelled
               as that (contract/averaged.py); its transformer run: the line that says why not.
A kernel is read at the causal mirror (q = max(i, j), k = min(i, j)), see contracts.kernel_score.
Command: lgjax contract-lab [--plugin my_pkg.my_module] [--run-dir RUN]   (a few s)
Expect: relative, RoPE (to float rounding), ALiBi and NoPE shift-invariant, sinusoidal and learned
not; learned undefined past its table ((test-train)/(test-1) of the distances); NoPE collides on
every pair, the clipped relative bias on every pair past the clip; ALiBi collides on none. Among
the registered: ape undefined past the train horizon like the stand-in; t5 and relclip start as
zero tables, so at init they collide everywhere like nope; rope's kernel is exactly shift-invariant.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import jax
import numpy as np

from lgjax import checkpoints, grid, keys, models, transformer
from lgjax.config import ConfigError, ModelConfig, RunConfig, TaskConfig, TrainConfig
from lgjax.encodings import ENCODINGS, ApeOptions, kernel_undefined
from lgjax.harness import outputs
from lgjax.harness.ranges import option
from lgjax.harness.study import Study
from lgjax.runs import open_run
from lgjax.studies.contract import averaged
from lgjax.studies.contract import scores as contracts

SEED = 0  # registered encodings are profiled at the init of this seed (what its run starts from)


@dataclass(frozen=True)
class Config:
    train: int = 32  # train horizon: rows of the learned table (positions 0..train-1)
    test: int = 96  # distances d = 1..test-1 are scored from query position 0
    shift: int = 17  # common shift applied to the pair (2, 7) for the shift error
    run_dir: str = ""  # a run directory: profile its final parameters, per seed and head
    sequences: int = option(256, ge=1)  # a content-aware run's term is averaged over these
    out: str = "results/contract-lab"  # results.json and the figure


def runs(cfg: Config) -> dict:
    return {}


def lab_run_config(name: str, cfg: Config) -> RunConfig:
    """The fixed config a registered encoding is profiled at: the one-layer head with ModelConfig's
    defaults (d 64, 1 head, RoPE base 1e4, ALiBi slope 1, T5 32 buckets to 128, clip 16, sinusoid
    base 1e4); APE has a row per tested position, and rows from the train horizon on count as
    never trained (TrainConfig.lmax = train), so they are undefined, as in the stand-in."""
    enc = ApeOptions(size=max(ApeOptions.size, cfg.test), oob="untrained") \
        if ENCODINGS[name].options is ApeOptions else None
    model = ModelConfig(encoding=name, enc=enc)
    return RunConfig(TaskConfig(), model, TrainConfig(lmin=1, lmax=cfg.train, seeds=(SEED,)))


def check_run(path: str) -> RunConfig:
    """Everything about --run-dir that can be known without reading arrays."""
    try:
        rc = checkpoints.read_config(path)  # CheckpointError: not a run directory, corrupt
    except checkpoints.CheckpointError:
        if not is_grid_program(path):
            raise
        raise ConfigError(f"--run-dir: {path} is a realizability grid program (several tasks "
                          "trained in one program), not a run; the lab reads the run directory "
                          "of one model on one task (multiseed, transformer, contract-train)"
                          ) from None
    enc = rc.model.encoding
    if enc not in ENCODINGS:
        raise ConfigError(f"--run-dir: {path} trained encoding {enc!r}, which is not registered; "
                          "pass --plugin with the module that registers it")
    if rc.model.arch != "head" and ENCODINGS[enc].kind == "additive":
        raise ConfigError(f"--run-dir: {path} is a {rc.model.arch} with an additive encoding, "
                          "whose positional logit passes LayerNorm: it has no positional-only "
                          "kernel; profile a one-layer head run (arch head)")
    if not checkpoints.step_folders(Path(path)):
        raise checkpoints.CheckpointError(f"{path} holds no checkpoint; train the run first")
    return rc


def is_grid_program(path: str) -> bool:
    try:
        checkpoints.read_config(path, grid.Grid)
        return True
    except checkpoints.CheckpointError:
        return False


def check(cfg: Config) -> None:
    contracts.check(cfg.train, cfg.test, cfg.shift)
    for name, enc in ENCODINGS.items():
        rc = lab_run_config(name, cfg)
        enc.validate(rc.model, rc.train, cfg.test)
    if cfg.run_dir:
        check_run(cfg.run_dir)


def registered(cfg: Config) -> dict:
    """The kernel profile (per head) of every registered encoding at the lab's config."""
    out = {}
    for name, enc in ENCODINGS.items():
        why = kernel_undefined(name, enc)
        if why is not None:
            out[name] = {"kind": enc.kind, "horizon": None, "heads": [], "undefined": why}
            continue
        rc = lab_run_config(name, cfg)
        params = models.init_params(keys.stream(keys.seed_key(SEED), keys.INIT), rc)
        horizon = enc.horizon(rc.model, rc.train)
        out[name] = {"kind": enc.kind, "horizon": horizon, "heads": contracts.kernel_profiles(
            enc.kernel, params, rc.model, horizon, cfg.test, cfg.shift)}
    return out


def trained(path: str, cfg: Config) -> dict:
    """The kernel with each seed's parameters at the run's newest step (restored verified)."""
    run = open_run(path)
    rc = run.config
    with run:
        step = run.latest()
        params_S = run.restore_verified(step).params
    enc = ENCODINGS[rc.model.encoding]
    about = {"run_dir": str(path), "step": step, "steps": rc.train.steps,
            "encoding": rc.model.encoding, "arch": rc.model.arch, "horizon": None,
            "seeds": list(rc.train.seeds)}
    why = kernel_undefined(rc.model.encoding, enc)
    if why is not None and rc.model.arch != "head":
        return about | {"profiles": [], "undefined": f"{why}; its data-averaged term is read "
                       "on a one-layer head run only (a block's states depend on the blocks "
                       "before it)"}
    one = lambda tree, s: jax.tree.map(lambda x: x[s], tree)
    if why is not None:  # what it learned, with the content averaged out (averaged.py)
        return about | {"averaged": averaged.LABEL.format(
            n=cfg.sequences, L=averaged.length(cfg.test, cfg.shift)), "profiles": [
            averaged.profiles(one(params_S, s), rc, seed, cfg.test, cfg.shift, cfg.sequences)
            for s, seed in enumerate(rc.train.seeds)]}
    horizon = enc.horizon(rc.model, rc.train)
    # a transformer's: the params its blocks read (one copy per block for FIRE: each block's
    # heads follow the previous block's, layer-major)
    blocks = ([transformer.encoding_params(params_S, rc.model, i)
               for i in range(rc.model.layers if enc.per_layer else 1)]
              if rc.model.arch != "head" else [params_S])
    profiles = [[head for p in blocks for head in contracts.kernel_profiles(
        enc.kernel, one(p, s), rc.model, horizon, cfg.test, cfg.shift)]
        for s in range(len(rc.train.seeds))]
    return {"run_dir": str(path), "step": step, "steps": rc.train.steps,
            "encoding": rc.model.encoding, "arch": rc.model.arch, "horizon": horizon,
            "seeds": list(rc.train.seeds), "profiles": profiles}


def measure(cfg: Config, trained_runs: dict | None = None) -> dict:
    t0 = time.perf_counter()
    run = trained(cfg.run_dir, cfg) if cfg.run_dir else None  # first: a bad run stops here
    return {"experiment": "contract-lab", "config": asdict(cfg), "pair": list(contracts.PAIR),
            "distances": list(range(1, cfg.test)), "clip": contracts.CLIP,
            "tolerances": {"shift": contracts.SHIFT_TOL, "collide": contracts.COLLIDE,
                           "monotonic": contracts.MONO_TOL},
            "schemes": contracts.lab(cfg.train, cfg.test, cfg.shift),
            "encoding_configs": {n: asdict(lab_run_config(n, cfg)) for n in ENCODINGS},
            "encodings": registered(cfg), "trained": run,
            "wall_seconds": time.perf_counter() - t0}


# ---- table and figure ---------------------------------------------------------------------

def sections(result: dict) -> list[tuple[str, list[tuple[str, tuple | None, list]]]]:
    """The table's sections, each split into the figure's panels: (section title, [(panel
    title, (x, label) of a dashed marker or None, [(row name, legend label, profile)])]). A
    stand-in has a panel of its own, a registered encoding one with a line per head, the
    trained run one with a line per seed and head."""
    c, t = result["config"], result["trained"]
    marks = {"learned": (c["train"], "train horizon"), "relative": (result["clip"], "clip")}
    untrained = lambda horizon: None if horizon is None else (horizon, "untrained from")
    out = [(f"stand-in schemes; learned table {c['train']} rows",
            [(f"stand-in: {name}", marks.get(name), [(name, "", p)])
             for name, p in result["schemes"].items()])]
    reg = [(f"registered: {name}", untrained(e["horizon"]),
            [(name if len(e["heads"]) == 1 else f"{name}/h{h}", f"h{h}", p)
             for h, p in enumerate(e["heads"])]) for name, e in result["encodings"].items()
           if not e.get("undefined")]
    out.append((f"registered encodings: kernel at init (seed {SEED}) of the one-layer head, "
                f"ModelConfig defaults, float64; table rows from {c['train']} on untrained", reg))
    if t is not None and not t.get("undefined"):
        lines = [(f"seed{seed}" if len(ps) == 1 else f"seed{seed}/h{h}", f"seed{seed}/h{h}", p)
                 for seed, ps in zip(t["seeds"], t["profiles"]) for h, p in enumerate(ps)]
        what = t.get("averaged", "kernel with each seed's parameters")
        out.append((f"trained: {t['run_dir']} ({t['encoding']}, {t['arch']}, step {t['step']} "
                    f"of {t['steps']}): {what}",
                    [(f"trained {t['encoding']}, step {t['step']}"
                      + (" (data-averaged)" if "averaged" in t else ""), untrained(t["horizon"]),
                      lines)]))
    return out


def _shift_cell(p: dict) -> tuple[str, str]:
    if p["shift_error"] is None:
        return "undefined", "-"
    return f"{p['shift_error']:.2e}", "yes" if p["shift_invariant"] else "no"


def table(result: dict) -> str:
    c, (i, j) = result["config"], result["pair"]
    rows = [(title, [(name, p) for _, _, lines in panels for name, _, p in lines])
            for title, panels in sections(result)]
    w = max(11, *(len(name) + 2 for _, named in rows for name, _ in named))
    lines = [f"contract lab: pair ({i}, {j}) shifted by {c['shift']}; score(0, d) for "
             f"d = 1..{c['test'] - 1}"]
    for title, named in rows:
        lines += ["", title, f"{'':{w}s}{'shift error':>12s}{'invariant':>11s}"
                  f"{'out-of-table':>14s}{'collisions':>13s}{'mono breaks':>13s}"]
        for name, p in named:
            err, inv = _shift_cell(p)
            pairs = f"{p['collisions']}/{p['defined_pairs']}"
            lines.append(f"{name:{w}s}{err:>12s}{inv:>11s}{p['out_of_table']:>14.3f}"
                         f"{pairs:>13s}{p['monotonic_breaks']:>13d}")
    undefined = undefined_lines(result)
    if undefined:
        lines += ["", "without a positional-only kernel (no row above)", *undefined]
    return "\n".join(lines)


def undefined_lines(result: dict) -> list[str]:
    """One line per registered encoding (and trained run) the kernel metrics do not apply to."""
    out = [f"  {name}: {e['undefined']}" for name, e in result["encodings"].items()
           if e.get("undefined")]
    t = result["trained"]
    if t is not None and t.get("undefined"):
        out.append(f"  trained {t['run_dir']} ({t['encoding']}, step {t['step']}): "
                   f"{t['undefined']}")
    return out


def figure(result: dict, path: Path) -> None:
    """Score against distance, one panel per stand-in, registered encoding and trained run."""
    d = np.asarray(result["distances"])
    spec = [panel for _, panels in sections(result) for panel in panels]
    ncols = 4
    nrows = -(-len(spec) // ncols)
    fig, axes = outputs.subplots(nrows, ncols, figsize=(4 * ncols, 2.8 * nrows), squeeze=False)
    for k, (ax, (title, mark, lines)) in enumerate(zip(axes.flat, spec)):
        for _, label, p in lines:
            ax.plot(d, np.asarray(p["curve"], float), lw=1.2,  # None (undefined): NaN
                    label=label if len(lines) > 1 else None)
        if mark is not None:
            ax.axvline(mark[0], color="0.5", ls="--", lw=1, label=mark[1])
        if mark is not None or len(lines) > 1:
            ax.legend(loc="best", fontsize=7)
        ax.set_title(title, fontsize=10)
        ax.set_xlim(0, d[-1] + 1)
        ax.grid(alpha=0.3)
        if k + ncols >= len(spec):  # the lowest panel of its column
            ax.set_xlabel("distance d (key at d, query at 0)")
        if k % ncols == 0:
            ax.set_ylabel("score(0, d)")
    for ax in axes.flat[len(spec):]:
        ax.axis("off")
    outputs.save(fig, path)


STUDY = Study(__name__, Config, runs, measure, table, check=check, figure=figure)
