"""Table 9's content induction at 2L4H under two readings of "the previous occurrence": lgjax's
`induction` task scores row i on the token after the most recent earlier occurrence of tokens[i];
`induction_first` (registered here, as a plugin would) on the token after the first one, so the
evidence recedes as the sequence grows. The pinned recipe (5 seeds x 3000 steps), one program per
encoding; prints train accuracy and LG@L per seed.

    python experiments/induction_readings.py first rope,alibi --out OUT --ckpt-root CK
    python experiments/induction_readings.py recent rope --out OUT --ckpt-root CK

Measured (2026-12-02, 2-core CPU beside other jobs, ~11-13 min per encoding):
docs/results/index.md, realizability.
"""
import argparse
import dataclasses
import time

import jax.numpy as jnp

import lgjax
from lgjax import tasks
from lgjax.harness.study import run_study
from lgjax.studies.realizability import train as T


def induction_first(key, length, Lpad, cfg):
    """Row i reads the token after the first earlier occurrence of tokens[i] (if any)."""
    tokens, pos = tasks._content(key, length, Lpad, cfg.vocab)
    same_PxP = (tokens[:, None] == tokens[None, :]) & (pos[None, :] < pos[:, None])
    first_occ = jnp.min(jnp.where(same_PxP, pos[None, :], Lpad), axis=1)
    targets, mask = tasks._rows(tokens, length, jnp.where(first_occ < Lpad, first_occ + 1, -1))
    return tasks.Example(tokens, length, targets, mask)


TASK = {"first": "inductionfirst", "recent": "induction"}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("reading", choices=sorted(TASK))
    p.add_argument("encodings", help="comma-separated, e.g. rope,alibi")
    p.add_argument("--out", required=True)
    p.add_argument("--ckpt-root", required=True)
    args = p.parse_args()
    # a realizability task name has no "-" in its base (task_config reads "skip-3" as skip, 3)
    lgjax.register_task("inductionfirst", tasks.Task("all", lambda c: 2,
                                                     sample_content=induction_first))
    for enc in args.encodings.split(","):
        run = dataclasses.replace(T.Config().run, out=f"{args.out}/{args.reading}-{enc}",
                                  ckpt_root=args.ckpt_root, progress=False, resume=True,
                                  devices=1)
        cfg = dataclasses.replace(T.Config(), tiers=("2L4H",), encodings=(enc,),
                                  tasks=(TASK[args.reading],),
                                  name=f"induction-{args.reading}-{enc}", run=run)
        t0 = time.perf_counter()
        run_study(T.STUDY, cfg)
        print(f"{args.reading} {enc}: {time.perf_counter() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
