"""Table 9's content induction at 2L4H, followed over training: train accuracy (at L0) and LG@60
every chunk, per seed, for one encoding under each cell layout. The layouts differ in float
summation order only (the serial one is a CPU's default, the flat one an accelerator's), so
two devices running one recipe differ by as much as the layouts do, plus their arithmetic.
Where a model is still learning at the recipe's last step, its accuracy there is a point on a
slope, and a run that lags by some steps lands lower.

A GPU also computes float32 matmuls in TensorFloat-32 by default (JAX's default precision:
operands rounded to 10 mantissa bits, float32 accumulation), which a CPU ignores. `--tf32`
emulates that here: every matmul's operands, the backward pass's included, rounded to 10
mantissa bits (to nearest) before a float32 product.

    python experiments/induction_pace.py nope --layouts serial,flat --out OUT --ckpt-root CK
    python experiments/induction_pace.py nope --layouts serial --tf32 --out OUT --ckpt-root CK
    python experiments/induction_pace.py rope --layouts serial --every 50 --steps 1000 ...
    python experiments/induction_pace.py --table9 --out OUT

--table9 reads every serial-layout reading in OUT (the pinned runs and the finer ones) and
prints, step by step, each encoding's train accuracy and LG@60 beside Table 9's, and how many
of its ten numbers are within the claims' tolerances at that step: whether one training budget
gives the study's numbers for every encoding at once.

Resumable: each (encoding, layout) is a run directory under CK and a file of readings in OUT;
a rerun continues the training from its newest checkpoint and keeps the readings made. The
pinned recipe (5 seeds x 3000 steps, chunks of 250); measured on the docs' realizability
differences page.
"""
import argparse
import contextlib
import dataclasses
import functools
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax._src.lax import lax as lax_internal

from lgjax import claims, grid
from lgjax.reproduce.claims import load_claims
from lgjax.studies.realizability import claims as readers
from lgjax.studies.realizability import train as T

LG_LENGTH = 60


def to_tf32(x):
    """x rounded to TensorFloat-32's 10 mantissa bits (to nearest, ties away from zero); the
    gradient passes straight through, so the backward products see rounded cotangents only
    where they are themselves matmul operands."""
    x = jnp.asarray(x)
    if x.dtype != jnp.float32:
        return x
    bits = jax.lax.bitcast_convert_type(x, jnp.uint32)
    rounded = jax.lax.bitcast_convert_type((bits + jnp.uint32(0x1000)) & jnp.uint32(0xFFFFE000),
                                           jnp.float32)
    return x + jax.lax.stop_gradient(rounded - x)


@contextlib.contextmanager
def tf32_matmuls():
    """Inside: every dot_general (flax's layers, einsum, and the ones autodiff's transpose rules
    call for the backward pass) takes TF32-rounded operands; restored on exit."""
    # jax.lax.dot_general is a re-export: the transpose rules call jax's internal module's own
    # name, so the backward pass is rounded only if that one is replaced too
    original, einsum = lax_internal.dot_general, jnp.einsum

    def dot_general(lhs, rhs, *args, **kwargs):
        return original(to_tf32(lhs), to_tf32(rhs), *args, **kwargs)

    jax.clear_caches()  # jnp.einsum's own jit would keep programs traced outside
    lax_internal.dot_general = jax.lax.dot_general = dot_general
    jnp.einsum = functools.partial(einsum, _dot_general=dot_general)  # its default is bound early
    try:
        yield
    finally:
        lax_internal.dot_general = jax.lax.dot_general = original
        jnp.einsum = einsum
        jax.clear_caches()


def readings(g: grid.Grid, params_C, L0: int, eval_sequences: int) -> dict:
    """Per seed: accuracy at L0 (train) and on rows past L0 at LG_LENGTH."""
    ev = grid.evaluate_grid(g, params_C, (L0, LG_LENGTH), eval_sequences, new_from=L0)
    return {"train_acc": np.asarray(ev.accuracy)[0, :, 0].tolist(),
            "lg60": np.asarray(ev.accuracy_new)[0, :, 1].tolist()}


def follow(encoding: str, layout: str, label: str, out: Path, ckpt_root: str,
           every: int = 250, steps: int = 3000) -> list[dict]:
    """Train (or resume) the cell and read it every `every` steps up to `steps`; a recipe other
    than the pinned one (every 250 to 3000) is its own run and file, labelled with it. The
    learning rate has no schedule, so a shorter run's steps are the longer run's first ones."""
    if (every, steps) != (250, 3000):
        label += f"-every{every}-steps{steps}"
    base = T.Config()
    cfg = dataclasses.replace(base, tiers=("2L4H",), encodings=(encoding,),
                              tasks=("induction",), layout=layout, chunk=every,
                              name=f"induction-pace-{label}",
                              run=dataclasses.replace(base.run, steps=steps))
    g = T.program_grid(cfg, "2L4H", encoding)
    path = Path(ckpt_root) / T.program_name(cfg, "2L4H", encoding)
    log = out / f"{encoding}-{label}.jsonl"
    rows = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    done = {r["step"] for r in rows}

    def on_chunk(step, states, loss_C):
        if step in done:
            return
        r = {"step": step, "loss": np.asarray(loss_C).tolist(),
             **readings(g, states.params, cfg.L0, cfg.run.eval_sequences)}
        rows.append(r)
        with log.open("a") as f:
            f.write(json.dumps(r) + "\n")
        print(f"{encoding} {label} step {step}: train acc {np.mean(r['train_acc']):.3f} "
              f"[{', '.join(f'{a:.3f}' for a in r['train_acc'])}], "
              f"LG@{LG_LENGTH} {np.mean(r['lg60']):.3f}", flush=True)

    grid.train_program(g, path, resume=True, on_chunk=on_chunk, devices=1)
    return sorted(rows, key=lambda r: r["step"])


def table9_claims() -> dict:
    """Table 9's claims as the claims checker reads them: {our encoding: Claim}."""
    return {readers.ENCODING.get(c.id[3:], c.id[3:]): c
            for c in load_claims("realizability").claims if c.id.startswith("t9.")}


def within(readings: dict[str, dict], table9: dict) -> int:
    """How many of Table 9's numbers the readings {encoding: {"train_acc": per seed, "lg60":
    per seed}} meet, judged by the claims checker's own rules (its tolerances, inclusive)."""
    words = claims.words_of(readers)
    return sum(o.ok for enc, r in readings.items() for o in claims.apply_rules(
        table9[enc], claims.Measured({k: claims.over_seeds(v) for k, v in r.items()}), words))


def table9(out: Path) -> None:
    table = table9_claims()
    by_enc = {}
    for enc in table:
        rows = {}
        for f in sorted(out.glob(f"{enc}-serial*.jsonl")):
            if "tf32" not in f.name:
                for line in f.read_text().splitlines():
                    r = json.loads(line)
                    rows[r["step"]] = {k: r[k] for k in ("train_acc", "lg60")}
        by_enc[enc] = rows
    steps = sorted(set.intersection(*(set(r) for r in by_enc.values())))
    heads = [f"{e} {c.published['train_acc']}/{c.published['lg60']}" for e, c in table.items()]
    print("step  " + "  ".join(f"{h:>18s}" for h in heads) + "  within")
    for s in steps:
        at = {enc: by_enc[enc][s] for enc in table}
        cells = [f"{np.mean(r['train_acc']):.3f} / {np.mean(r['lg60']):.3f}" for r in at.values()]
        print(f"{s:5d} " + "  ".join(f"{c:>18s}" for c in cells)
              + f"  {within(at, table)}/{2 * len(table)}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("encoding", nargs="?")
    p.add_argument("--layouts", default="serial,flat")
    p.add_argument("--out", required=True)
    p.add_argument("--ckpt-root")
    p.add_argument("--every", type=int, default=250, help="steps between readings")
    p.add_argument("--steps", type=int, default=3000, help="the last step")
    p.add_argument("--table9", action="store_true",
                   help="print the readings in OUT against Table 9 (trains nothing)")
    p.add_argument("--tf32", action="store_true",
                   help="emulate a GPU's TensorFloat-32 matmuls (runs labelled <layout>-tf32)")
    a = p.parse_args()
    out = Path(a.out)
    if a.table9:
        return table9(out)
    if a.encoding is None or a.ckpt_root is None:
        p.error("an encoding and --ckpt-root (or --table9)")
    out.mkdir(parents=True, exist_ok=True)
    for layout in a.layouts.split(","):
        grid.check_layout(layout)
    suffix = "-tf32" if a.tf32 else ""
    with tf32_matmuls() if a.tf32 else contextlib.nullcontext():
        table = {layout + suffix: follow(a.encoding, layout, layout + suffix, out, a.ckpt_root,
                                         a.every, a.steps)
                 for layout in a.layouts.split(",")}
    print(f"\n{a.encoding}, 2L4H induction: seed-mean train accuracy / LG@{LG_LENGTH} by step")
    print("step  " + "  ".join(f"{label:>15s}" for label in table))
    steps = sorted({r["step"] for rows in table.values() for r in rows})
    for s in steps:
        cells = []
        for rows in table.values():
            r = next((r for r in rows if r["step"] == s), None)
            cells.append(f"{np.mean(r['train_acc']):.3f} / {np.mean(r['lg60']):.3f}"
                         if r else "-")
        print(f"{s:5d} " + "  ".join(f"{c:>15s}" for c in cells))


if __name__ == "__main__":
    main()
