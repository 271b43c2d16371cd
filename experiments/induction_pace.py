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

from lgjax import grid
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


def follow(encoding: str, layout: str, label: str, out: Path, ckpt_root: str) -> list[dict]:
    cfg = dataclasses.replace(T.Config(), tiers=("2L4H",), encodings=(encoding,),
                              tasks=("induction",), layout=layout,
                              name=f"induction-pace-{label}")
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("encoding")
    p.add_argument("--layouts", default="serial,flat")
    p.add_argument("--out", required=True)
    p.add_argument("--ckpt-root", required=True)
    p.add_argument("--tf32", action="store_true",
                   help="emulate a GPU's TensorFloat-32 matmuls (runs labelled <layout>-tf32)")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for layout in a.layouts.split(","):
        grid.check_layout(layout)
    suffix = "-tf32" if a.tf32 else ""
    with tf32_matmuls() if a.tf32 else contextlib.nullcontext():
        table = {layout + suffix: follow(a.encoding, layout, layout + suffix, out, a.ckpt_root)
                 for layout in a.layouts.split(",")}
    print(f"\n{a.encoding}, 2L4H induction: seed-mean train accuracy by step")
    print("step  " + "  ".join(f"{label:>11s}" for label in table))
    steps = sorted({r["step"] for rows in table.values() for r in rows})
    for s in steps:
        vals = [next((np.mean(r["train_acc"]) for r in rows if r["step"] == s), np.nan)
                for rows in table.values()]
        print(f"{s:5d} " + "  ".join(f"{v:11.3f}" for v in vals))


if __name__ == "__main__":
    main()
