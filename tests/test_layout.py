"""The layout: every module imports on its own, and imports run one way through the layers, at
the package level: core <- checkpoints <- harness <- studies <- reproduce, profile, bench <- the
entry points (the cli, the command table, the launcher), with no circle between packages."""

import ast
import importlib
import multiprocessing
import pkgutil
from pathlib import Path

import lgjax

ROOT = Path(lgjax.__file__).parent
MODULES = sorted(m.name for m in pkgutil.walk_packages(lgjax.__path__, "lgjax.")
                 if not m.name.endswith("__main__"))
# they name every command, so they import every layer
ENTRY_POINTS = ("lgjax.harness.cli", "lgjax.harness.commands", "lgjax.harness.launch")
LAYERS = ("core", "checkpoints", "harness", "studies", "tools", "entry points")
TOOLS = ("lgjax.reproduce", "lgjax.profile", "lgjax.bench")  # above the studies they run
ON_CHECKPOINTS = ("lgjax.grid", "lgjax.runs")  # top-level modules built on the checkpoints


def package_of(module: str) -> str:
    """The package a module counts in: a study's own package, the entry points together, each
    other package of lgjax, or "core" for lgjax's top-level modules (but those built on the
    checkpoints, each on its own)."""
    parts = module.split(".")
    if module in ENTRY_POINTS:
        return "entry points"
    if module in ON_CHECKPOINTS:
        return module
    if parts[1:2] == ["studies"] and len(parts) > 2:
        return ".".join(parts[:3])
    if len(parts) > 1 and (ROOT / parts[1]).is_dir():
        return ".".join(parts[:2])
    return "core"


def layer_of(module: str) -> int:
    package = package_of(module)
    if package in ON_CHECKPOINTS:
        return LAYERS.index("checkpoints")
    if package in ("core", "entry points"):
        return LAYERS.index(package)
    if package.startswith(TOOLS):
        return LAYERS.index("tools")
    return LAYERS.index(package.split(".")[1])


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


def test_imports_run_one_way_through_the_layers():
    """No module imports one of a higher layer, at the top or inside a function."""
    upward = [f"{m} ({LAYERS[layer_of(m)]}) imports {n} ({LAYERS[layer_of(n)]})"
              for m in MODULES for n in sorted(GRAPH[m]) if layer_of(n) > layer_of(m)]
    assert not upward, "\n".join(upward)


def test_the_package_graph_has_no_circle():
    packages = {}
    for m in MODULES:
        packages.setdefault(package_of(m), set()).update(
            package_of(n) for n in GRAPH[m] if package_of(n) != package_of(m))
    state = {}

    def visit(p, trail):
        if state.get(p) == "done":
            return
        assert state.get(p) != "open", "package circle: " + " -> ".join([*trail, p])
        state[p] = "open"
        for q in sorted(packages.get(p, ())):
            visit(q, [*trail, p])
        state[p] = "done"

    for p in sorted(packages):
        visit(p, [])


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


def passes_in_a_fresh_process(code: str) -> None:
    """`code` (asserting what it imported) exits 0 in a new interpreter, whose modules are only
    what it imports."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_head_run_imports_no_flax():
    """flax serves the transformer only; a one-layer-head run (README's first command) does not
    pay its import (~0.2 s)."""
    passes_in_a_fresh_process(
        "import sys, jax\nimport lgjax.harness.cli, lgjax.studies.implicit_bias.multiseed\n"
        "from lgjax import models\nfrom lgjax.config import RunConfig\n"
        "cfg = RunConfig()\nassert cfg.model.arch != 'transformer'\n"
        "params = models.init_params(jax.random.key(0), cfg)\n"
        "models.make_apply(cfg), models.make_apply_at(cfg)\n"
        "assert 'flax' not in sys.modules, 'flax was imported'")


def test_no_command_imports_scipy_stats_or_optimize_to_start():
    """scipy.stats and scipy.optimize (heavy imports: docs/results/performance.md) serve two
    functions (the contract study's Spearman rho, NNLS) that import them on first use; building
    any command's parser, which every run of it does first, imports neither."""
    passes_in_a_fresh_process(
        "import sys\nimport lgjax.harness.cli as cli\n"
        "for name in cli.commands():\n    cli.parser_for([name])\n"
        "loaded = [m for m in ('scipy.stats', 'scipy.optimize') if m in sys.modules]\n"
        "assert not loaded, loaded")


def test_a_profile_checks_its_reference_without_scipy_stats():
    """The reference check ranks every canonical encoding's realizability row before anything
    trains; the ranks are numpy's, so a profile does not pay scipy.stats' import."""
    passes_in_a_fresh_process(
        "import sys\nfrom lgjax.profile import recipes, reference\n"
        "for name in ('quick', 'default'):\n"
        "    assert reference.checked(reference.FILE, recipes.RECIPES[name])\n"
        "assert 'scipy.stats' not in sys.modules, 'scipy.stats was imported'")
