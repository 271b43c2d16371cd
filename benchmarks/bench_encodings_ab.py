"""The training step of each encoding, this tree against another (a before/after check).

Command: python benchmarks/bench_encodings_ab.py OTHER_TREE [--rounds 3] [--steps 200]
  OTHER_TREE: a checkout of lgjax (e.g. `git worktree add /tmp/before <commit>`).
Each round times every encoding's reference step (one head, d = 64, m = 20, batch 256, 8 seeds
vmapped: `lgjax bench`'s S = 8 row) in a fresh process of each tree, the trees alternating, so
both see the same machine; the figure per encoding is the ratio of the medians over rounds
(this tree / the other). No figure here is a wall time to compare across machines.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
ENCODINGS = ("ape", "sinusoidal", "rope", "alibi", "t5", "relclip", "nope")

CHILD = r"""
import json, sys, time
import jax, jax.numpy as jnp
from lgjax import train
from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig
steps, out = int(sys.argv[1]), {}
for enc in sys.argv[2].split(","):
    cfg = RunConfig(TaskConfig(), ModelConfig(encoding=enc), TrainConfig(batch=256,
                                                                         seeds=tuple(range(8))))
    run = train.make_chunk_runner(cfg, strategy="vmap")
    states = jax.block_until_ready(run(train.init_states(cfg), jnp.int32(5))[0])
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        jax.block_until_ready(run(states, jnp.int32(steps)))
        best = min(best, time.perf_counter() - t0)
    out[enc] = 1e3 * best / (steps * 8)
print(json.dumps(out))
"""


def one(tree: Path, steps: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(tree), JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", CHILD, str(steps), ",".join(ENCODINGS)],
                          env=env, capture_output=True, text=True, check=True, cwd=tree)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("other", type=Path)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=200)
    a = p.parse_args()
    runs = {"this": [], "other": []}
    for r in range(a.rounds):
        for name, tree in (("other", a.other), ("this", HERE)) if r % 2 else (
                ("this", HERE), ("other", a.other)):
            runs[name].append(one(tree, a.steps))
    print(f"{'encoding':>11s} {'this ms/seed-step':>18s} {'other':>8s} {'this/other':>11s}")
    rows = {}
    for enc in ENCODINGS:
        this = statistics.median(r[enc] for r in runs["this"])
        other = statistics.median(r[enc] for r in runs["other"])
        rows[enc] = {"this": this, "other": other, "ratio": this / other}
        print(f"{enc:>11s} {this:18.4f} {other:8.4f} {this / other:11.3f}")
    print(json.dumps({"rounds": runs, "summary": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
