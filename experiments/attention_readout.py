"""Does a trained one-layer model read a fixed-offset task through its attention, or around it?

For each seed of a run or grid program (each of its tasks whose rows read a fixed offset K:
skip, shift, prev), on fresh length-L sequences: the model's accuracy; the attention-only
readout's (the token of each scored row's most-attended key, as if the head were the whole
model); the share of scored rows whose most-attended key is i - K; the mean attention mass on
i - K. Where the model is right and the readout is at chance, the MLP decodes the target from a
mixture of tokens that the attention did not resolve.

    python experiments/attention_readout.py RUN_DIR [--length 60] [--sequences 256]

Measured (2026-12-03, 2-core CPU): the realizability 1L1H RoPE skip-3 programs at the five
frequency scales 1 to 0.01 (docs/results/index.md, realizability).
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

from lgjax import models, tasks
from lgjax.grid import Grid
from lgjax.runs import open_run


def readout(att_BxLxL, tokens_BxL, targets_BxL, mask_BxL, logits_BxLxV, offset: int) -> dict:
    """The four shares over the scored rows (mask) of one head's every-row attention."""
    att, tokens = np.asarray(att_BxLxL), np.asarray(tokens_BxL)
    targets, mask = np.asarray(targets_BxL), np.asarray(mask_BxL).astype(bool)
    L = att.shape[-1]
    top_BxL = att.argmax(-1)
    rows = np.broadcast_to(np.arange(L), top_BxL.shape)
    at_offset = np.take_along_axis(att, np.clip(rows - offset, 0, L - 1)[..., None], -1)[..., 0]
    return {"model": float((np.asarray(logits_BxLxV).argmax(-1) == targets)[mask].mean()),
            "readout": float((np.take_along_axis(tokens, top_BxL, 1) == targets)[mask].mean()),
            "top_is_offset": float((top_BxL == rows - offset)[mask].mean()),
            "mass_at_offset": float(at_offset[mask].mean())}


def offset_of(task) -> int | None:
    """K of a task whose every row i reads i - K (prev, skip, shift); None for the others."""
    if task.name == "prev":
        return 1
    return task.opts.offset if task.name in ("skip", "shift") else None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir")
    p.add_argument("--length", type=int, default=60)
    p.add_argument("--sequences", type=int, default=256)
    a = p.parse_args()
    run = open_run(a.run_dir)
    with run:
        cfg, params = run.config, run.restore().params
    grid = cfg if isinstance(cfg, Grid) else None
    T, S = grid.shape if grid else (1, len(cfg.train.seeds))
    for t in range(T):
        rc = grid.cell_config(t) if grid else cfg
        K = offset_of(rc.task)
        if K is None:
            print(f"{rc.task.name}: its rows read no fixed offset; skipped")
            continue
        apply = jax.jit(models.make_apply(rc, forward_only=True))
        b = tasks.sample_batch(rc.task, jax.random.key(123), a.sequences, a.length, a.length,
                               a.length)
        print(f"{rc.task.name} K={K} ({rc.model.encoding} {rc.model.enc}), L = {a.length}: "
              "model acc | attention-only readout acc | rows whose top key is i-K | mass on i-K")
        for s in range(S):
            p_s = jax.tree.map(lambda x, c=t * S + s: x[c], params)
            logits, att = apply(p_s, b.tokens, b.length)
            att = jnp.reshape(att, (att.shape[0], -1, a.length, a.length))[:, 0]  # head 0
            r = readout(att, b.tokens, b.targets, b.mask, logits, K)
            print(f"  seed {rc.train.seeds[s]}: {r['model']:.3f} | {r['readout']:.3f} | "
                  f"{r['top_is_offset']:.3f} | {r['mass_at_offset']:.3f}")


if __name__ == "__main__":
    main()
