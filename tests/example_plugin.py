"""A user's module outside lgjax: one encoding and one task, each with its own options, through
the public registration path. `lgjax --plugin example_plugin <command>` (this folder on
PYTHONPATH) trains and measures them like the built-in ones; the runs record the module."""

from dataclasses import dataclass

import jax.numpy as jnp

import lgjax
from lgjax.encodings import Encoding, bias_kernel, float_dtype
from lgjax.tasks import Task, where_target


@dataclass(frozen=True)
class PowerBiasOptions:
    strength: float = 0.5  # the bias is -strength * dist^power on every head
    power: float = 0.5  # the exponent of the distance


def power_bias(params, dist, cfg):
    d = jnp.maximum(jnp.asarray(dist, float_dtype()), 0.0)
    return jnp.repeat((-cfg.enc.strength * d ** cfg.enc.power)[..., None], cfg.heads, axis=-1)


@dataclass(frozen=True)
class BlockOptions:
    block: int = 4  # row i reads the first position of its block of `block` positions


def block_start(pos, length, cfg):
    """t(i) = i - i mod block, for the rows that are not a block's first."""
    return where_target(pos % cfg.opts.block != 0, pos - pos % cfg.opts.block)


lgjax.register_encoding("power_bias", Encoding("bias", bias_kernel(power_bias), bias=power_bias,
                                               options=PowerBiasOptions))
lgjax.register_task("block_start", Task("all", lambda c: 2, block_start, options=BlockOptions))
