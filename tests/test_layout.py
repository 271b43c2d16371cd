"""The layout: every module imports on its own, the import graph has no circle, and the core
imports no study (nor the harness or reproduce)."""

import ast
import importlib
import multiprocessing
import pkgutil
from pathlib import Path

import lgjax

ROOT = Path(lgjax.__file__).parent
MODULES = sorted(m.name for m in pkgutil.walk_packages(lgjax.__path__, "lgjax.")
                 if not m.name.endswith("__main__"))
CORE = ("config", "errors", "keys", "validation", "registry", "plugins", "encodings", "tasks",
        "attention", "fast", "models", "transformer", "train", "grid", "evaluate", "devices",
        "runtime", "checkpoints", "runs")
ABOVE_CORE = ("lgjax.studies", "lgjax.harness", "lgjax.reproduce")


def path_of(module: str) -> Path:
    rel = Path(*module.split(".")[1:])
    return ROOT / rel / "__init__.py" if (ROOT / rel).is_dir() else (ROOT / rel).with_suffix(".py")


def imports_of(module: str) -> set[str]:
    """Every lgjax module this one imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path_of(module).read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES
                      else node.module for a in node.names}
    return {m for m in found if m in MODULES and m != module}


GRAPH = {m: imports_of(m) for m in MODULES}


def test_the_import_graph_has_no_circle():
    state = {}

    def visit(m, trail):
        if state.get(m) == "done":
            return
        assert state.get(m) != "open", "import circle: " + " -> ".join([*trail, m])
        state[m] = "open"
        for n in sorted(GRAPH[m] - {p for p in GRAPH if m.startswith(p + ".")}):
            visit(n, [*trail, m])
        state[m] = "done"

    for m in MODULES:
        visit(m, [])


def test_the_core_imports_no_study_nor_the_harness():
    for m in MODULES:
        if m.split(".")[1] in CORE:
            above = sorted(n for n in GRAPH[m] if n.startswith(ABOVE_CORE))
            assert not above, f"{m} imports {above}"


def test_every_module_imports_on_its_own():
    """Each in a process forked from a server that imported no lgjax module (the third-party
    ones preloaded, so each child pays only for lgjax's own); two at a time, one per core."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["jax", "flax.linen", "optax", "chex", "matplotlib.pyplot",
                                "orbax.checkpoint", "scipy.stats"])
    failed, running = [], []

    def reap(p, m):
        p.join(120)
        if p.exitcode != 0:
            failed.append(m)

    for m in MODULES:
        p = ctx.Process(target=importlib.import_module, args=(m,))
        p.start()
        running.append((p, m))
        if len(running) == 2:
            reap(*running.pop(0))
    for p, m in running:
        reap(p, m)
    assert not failed, failed


def test_a_head_run_imports_no_flax():
    """flax serves the transformer only; a one-layer-head run (README's first command) does not
    pay its import (~0.2 s)."""
    import subprocess
    import sys

    code = ("import sys, jax\nimport lgjax.harness.cli, lgjax.studies.implicit_bias.multiseed\n"
            "from lgjax import models\nfrom lgjax.config import RunConfig\n"
            "cfg = RunConfig()\nassert cfg.model.arch != 'transformer'\n"
            "params = models.init_params(jax.random.key(0), cfg)\n"
            "models.make_apply(cfg), models.make_apply_at(cfg)\n"
            "assert 'flax' not in sys.modules, 'flax was imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
