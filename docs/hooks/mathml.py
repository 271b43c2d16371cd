"""A mkdocs hook: `$...$` and `$$...$$` in a page's markdown become MathML, written into the page
when the site is built, so its equations show in any current browser without a script or a
network (the site is read offline, on a cluster's login node as well as on the web). Code (fenced
blocks and inline backticks) is left alone."""

import re

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


def on_page_markdown(markdown: str, **_) -> str:
    return _PIECES.sub(_mathml, markdown)
