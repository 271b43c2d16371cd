"""The public way in: register a user's encodings and tasks, and load modules that do.

  register_encoding(name, Encoding(...), replace=False)
  register_task(name, Task(...), replace=False)
`lgjax --plugin my_pkg.my_module <command>` (repeatable, on every command) imports the module
before anything else; every entry it adds is checked against its contract (the shapes and dtypes
of each behaviour on a tiny model, its options' defaults) before any work, and the module is
recorded in the config.json of each run that uses its entries and in the results.json of the
command, so later commands (dynamics, the reports, reproduce) reopen those runs by themselves.
"""

from __future__ import annotations

import dataclasses
import importlib
import re

import numpy as np

from lgjax import models
from lgjax.config import ModelConfig, RunConfig, TaskConfig  # registers the core's zoo first
from lgjax.encodings import ENCODINGS, Encoding
from lgjax.errors import ConfigError
from lgjax.registry import caller_module
from lgjax.tasks import TASKS, Task

KINDS = ("additive", "rotary", "bias", "none", "content")
LOADED: list[str] = []  # the plugin modules of this process, in load order


def register_encoding(name: str, encoding: Encoding, replace: bool = False) -> Encoding:
    """Add `encoding` to the registry under `name`, so `ModelConfig(name)` trains it.

    Call it at import of your module and load the module with `--plugin` (the command line) or
    an import (Python). A name already registered (`rope`) is refused with a `ConfigError`
    unless `replace=True`. The calling module is remembered and recorded in the config of every
    run that uses the entry, so later commands reopen those runs by themselves. Returns the
    encoding.
    """
    if not isinstance(encoding, Encoding):
        raise ConfigError(f"register_encoding({name!r}): got a {type(encoding).__name__}, not an "
                          "lgjax.encodings.Encoding")
    return ENCODINGS.register(name, encoding, replace, module=caller_module(1))


def register_task(name: str, task: Task, replace: bool = False) -> Task:
    """Add `task` to the registry under `name`, so `TaskConfig(name)` trains on it.

    As `register_encoding`: refused for a registered name unless `replace=True`, the calling
    module recorded with the runs. Returns the task.
    """
    if not isinstance(task, Task):
        raise ConfigError(f"register_task({name!r}): got a {type(task).__name__}, not an "
                          "lgjax.tasks.Task")
    return TASKS.register(name, task, replace, module=caller_module(1))


def load(modules, source: str = "--plugin") -> list[str]:
    """Import each module not yet loaded and check what it registered; the modules loaded."""
    for name in modules:
        if name in LOADED:
            continue
        if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", name):
            raise ConfigError(f"{source}: {name!r} is not a module name; give a dotted import "
                              "path such as my_pkg.my_module")
        before = {r.kind: dict(r) for r in (ENCODINGS, TASKS)}
        try:
            importlib.import_module(name)
        except ConfigError as err:
            raise ConfigError(f"{source} {name}: {err}") from err
        except ModuleNotFoundError as err:
            raise ConfigError(f"{source} {name}: cannot import it ({err}); put its folder on "
                              "PYTHONPATH or install its package") from err
        except Exception as err:  # noqa: BLE001 -- a user's module may raise anything
            raise ConfigError(f"{source} {name}: importing it raised {type(err).__name__}: "
                              f"{str(err).splitlines()[0] if str(err) else ''}; fix the module"
                              ) from err
        for registry, check in ((ENCODINGS, check_encoding), (TASKS, check_task)):
            for key, entry in list(registry.items()):
                if before[registry.kind].get(key) is not entry:
                    try:
                        check(key, entry)
                    except Exception as err:  # noqa: BLE001
                        raise ConfigError(f"{source} {name}: {registry.kind} {key!r} breaks "
                                          f"the {registry.kind} contract: {err}") from err
        LOADED.append(name)
    return LOADED


def recorded(saved: dict, source: str) -> None:
    """Import the plugins a saved config or results file records (before reading it)."""
    load(saved.get("plugins", ()), f"{source} (its plugins)")


def _broadcasts(shape, to) -> bool:
    try:
        return np.broadcast_shapes(shape, to) == to
    except ValueError:
        return False


def _shape_error(what: str, got, want) -> str:
    return f"{what} has shape {tuple(np.shape(got))}; expected {want}"


def check_encoding(name: str, enc) -> None:
    """Every behaviour on a tiny model (d = 8, 2 heads, 5 positions): shapes, dtypes, options."""
    import jax
    import jax.numpy as jnp


    if not isinstance(enc, Encoding):
        raise TypeError(f"it is a {type(enc).__name__}, not an lgjax.encodings.Encoding")
    if enc.kind not in KINDS:
        raise ValueError(f"kind {enc.kind!r} is not one of {KINDS}")
    if enc.content is not None and enc.kind != "content":
        raise ValueError(f"it has a content behaviour but kind {enc.kind!r}; use kind 'content' "
                         "(the exact fast heads, chosen by kind, never read content)")
    if not dataclasses.is_dataclass(enc.options):
        raise TypeError("its options are not a dataclass")
    options = enc.options()  # every option needs a default (the do-nothing call)
    L, cfg = 5, ModelConfig(name, d=8, heads=2, enc=options)
    params = models.init_params(jax.random.key(0), RunConfig(model=cfg))
    pos = jnp.arange(L)
    emb = enc.embed(params, pos, jnp.asarray(L), cfg)
    if np.shape(emb) not in ((), (L, cfg.d)):
        raise ValueError(_shape_error("embed over 5 positions", emb, f"() or ({L}, {cfg.d})"))
    x = jnp.ones((L, cfg.heads, cfg.d // cfg.heads), jnp.float32)
    rot = enc.rotate(x, pos, cfg)
    if np.shape(rot) != x.shape:
        raise ValueError(_shape_error("rotate of q [5, 2, 4]", rot, x.shape))
    dist = pos[:, None] - pos[None, :]
    bias = enc.bias(params, dist, cfg)
    if not _broadcasts(np.shape(bias), (L, L, cfg.heads)):
        raise ValueError(_shape_error("bias of distances [5, 5]", bias, f"({L}, {L}, 2) or ()"))
    if enc.kind == "content":
        out = (("content", check_content(enc, params, cfg, L)),)
    else:
        kern = enc.kernel(params, pos[:, None], pos[None, :], cfg)
        if np.shape(kern) != (L, L, cfg.heads):
            raise ValueError(_shape_error("kernel of positions [5, 1] x [1, 5]", kern, (L, L, 2)))
        out = (("kernel", kern),)
    for what, v in (("embed", emb), ("rotate", rot), ("bias", bias), *out):
        if not jnp.issubdtype(jnp.asarray(v).dtype, jnp.floating):
            raise TypeError(f"{what} returns {jnp.asarray(v).dtype}, not a float array")


def check_content(enc, params, cfg, L: int):
    """A content-aware entry's logits on the tiny model: shape [H, L, L], and causal (the
    gradient of every row's logits with respect to the states of later tokens is zero, and so
    with respect to their queries and keys). Returns the logits."""
    import jax
    import jax.numpy as jnp

    from lgjax.encodings import content_view, d_head

    if enc.content is None:
        raise ValueError("its kind is 'content' but it has no content behaviour")
    keys = jax.random.split(jax.random.key(1), 3)
    x = jax.random.normal(keys[0], (L, cfg.d), jnp.float32)
    q, k = (jax.random.normal(kk, (L, cfg.heads, d_head(cfg)), jnp.float32) for kk in keys[1:])
    pos, length = jnp.arange(L), jnp.asarray(L)

    def logits(q, k, x):
        return enc.content_logits(params, content_view(q, k, x, pos, length, cfg), cfg)

    out = logits(q, k, x)
    if np.shape(out) != (cfg.heads, L, L):
        raise ValueError(_shape_error("content logits of 5 positions", out, (cfg.heads, L, L)))
    for i in range(L - 1):
        grads = jax.grad(lambda q, k, x, i=i: logits(q, k, x)[:, i, :i + 1].sum(),
                         argnums=(0, 1, 2))(q, k, x)
        for what, g in zip(("queries", "keys", "states"), grads):
            leak = float(jnp.abs(g[i + 1:]).max())
            if leak != 0.0:
                raise ValueError(f"not causal: row {i}'s logits depend on the {what} of later "
                                 f"tokens (gradient {leak:.3g}); read view.causal in every "
                                 "reduction over keys")
    return out


def check_task(name: str, task) -> None:
    """Its options' defaults, its target rule and its sampler on one sequence."""
    import jax


    if not isinstance(task, Task):
        raise TypeError(f"it is a {type(task).__name__}, not an lgjax.tasks.Task")
    if not dataclasses.is_dataclass(task.options):
        raise TypeError("its options are not a dataclass")
    cfg = TaskConfig(name, vocab=6, opts=task.options())
    L = max(int(task.min_length(cfg)), 2) + 2
    targets = task.targets(L, cfg)
    if np.shape(targets) != (L,):
        raise ValueError(_shape_error(f"targets({L})", targets, (L,)))
    ex = task.sample(jax.random.key(0), L, L + 2, cfg)
    want = () if task.rows == "last" else (L + 2,)
    if np.shape(ex.tokens) != (L + 2,) or np.shape(ex.targets) != want:
        raise ValueError(f"a sampled sequence of length {L} padded to {L + 2} has tokens "
                         f"{np.shape(ex.tokens)} and targets {np.shape(ex.targets)}; expected "
                         f"({L + 2},) and {want}")
