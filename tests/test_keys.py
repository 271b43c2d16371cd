"""lgjax.keys computes threefry unrolled on a CPU: the same bits as JAX's own CPU lowering (a
loop), in fewer ops."""

import json
import os
import subprocess
import sys

import jax
import numpy as np

import lgjax.keys  # noqa: F401 -- what registers the unrolled rule in this process

# Draws through every path lgjax takes to random numbers: key derivation, a training batch, an
# evaluation batch, parameter init (head and transformer), and jax.random's own samplers.
DRAWS = """
import jax, numpy as np
from lgjax import keys, models, tasks
from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig

def draws():
    k = keys.seed_key(3)
    batch = tasks.sample_batch(TaskConfig(), keys.stream(k, keys.DATA, 7), 64, 8, 16, 16)
    evals = tasks.sample_batch(TaskConfig.of("copy"), keys.stream(k, keys.EVAL, 40), 32, 40, 40,
                               40)
    head = RunConfig(TaskConfig(), ModelConfig(encoding="rope"), TrainConfig())
    tr = RunConfig(TaskConfig.of("prev"), ModelConfig(arch="transformer", encoding="alibi",
                                                      d=16, heads=2, layers=1), TrainConfig())
    out = {"key": k, "split": jax.random.key_data(jax.random.split(jax.random.key(11), 5)),
           "tokens": batch.tokens, "lengths": batch.length, "eval_tokens": evals.tokens,
           "normal": jax.random.normal(jax.random.key(5), (999,)),
           "uniform": jax.jit(lambda key: jax.random.uniform(key, (4, 33)))(jax.random.key(2))}
    for name, rc in (("head", head), ("transformer", tr)):
        params = models.init_params(keys.stream(k, keys.INIT), rc)
        out |= {f"{name}/{i}": x for i, x in enumerate(jax.tree.leaves(params))}
    return {n: np.asarray(x).tolist() for n, x in out.items()}
"""


def _lowered(fn) -> str:
    return jax.jit(fn).lower(jax.random.key(0)).as_text()


def test_threefry_is_unrolled_on_cpu():
    """No loop left in a draw's program (a JAX that renamed the private rule fails here)."""
    assert "while" not in _lowered(lambda key: jax.random.bits(key, (64, 20)))
    assert "while" not in _lowered(lambda key: jax.random.split(key, 64))


def test_unrolled_threefry_draws_the_bits_of_jax_own_cpu_lowering():
    """The same draws in a process where JAX's CPU rule (the 5-iteration loop) is put back."""
    rolled = DRAWS + """
from jax._src.random import threefry2x32 as tf
from jax.interpreters import mlir
mlir.register_lowering(tf.threefry2x32_p, tf._threefry2x32_cpu_lowering_rule, platform="cpu")
assert "while" in jax.jit(lambda k: jax.random.bits(k, (8,))).lower(jax.random.key(0)).as_text()
import json, sys
json.dump(draws(), sys.stdout)
"""
    out = subprocess.run([sys.executable, "-c", rolled], capture_output=True, text=True,
                         check=True, env=os.environ | {"JAX_PLATFORMS": "cpu"})
    theirs = json.loads(out.stdout)
    scope: dict = {}
    exec(DRAWS, scope)  # noqa: S102 -- the one text both processes run
    ours = scope["draws"]()
    assert ours.keys() == theirs.keys()
    for name in ours:
        a, b = np.asarray(ours[name]), np.asarray(theirs[name])
        assert a.dtype == b.dtype and np.array_equal(a, b), name
