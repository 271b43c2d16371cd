"""An encoding defined outside lgjax, registered at import (the call docs/guide/extending.md
shows). With this folder on PYTHONPATH, `lgjax contract-lab --plugin example_encoding` imports
it and prints its contract profile among the registered encodings."""

import jax.numpy as jnp

import lgjax
from lgjax.encodings import Encoding, bias_kernel, float_dtype


def log_bias(params, dist, cfg):
    """-log(1 + dist) on every head: a recency prior flatter than ALiBi's (dist = n - t >= 0)."""
    penalty = -jnp.log1p(jnp.asarray(dist, float_dtype()))
    return jnp.repeat(penalty[..., None], cfg.heads, axis=-1)


lgjax.register_encoding("log_bias", Encoding("bias", bias_kernel(log_bias), bias=log_bias))
