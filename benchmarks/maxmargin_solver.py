"""The attention-SVM dual solve on a trained RoPE head at the experiment's scale: steps, time,
min margin and KKT residual of FISTA-with-restart to tolerance, against plain FISTA for a fixed
3000 steps (the earlier solver).

Command: python benchmarks/maxmargin_solver.py RUN_DIR [STEP]   (a RoPE K = 2 run directory)
"""

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from lgjax import keys, tasks
from lgjax.encodings import rope_freqs
from lgjax.runs import open_run
from lgjax.studies.implicit_bias import selector as maxmargin
from lgjax.studies.implicit_bias.maxmargin import active_constraints


def plain_fista(G, valid_A, iters):
    """The earlier solver: FISTA without restart, a fixed number of steps."""
    G = G * (valid_A[:, None] & valid_A[None, :])
    v = jnp.ones(G.shape[0]) * valid_A
    for _ in range(30):
        v = G @ v
        v = v / (jnp.linalg.norm(v) + 1e-30)
    step = 1.0 / (v @ G @ v + 1e-12)
    ones = valid_A.astype(G.dtype)

    def body(_, carry):
        a, y, t = carry
        a_new = jnp.maximum(y - step * (G @ y - ones), 0.0) * valid_A
        t_new = (1 + jnp.sqrt(1 + 4 * t * t)) / 2
        return a_new, a_new + (t - 1) / t_new * (a_new - a), t_new

    a0 = jnp.zeros(G.shape[0])
    alpha, _, _ = jax.lax.fori_loop(0, iters, body, (a0, a0, jnp.float32(1.0)))
    return maxmargin._report(G, alpha, valid_A, ones, iters, 0)


def main(run_dir: str, step: int | None = None, n_seqs: int = 256) -> None:
    run = open_run(run_dir)
    cfg = run.config
    states = run.restore(step)
    run.close()
    t = cfg.train
    batch = tasks.sample_batch(cfg.task, keys.probe(), n_seqs, t.lmin, t.lmax, t.lmax)
    freqs = jnp.asarray(rope_freqs(cfg.model))
    for s in range(len(t.seeds)):
        params = jax.tree.map(lambda x, s=s: x[s], states.params)
        c = maxmargin.constraints(lambda tok, n, p=params: p["embed"][tok], batch.tokens,
                                  batch.length, cfg.task.offset)
        keep = active_constraints(batch, cfg.task.offset)
        c = maxmargin.Constraints(*(x[keep] for x in c))
        G = maxmargin.gram_rotary(c, freqs, t.lmax)
        for name, solve in (("plain FISTA x3000", jax.jit(lambda G, v: plain_fista(G, v, 3000))),
                            ("selector.solve", jax.jit(maxmargin.solve))):
            jax.block_until_ready(solve(G, c.valid_A))  # compile
            t0 = time.perf_counter()
            sol = jax.block_until_ready(solve(G, c.valid_A))
            print(f"seed {t.seeds[s]} constraints {int(c.valid_A.sum())} {name:22s} steps "
                  f"{int(sol.steps):>6d} + {int(sol.rounds):>2d} rounds  "
                  f"{time.perf_counter() - t0:6.2f} s  min margin "
                  f"{float(sol.min_margin):.5f}  KKT {float(sol.kkt_residual):.2e}  gap "
                  f"{float(sol.duality_gap):.2e}")
    np.set_printoptions(precision=4)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else None)
