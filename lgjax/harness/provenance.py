"""Which code wrote a results file: a digest of lgjax's own files, the versions of the libraries
that compute its numbers, and the backend and flags they ran with.

`lgjax reproduce --resume` reuses a step's results.json (its runs finished, its config the same)
only when its digest is the one of the code running now; after any change, it measures again.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
from pathlib import Path

# what computes the numbers besides lgjax itself
LIBRARIES = ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "numpy", "scipy")


def version(lib: str) -> str:
    """The installed version of `lib`, or "-" where it is not installed as a distribution
    (e.g. lgjax run from a source tree)."""
    try:
        return importlib.metadata.version(lib)
    except importlib.metadata.PackageNotFoundError:
        return "-"


@functools.cache
def code_digest() -> str:
    import jax

    import lgjax

    h = hashlib.sha256()
    root = Path(lgjax.__file__).parent
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".json") and path.is_file() and "__pycache__" not in path.parts:
            h.update(f"{path.relative_to(root)}\0".encode())
            h.update(path.read_bytes())
    for lib in LIBRARIES:
        h.update(f"{lib}={version(lib)}\0".encode())
    h.update(f"{jax.default_backend()} x{jax.device_count()} "
             f"{os.environ.get('XLA_FLAGS', '')}".encode())
    return h.hexdigest()[:16]
