"""A mkdocs hook: `$...$` and `$$...$$` in a page's markdown become MathML, written into the page
when the site is built, so its equations show in any current browser without a script or a
network (the site is read offline, on a cluster's login node as well as on the web). Code (fenced
blocks and inline backticks) is left alone. The conversion is a Python-Markdown preprocessor that
runs after pymdownx.snippets has inlined a page's `--8<--` includes, so an included file's
equations are converted too, and before the fenced-code and HTML-block preprocessors."""

import re

from latex2mathml.converter import convert
from markdown.extensions import Extension
from markdown.preprocessors import Preprocessor

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


class _MathML(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        return _PIECES.sub(_mathml, "\n".join(lines)).split("\n")


class MathMLExtension(Extension):
    """`$...$` and `$$...$$` to MathML: after snippets (priority 32), before whitespace
    normalisation (30), fenced code (25) and HTML blocks (20)."""

    def extendMarkdown(self, md):
        md.preprocessors.register(_MathML(md), "mathml", 31)


def on_config(config, **_):
    config.markdown_extensions.append(MathMLExtension())
    return config
