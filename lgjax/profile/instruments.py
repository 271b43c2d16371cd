"""Each study's instrument for one encoding, as numbers (JSON-able): the contract lab's four
metrics at init, alpha_L with the generic positional-only head, the implicit-bias fixed-offset
runs (K = 1, 2) and the realizability 1L1H grid row, trained through run_study (under
<out>/checkpoints unless `Runs.ckpt_root` says otherwise)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import threading
from pathlib import Path

import numpy as np

from lgjax import grid, keys, models, train
from lgjax.config import RunConfig
from lgjax.encodings import ENCODINGS, kernel_undefined
from lgjax.harness import study
from lgjax.harness.outputs import jsonable
from lgjax.harness.study import RunOptions, run_study
from lgjax.profile.recipes import Recipe
from lgjax.profile.summary import AVERAGED, CONTRACT
from lgjax.runs import open_run
from lgjax.studies.contract import lab
from lgjax.studies.contract import scores as contracts
from lgjax.studies.contract import train as contract_train
from lgjax.studies.implicit_bias import multiseed, prop1
from lgjax.studies.realizability import alpha as A
from lgjax.studies.realizability import generic_head as G
from lgjax.studies.realizability import train as rtrain


def contract_init(name: str, options=None) -> list[dict] | dict:
    """The lab's four metrics of the encoding's positional-only kernel at init, per head (the
    lab's config: the one-layer head, seed 0's init; `options` replace its defaults); a
    content-aware encoding has none: {"undefined": the line that says why}."""
    why = kernel_undefined(name, ENCODINGS[name])
    if why is not None:
        return {"undefined": why}
    cfg = lab.Config()
    rc = lab.lab_run_config(name, cfg)
    if options is not None:
        rc = dataclasses.replace(rc, model=dataclasses.replace(rc.model, enc=options))
    enc = ENCODINGS[name]
    params = models.init_params(keys.stream(keys.seed_key(lab.SEED), keys.INIT), rc)
    return contracts.kernel_profiles(enc.kernel, params, rc.model,
                                     enc.horizon(rc.model, rc.train), cfg.test, cfg.shift)


def alpha(name: str, recipe: Recipe, options=None) -> dict:
    """alpha_L (the pinned selection, on the generic head at m = 32) per task at the spec's
    main setting: {task: {acc_L0, alpha [per length], flags}}; {"undefined": why} where the
    encoding has no positional-only head (content-aware)."""
    enc = ENCODINGS[name]
    if enc.kind == "content" and enc.positional_restriction is not None:
        base, base_options, label = enc.positional_restriction(options or enc.options())
        return alpha(base, recipe, base_options) | {"restriction": label}
    why = A.alpha_undefined(name)
    if why is not None:
        return {"undefined": why}
    cfg = A.Config(encodings=(name,), steps=recipe.alpha_steps, sweep_nums=(16,),
                   sweep_bases=(1e4,), sweep_scales=(1.0,))
    Lmax = max(cfg.lengths)
    opts = (lambda n, b, s: options) if options is not None else \
        (lambda n, b, s: G.spec_options(n, cfg.L0, Lmax, b, s))
    rows = [r for r in G.alpha_rows(cfg, (name,), opts) if r["main"]]
    return {"L0": cfg.L0, "lengths": list(cfg.lengths),
            "tasks": {r["task"]: {k: r[k] for k in ("acc_L0", "alpha", "flags")} for r in rows}}


def _quiet_study(module, cfg) -> dict:
    """The study's results file, without its table (the card prints the numbers) or its figure
    (the card draws its own)."""
    with contextlib.redirect_stdout(io.StringIO()):
        return run_study(module.STUDY, cfg, figure=False)


@dataclasses.dataclass(frozen=True)
class Runs:
    """How the trained instruments' runs run and where they go: the shared run options that
    mean something for a profile (its recipe sets the rest). The defaults are the library's
    (quiet, continuing unfinished runs: what `python -m lgjax.profile.reference` relies on);
    `lgjax profile` passes its flags, whose defaults are those of every other command."""

    ckpt_root: str = ""  # "": <out>/checkpoints
    resume: bool = True
    progress: bool = False
    devices: int = 0

    def root(self, out: Path) -> Path:
        return Path(self.ckpt_root) if self.ckpt_root else out / "checkpoints"


def _run(seeds: int, steps: int, batch: int, eval_sequences: int, results: Path, ckpt: Path,
         M: int, runs: Runs) -> RunOptions:
    """A trained instrument's run options: the recipe's scale, `runs`' how and where."""
    return RunOptions(seeds=seeds, steps=steps, batch=batch, eval_sequences=eval_sequences,
                      out=str(results), ckpt_root=str(ckpt), progress=runs.progress,
                      resume=runs.resume, devices=runs.devices, random_positions=M)


def ib_configs(name: str, recipe: Recipe, out: Path, M: int = 0, runs: Runs = Runs()
               ) -> dict[int, multiseed.Config]:
    """The multiseed runs at K = 1 and 2 (runs under <ckpt root>/<recipe>/)."""
    cfgs = {}
    for K in (1, 2):
        run = _run(recipe.ib_seeds, recipe.ib_steps, recipe.ib_batch, recipe.ib_eval,
                   out / f"multiseed-K{K}", runs.root(out), M, runs)
        cfgs[K] = multiseed.Config(encodings=(name,), K=K, run=run,
                                   run_name=f"{recipe.name}/multiseed-K{K}")
    return cfgs


def rz_config(name: str, recipe: Recipe, out: Path, M: int = 0, runs: Runs = Runs()
              ) -> rtrain.Config:
    run = _run(recipe.rz_seeds, recipe.rz_steps, recipe.rz_batch, recipe.rz_eval,
               out / "realizability-train", runs.root(out), M, runs)
    return rtrain.Config(tiers=recipe.rz_tiers, encodings=(name,), tasks=recipe.rz_tasks,
                         name=f"{recipe.name}/realizability", run=run)


def cm_config(name: str, recipe: Recipe, out: Path, M: int = 0, runs: Runs = Runs(),
              **over) -> contract_train.Config:
    """The contract matrix's row of this encoding: every task family of the recipe, the
    matrix's model and budget (`over`: other contract-train options, e.g. a tiny model)."""
    run = _run(recipe.cm_seeds, recipe.cm_steps, 64, recipe.cm_eval, out / "contract-train",
               runs.root(out) / recipe.name, M, runs)
    return contract_train.Config(tasks=recipe.cm_tasks, schemes=(name,), run=run, **over)


def preflight(name: str, recipe: Recipe, out: Path, M: int = 0, runs: Runs = Runs()) -> None:
    """Every check of the trained instruments' runs, before anything trains or is written."""
    for cfg in ib_configs(name, recipe, out, M, runs).values():
        study.preflight(multiseed.STUDY, cfg)
    study.preflight(rtrain.STUDY, rz_config(name, recipe, out, M, runs))
    if recipe.contract_matrix:
        study.preflight(contract_train.STUDY, cm_config(name, recipe, out, M, runs))


def carrier(run_dir: str, L: int) -> dict:
    """The spec's key carrier fraction ||E[W_K x]||^2 / E[||W_K x||^2] of a rotary encoding's
    trained head per seed, at initialisation beside it, and the argmax offset of the carrier-only
    profile at length L (prop1's measurements, read from the run's final checkpoint)."""
    run = open_run(run_dir)
    final = prop1.carrier_stats(run.restore().params, run.config, L)
    init = prop1.carrier_stats(train.init_states(run.config).params, run.config, L)
    return {"carrier_key": final["carrier_key"].tolist(),
            "carrier_key_init": init["carrier_key"].tolist(),
            "carrier_argmax": final["carrier_argmax"].tolist()}


def contract_trained(run_dir: str) -> tuple[list[list[dict]], str | None]:
    """The lab's four metrics of the kernel each seed learned (per seed, per head), at the lab's
    settings, and None; for a content-aware encoding, of its data-averaged positional term (with
    the spread over sequences, content_sd) and the line that labels it so."""
    t = lab.trained(run_dir, lab.Config())
    keep = AVERAGED if "averaged" in t else CONTRACT
    return [[{k: h[k] for k in keep} for h in seed] for seed in t["profiles"]], t.get("averaged")


def implicit_bias(name: str, recipe: Recipe, out: Path, M: int = 0, runs: Runs = Runs()
                  ) -> dict:
    """Fixed-offset retrieval at K = 1 and 2 (multiseed): accuracy, peak height and selected
    offset per seed x length; the contract lab's metrics of each seed's learned kernel (of a
    content-aware encoding: of its data-averaged positional term, labelled); where
    the encoding has a rotary part, the key carrier fraction per seed."""
    res, lengths = {}, list(multiseed.Config().eval_lengths)
    for K, cfg in ib_configs(name, recipe, out, M, runs).items():
        full = _quiet_study(multiseed, cfg)
        r = full[name]
        res[f"K{K}"] = {k: np.asarray(r[k]).tolist() for k in
                        ("accuracy", "peak_height", "selected_offset")}
        run_dir = full["run_dirs"][f"{cfg.run_name}/{name}"]
        res[f"K{K}"]["contract"], label = contract_trained(run_dir)
        if label is not None:  # content-aware: no kernel, its term averaged over the data
            res[f"K{K}"]["contract_averaged"] = label
        if ENCODINGS[name].kind == "rotary":
            res[f"K{K}"] |= carrier(run_dir, max(lengths))
    res["lengths"], res["chance"] = lengths, 1.0 / 20
    return res


def realizability_trained(name: str, recipe: Recipe, out: Path, M: int = 0,
                          runs: Runs = Runs()) -> dict:
    """The realizability grid row of this encoding: per tier, train accuracy and LG@L per task x
    seed."""
    progs = _quiet_study(rtrain, rz_config(name, recipe, out, M, runs))["programs"]
    return {p["tier"]: json.loads(json.dumps({k: p[k] for k in ("tasks", "lengths", "train_acc",
                                                                  "lg")}, default=jsonable))
            for p in progs}


def contract_matrix(name: str, recipe: Recipe, out: Path, M: int = 0, runs: Runs = Runs(),
                    **over) -> dict:
    """The encoding's row of the contract matrix (trained): per task family, accuracy per seed
    in range, at each extension length (no intervention) and after each PAD shift."""
    r = _quiet_study(contract_train, cm_config(name, recipe, out, M, runs, **over))
    row = {t: r["cells"][t][name] for t in r["tasks"]}
    return {"extend": r["extend"], "shifts": r["shifts"], "learnable": r["learnable"],
            "steps": r["steps"], "tasks": {t: {
                "in_range": c["in_range"]["accuracy"],
                "extend": {L: c["extend"][L]["none"] for L in map(str, r["extend"])},
                "shift": {s: c["shift"][s]["accuracy"] for s in map(str, r["shifts"])}}
                for t, c in row.items()}}


@contextlib.contextmanager
def realizability_compiled_ahead(name: str, recipe: Recipe, out: Path, M: int = 0,
                                 runs: Runs = Runs()):
    """Inside the block, a thread compiles the realizability row's training programs (and their
    initial states), the largest a profile compiles: their tracing and compilation overlap the
    block's work (the other instruments) instead of following it, and the row's training then
    calls them compiled (`grid.precompile`). A finished program is reloaded, not trained, and
    is left alone. A failure here is the training's to report: it compiles the same program.
    Leaving the block waits for the thread."""
    cfg = rz_config(name, recipe, out, M, runs)
    todo = [g for run, g in rtrain.runs(cfg).items()
            if not study.is_finished(Path(cfg.run.ckpt_root) / run, g)]

    def compile_all() -> None:
        for g in todo:
            with contextlib.suppress(Exception):
                grid.precompile(g, runs.devices or None)

    thread = threading.Thread(target=compile_all, name="lgjax-profile-compile", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()


def measure_all(name: str, recipe: Recipe, out: Path, options=None, M: int = 0,
                runs: Runs = Runs()) -> tuple[dict, dict]:
    """(instruments, wall seconds per instrument), in the order of the issue; M > 0: the
    trained instruments train at random positions in [0, M) (randomized positions). The
    realizability row's programs compile while the instruments before it run."""
    import time

    inst, secs = {}, {}

    def measure(key: str, fn) -> None:
        t0 = time.perf_counter()
        inst[key] = fn()
        secs[key] = time.perf_counter() - t0

    with realizability_compiled_ahead(name, recipe, out, M, runs):
        measure("contract", lambda: contract_init(name, options))
        measure("alpha", lambda: alpha(name, recipe, options))
        measure("implicit_bias", lambda: implicit_bias(name, recipe, out, M, runs))
    measure("realizability", lambda: realizability_trained(name, recipe, out, M, runs))
    if recipe.contract_matrix:
        measure("contract_matrix", lambda: contract_matrix(name, recipe, out, M, runs))
    return inst, secs


def plugin_modules(name: str) -> list[str]:
    """The plugin module that registered `name` (recorded in profile.json)."""
    from lgjax.config import plugin_modules as mods

    return mods([name], [RunConfig().task.name])
