"""The cost of each encoding's training gradient (forward + backward of the loss) as a ratio to
RoPE's, both measured in this process, rounds interleaved.

Command: python benchmarks/content_cost.py [--encodings cope,fox,...] [--lengths 16,64]
                                           [--rounds 5] [--reps 20] [--out FILE.json]
Model: `lgjax bench`'s reference step (one head, d = 64, m = 20, batch 256, Adam's loss), every
sequence at length L (lmin = lmax = L). Per encoding two heads: the one its training uses
(models.head_path: the general head for a content-aware encoding, an exact fast form where one
applies) and the general head itself. Each round times every (encoding, head) as the least of 3
chunks of `reps` calls; a ratio is the median over rounds of (encoding / RoPE in that round), so
both sides of a ratio saw the same machine within seconds of each other. RoPE's own head is its
fast rotary form; the general-head ratio is against RoPE on the general head.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import jax

from lgjax import models, tasks, train
from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig

ENCODINGS = ("cope", "fox", "dape", "prope", "rope_partial", "rope_longrope")


def gradient(encoding: str, L: int, path: str | None):
    """A jitted gradient of the loss and its batch, at the reference step's scale."""
    cfg = RunConfig(TaskConfig(), ModelConfig(encoding=encoding),
                    TrainConfig(batch=256, lmin=L, lmax=L))
    apply = models.make_apply(cfg, path)
    params = models.init_params(jax.random.key(0), cfg)
    batch = tasks.sample_batch(cfg.task, jax.random.key(1), 256, L, L, L)
    grad = jax.jit(jax.grad(lambda p, b: train.loss_fn(p, b, apply)))
    jax.block_until_ready(grad(params, batch))  # compile
    return lambda: grad(params, batch), models.head_path(cfg.model) if path is None else path


def best_ms(fn, reps: int) -> float:
    def chunk():
        t0 = time.perf_counter()
        for _ in range(reps):
            out = fn()
        jax.block_until_ready(out)
        return time.perf_counter() - t0
    return 1e3 * min(chunk() for _ in range(3)) / reps


def measure(encodings, lengths, rounds: int, reps: int) -> list[dict]:
    rows = []
    for L in lengths:
        fns = {(e, head): gradient(e, L, None if head == "own" else "general")
               for e in ("rope", *encodings) for head in ("own", "general")}
        ms = {k: [] for k in fns}
        for _ in range(rounds):
            for k, (fn, _) in fns.items():
                ms[k].append(best_ms(fn, reps))
        for e in encodings:
            ratio = lambda head, e=e, ms=ms: statistics.median(
                a / b for a, b in zip(ms[(e, head)], ms[("rope", head)], strict=True))
            rows.append({"encoding": e, "L": L, "path": fns[(e, "own")][1],
                         "ms_own": statistics.median(ms[(e, "own")]),
                         "ms_general": statistics.median(ms[(e, "general")]),
                         "rope_ms_fast": statistics.median(ms[("rope", "own")]),
                         "rope_ms_general": statistics.median(ms[("rope", "general")]),
                         "ratio_own_to_rope": ratio("own"),
                         "ratio_general_to_rope_general": ratio("general")})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--encodings", default=",".join(ENCODINGS))
    p.add_argument("--lengths", default="16,64")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--out", default="")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else None
    rows = measure(a.encodings.split(","), [int(x) for x in a.lengths.split(",")], a.rounds,
                   a.reps)
    print(f"{'encoding':14s}{'L':>4s}  {'its head':14s}{'ms':>8s}{'x rope':>8s}"
          f"{'general ms':>12s}{'x rope (general)':>18s}")
    for r in rows:
        print(f"{r['encoding']:14s}{r['L']:>4d}  {r['path']:14s}{r['ms_own']:>8.2f}"
              f"{r['ratio_own_to_rope']:>8.2f}{r['ms_general']:>12.2f}"
              f"{r['ratio_general_to_rope_general']:>18.2f}")
    info = {"backend": jax.default_backend(), "device": str(jax.devices()[0]),
            "load_at_start": load, "wall_s": time.perf_counter() - t0, "rows": rows}
    print(f"{info['device']}, {info['wall_s']:.0f} s")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(info, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
