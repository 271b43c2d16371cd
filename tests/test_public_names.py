"""The public face of `import lgjax`: the names a type checker sees (the TYPE_CHECKING block),
the names imported on first use at run time (_PUBLIC) and `__all__` are the same names, each
bound to the object its module defines; and `import lgjax` alone imports none of them."""

import ast
import subprocess
import sys
from pathlib import Path

import lgjax

INIT = Path(lgjax.__file__)


def type_checking_imports() -> dict[str, str]:
    """{name: module} of the `from M import name` lines inside `if TYPE_CHECKING:`."""
    tree = ast.parse(INIT.read_text())
    blocks = [node for node in tree.body if isinstance(node, ast.If)
              and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"]
    assert len(blocks) == 1, "lgjax/__init__.py needs one `if TYPE_CHECKING:` import block"
    found = {}
    for node in blocks[0].body:
        assert isinstance(node, ast.ImportFrom), ast.unparse(node)
        for alias in node.names:
            assert alias.asname is None, f"{alias.name} imported as {alias.asname}"
            found[alias.name] = node.module
    return found


def test_the_type_checking_block_names_exactly_all():
    seen = type_checking_imports()
    assert sorted(seen) == sorted(lgjax.__all__)
    assert seen == lgjax._PUBLIC  # and from the module the lazy import reads at run time


def test_every_public_name_is_the_object_its_module_defines():
    import importlib

    for name, module in lgjax._PUBLIC.items():
        assert getattr(lgjax, name) is getattr(importlib.import_module(module), name), name
    assert sorted(dir(lgjax)) == sorted({*dir(lgjax), *lgjax.__all__})


def test_import_lgjax_stays_lazy():
    """The TYPE_CHECKING block is not run: `import lgjax` imports neither jax nor a module of
    lgjax (that is what keeps `lgjax --help` fast)."""
    code = ("import sys, lgjax\n"
            "loaded = sorted(m for m in sys.modules if m == 'jax' or m.startswith('lgjax.'))\n"
            "assert not loaded, loaded")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
