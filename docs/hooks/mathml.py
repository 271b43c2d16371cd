"""A mkdocs hook: `$...$` and `$$...$$` in a page's markdown become MathML, written into the page
when the site is built, so its equations show in any current browser without a script or a
network (the site is read offline, on a cluster's login node as well as on the web). Code (fenced
blocks and inline backticks) is left alone. A page's `--8<-- "file"` lines (pymdownx.snippets)
are inlined first, so that the equations of an included file are converted too (snippets itself
runs after this hook); a file not found is left to snippets, which fails the strict build."""

import re
from pathlib import Path

from latex2mathml.converter import convert

# fenced blocks, inline code, display math, then inline math (a `$` followed by a non-space)
_PIECES = re.compile(r"(?ms)^(```|~~~).*?^\1[ \t]*$"  # a fenced block
                     r"|`[^`\n]+`"  # inline code
                     r"|\$\$(.+?)\$\$"  # display math
                     r"|(?<![\\$])\$(?=\S)([^$\n]+?)(?<=\S)\$")  # inline math


def _mathml(match: re.Match) -> str:
    display, inline = match.group(2), match.group(3)
    if display is not None:
        return "\n\n" + convert(display.strip(), display="block") + "\n\n"
    if inline is not None:  # in a span: a line that starts with <math> would be an HTML block
        return f'<span class="math">{convert(inline)}</span>'
    return match.group(0)


_INCLUDE = re.compile(r'(?m)^--8<-- "([^"]+)"[ \t]*$')


def inline_includes(markdown: str, roots: list[Path]) -> str:
    """Each `--8<-- "file"` line replaced by the file, found under the first of `roots` that
    holds it (the snippets extension's base paths: docs, then the repository root)."""
    def include(m: re.Match) -> str:
        found = [root / m[1] for root in roots if (root / m[1]).is_file()]
        return found[0].read_text().rstrip("\n") if found else m[0]

    return _INCLUDE.sub(include, markdown)


def on_page_markdown(markdown: str, config=None, **_) -> str:
    if config is not None:
        docs = Path(config["docs_dir"])
        markdown = inline_includes(markdown, [docs, docs.parent])
    return _PIECES.sub(_mathml, markdown)
