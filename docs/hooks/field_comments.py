"""A griffe extension for the API pages: a dataclass field's `# comment` becomes its docstring.

lgjax documents each config field with a comment (the one copy of its help: the command line
reads it too, lgjax.harness.cli.field_comments), at the end of the field's last line and/or as
the comment lines right above it. mkdocstrings reads attribute docstrings only, so without
this the fields of RunConfig, RunOptions, Encoding, ... would show no help at all."""

import html
import io
import tokenize
from pathlib import Path

import griffe


def _comments(path: Path) -> dict[int, str]:
    """{line number: comment text} of one source file."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return {t.start[0]: t.string.lstrip("#").strip() for t in tokens
            if t.type == tokenize.COMMENT}


def _above(comments: dict[int, str], lines: list[str], line: int) -> list[str]:
    """The comment lines directly above `line` (a block of whole-line comments)."""
    found = []
    while line - 1 in comments and lines[line - 2].lstrip().startswith("#"):
        line -= 1
        found.insert(0, comments[line])
    return found


def _escaped(text: str) -> str:
    """A comment is plain text: `<ckpt_root>/` must not read as an HTML tag (code spans, between
    backticks, show their characters as they are)."""
    pieces = text.split("`")
    return "`".join(p if i % 2 else html.escape(p, quote=False) for i, p in enumerate(pieces))


class FieldComments(griffe.Extension):
    def __init__(self) -> None:
        self._files: dict[Path, tuple[dict[int, str], list[str]]] = {}

    def on_attribute_instance(self, *, attr: griffe.Attribute, **kwargs) -> None:
        if attr.docstring is not None or not attr.parent or not attr.parent.is_class:
            return
        path = attr.filepath
        if not isinstance(path, Path) or attr.lineno is None:
            return
        if path not in self._files:
            self._files[path] = (_comments(path), path.read_text().splitlines())
        comments, lines = self._files[path]
        end = attr.endlineno or attr.lineno
        parts = [" ".join(_above(comments, lines, attr.lineno)), comments.get(end, "")]
        text = "; ".join(p for p in parts if p)
        if text:
            attr.docstring = griffe.Docstring(_escaped(text), parent=attr)
