"""docs/hooks/mathml.py: equations become MathML inside the paragraph they are written in."""

import importlib.util
from pathlib import Path

import markdown
import pytest
from pymdownx.snippets import SnippetMissingError

_spec = importlib.util.spec_from_file_location(
    "mathml_hook", Path(__file__).resolve().parents[1] / "docs" / "hooks" / "mathml.py")
hook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hook)


def html_of(text: str, includes=None) -> str:
    """The page as the site renders it: the hook's extension, after snippets where a page
    includes files from the folder `includes`."""
    if includes is None:
        return markdown.markdown(text, extensions=[hook.MathMLExtension()])
    return markdown.markdown(text, extensions=["pymdownx.snippets", hook.MathMLExtension()],
                             extension_configs={"pymdownx.snippets": {
                                 "base_path": [str(includes)], "check_paths": True}})


def test_inline_math_at_a_line_start_stays_in_its_paragraph():
    out = html_of("tokens drawn from\n$m = 20$ symbols, the query $n = L-1$.")
    assert out.count("<p>") == 1 and out.count("<math") == 2
    assert "<mn>20</mn>" in out


def test_display_math_is_a_block_and_code_is_left_alone():
    out = html_of("the logit\n\n$$\\ell_t = q^\\top k_t$$\n\nand `$x$` in code")
    assert 'display="block"' in out and "<code>$x$</code>" in out


def test_an_included_file_has_its_equations_converted(tmp_path):
    (tmp_path / "part.md").write_text("its $a_t = \\ell_t$ here\n")
    out = html_of('# Page\n\n--8<-- "part.md"\n', includes=tmp_path)
    assert "<mi>a</mi>" in out and "$" not in out
    with pytest.raises(SnippetMissingError):  # a missing file fails the strict build
        html_of('--8<-- "absent.md"\n', includes=tmp_path)
