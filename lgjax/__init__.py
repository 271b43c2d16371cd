"""lgjax: length generalization of attention under positional encodings, in JAX."""

__version__ = "0.1.0"
