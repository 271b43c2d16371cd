"""Table 10's frequency scale 0.01 (1L1H, RoPE, skip-3): what lets lgjax's model learn the task
where the study's could not. The realizability recipe (L0 = 20, d = 64, Adam 1e-3, no weight
decay, batch 64, 3000 steps) with one element changed at a time; the head followed over
training on a fixed batch of length-L0 sequences, every `--every` steps:

  * the attention's log-weights by offset (0..6; rows i >= 6), which are the logits up to a
    per-row constant: `gap3` = logit(3) - max(logit(2), logit(4)) (> 0: the head resolves the
    offset), `slope` = (logit(0) - logit(3)) / 3 (a recency ramp), the mass on offset 3;
  * the Frobenius norms of W_Q and W_K, and the rotary pair that carries the positional part
    of the logits (largest theta_i |W_Q pair i| |W_K pair i|), with its angle per position;
  * the model's accuracy on that batch.

At the end: train accuracy at L0 and LG@60 (rows i >= L0 at length 60) on fresh sequences.
Resumable per variant (a finished one is read back from OUT/<variant>.json).

    python experiments/rope_scale_recipe.py --out OUT [--scale 0.01] [--seeds 3] \
        [--variants spec,wd1e-4,wd1e-2,steps1000,lr1e-4,lr3e-3,init0.1] [--x64] [--figure PNG]

--x64 trains every variant in float64 (jax's x64 mode; the initial state is the float32 run's,
cast, so the two differ only by the precision of every step after), written as
<variant>-x64.json.

--figure draws the probe batch's accuracy over training per variant (left) and the spec run's
attention log-weights by offset at a few steps (right).

Measured: docs/studies/differences/realizability.md.
"""
import argparse
import dataclasses
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from lgjax import evaluate, models, tasks, train
from lgjax.encodings import rope_freqs64
from lgjax.harness.study import RunOptions
from lgjax.studies.realizability import train as T

K, L_EVAL, OFFSETS = 3, 60, 7


def base_config(scale: float, seeds: int):
    cfg = T.Config(tiers=("1L1H",), encodings=("rope",), tasks=(f"skip-{K}",), rope_scale=scale,
                   run=RunOptions(seeds=seeds, steps=3000, batch=64, eval_sequences=1024))
    return cfg, T.program_grid(cfg, "1L1H", "rope").cell_config(0)


def variant(rc, name: str):
    """(the run's config, a transform of the initial params) for one recipe change."""
    t = rc.train
    if name == "spec":
        return rc, None
    if name.startswith("wd"):  # coupled L2 on every parameter
        every = tuple(jax.eval_shape(lambda: models.init_params(jax.random.key(0), rc)).keys())
        return dataclasses.replace(rc, train=dataclasses.replace(
            t, weight_decay=float(name[2:]), decay_params=every)), None
    if name.startswith("steps"):
        return dataclasses.replace(rc, train=dataclasses.replace(t, steps=int(name[5:]))), None
    if name.startswith("lr"):
        return dataclasses.replace(rc, train=dataclasses.replace(t, lr=float(name[2:]))), None
    if name.startswith("initall"):  # every dense kernel (not the embedding, not LayerNorm)
        f = float(name[7:])
        return rc, lambda p: jax.tree_util.tree_map_with_path(
            lambda path, x: x * f if getattr(path[-1], "key", None) == "kernel" else x, p)
    if name.startswith("init"):  # W_Q and W_K start smaller (or larger) by this factor
        f = float(name[4:])
        return rc, lambda p: {**p, "block0": {**p["block0"], **{
            w: {"kernel": p["block0"][w]["kernel"] * f} for w in ("query", "key")}}}
    raise SystemExit(f"--variants: unknown variant {name!r} (spec, wdX, stepsN, lrX, initX, "
                     "initallX)")


def probe(rc):
    """Per-seed head metrics on one fixed batch of length-L0 sequences (jitted, vmapped)."""
    L0 = rc.train.lmax
    batch = tasks.sample_batch(rc.task, jax.random.key(7), 256, L0, L0, L0)
    apply = models.make_apply(rc, forward_only=True)
    theta_P = jnp.asarray(rope_freqs64(rc.model), jnp.float32)
    rows = jnp.arange(OFFSETS - 1, L0)

    def one(p):
        logits, att = apply(p, batch.tokens, batch.length)
        att_BxLxL = jnp.reshape(att, (att.shape[0], -1, L0, L0))[:, 0]
        logw = jnp.log(jnp.maximum(att_BxLxL, 1e-30))
        by_offset = jnp.stack([logw[:, rows, rows - o].mean() for o in range(OFFSETS)])
        mass3 = att_BxLxL[:, rows, rows - K].mean()
        acc = ((logits.argmax(-1) == batch.targets) & batch.mask).sum() / batch.mask.sum()
        wq, wk = p["block0"]["query"]["kernel"][:, 0], p["block0"]["key"]["kernel"][:, 0]
        pair = lambda w: jnp.linalg.norm(w.reshape(w.shape[0], -1, 2), axis=(0, 2))
        carry_P = theta_P * pair(wq) * pair(wk)
        top = jnp.argmax(carry_P)
        return {"logit_by_offset": by_offset - by_offset[0],
                "gap3": by_offset[K] - jnp.maximum(by_offset[K - 1], by_offset[K + 1]),
                "slope": (by_offset[0] - by_offset[K]) / K, "mass3": mass3, "acc": acc,
                "wq": jnp.linalg.norm(wq), "wk": jnp.linalg.norm(wk), "top_pair": top,
                "top_angle": theta_P[top], "top_share": carry_P[top] / carry_P.sum()}

    return jax.jit(jax.vmap(one))


def run_variant(rc, transform, every: int) -> dict:
    states = train.init_states(rc)
    if transform is not None:
        states = states._replace(params=jax.vmap(transform)(states.params))
    if jax.config.jax_enable_x64:  # params and optimizer moments alike: a scan's carry keeps
        # its dtype, so a float32 moment updated by a float64 gradient would not fit it
        states = jax.tree.map(
            lambda x: x.astype(jnp.float64) if x.dtype == jnp.float32 else x, states)
    measure, rows = probe(rc), []

    def on_chunk(step, states, loss_S):
        if step % every == 0 or step == rc.train.steps:
            m = jax.tree.map(lambda x: np.asarray(x).tolist(), measure(states.params))
            rows.append({"step": int(step), **m})

    states = train.train(dataclasses.replace(rc, train=dataclasses.replace(
        rc.train, chunk=min(rc.train.chunk, every))), states, on_chunk=on_chunk)
    ev = evaluate.evaluate(states.params, rc, (rc.train.lmax, L_EVAL), 1024,
                           new_from=rc.train.lmax)
    return {"train_acc": np.asarray(ev.accuracy)[:, 0].tolist(),
            "lg60": np.asarray(ev.accuracy_new)[:, 1].tolist(), "dynamics": rows}


def show(name: str, r: dict) -> str:
    last = r["dynamics"][-1]
    mean = lambda k: float(np.mean(last[k]))
    return (f"{name:>10s} | train {np.mean(r['train_acc']):.3f} LG@60 {np.mean(r['lg60']):.3f} "
            f"(seeds {' '.join(f'{x:.2f}' for x in r['lg60'])}) | gap3 {mean('gap3'):+.2f} "
            f"slope {mean('slope'):.2f} mass3 {mean('mass3'):.3f} | |Wq| {mean('wq'):.1f} "
            f"|Wk| {mean('wk'):.1f} | pair {int(np.median(last['top_pair']))} "
            f"({mean('top_share'):.2f} of it) | {r['wall_s']:.0f} s")


def figure(runs: dict[str, dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(8.4, 3.0), dpi=90)
    for name, r in runs.items():
        steps = [row["step"] for row in r["dynamics"]]
        left.plot(steps, [np.mean(row["acc"]) for row in r["dynamics"]], label=name)
    left.set(xlabel="step", ylabel="accuracy at L0 (probe batch)", ylim=(0, 1))
    left.legend(fontsize=7, ncol=2)
    spec = runs.get("spec")
    if spec is not None:
        for row in spec["dynamics"]:
            if row["step"] in (0, 500, 1000, 1250, 3000):
                right.plot(range(OFFSETS), np.mean(row["logit_by_offset"], 0), marker="o",
                           ms=3, label=f"step {row['step']}")
        right.axvline(K, color="grey", lw=0.5, ls="--")
        right.set(xlabel="offset i - j", ylabel="logit - logit(offset 0)", title="spec")
        right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--scale", type=float, default=0.01)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--every", type=int, default=250)
    p.add_argument("--variants", default="spec,wd1e-4,wd1e-2,steps1000,lr1e-4,lr3e-3,init0.1")
    p.add_argument("--x64", action="store_true", help="train in float64 (jax x64 mode)")
    p.add_argument("--figure", default="")
    a = p.parse_args()
    if a.x64:
        jax.config.update("jax_enable_x64", True)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    _, rc = base_config(a.scale, a.seeds)
    runs = {}
    for name in a.variants.split(","):
        path = out / f"scale{a.scale:g}-{name}{'-x64' if a.x64 else ''}.json"
        if not path.exists():
            rc_v, transform = variant(rc, name)
            t0 = time.perf_counter()
            r = run_variant(rc_v, transform, a.every)
            path.write_text(json.dumps(r | {"wall_s": time.perf_counter() - t0}))
        runs[name] = json.loads(path.read_text())
        print(show(name, runs[name]), flush=True)
    if a.figure:
        figure(runs, a.figure)


if __name__ == "__main__":
    main()
