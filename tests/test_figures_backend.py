"""lgjax draws its figures into files without touching pyplot: importing it picks no backend, so
a notebook's inline plots and a GUI session's windows stay as their user set them."""

import subprocess
import sys


def test_drawing_a_figure_leaves_pyplot_and_the_backend_alone(tmp_path):
    code = f"""
import sys
import matplotlib
from lgjax.harness import outputs
from lgjax.studies.implicit_bias import figures
fig, ax = outputs.subplots(1, 2, figsize=(4, 2))
ax[0].plot([0, 1], [1, 0])
outputs.save(fig, {str(tmp_path / "fig")!r})
assert "matplotlib.pyplot" not in sys.modules, "pyplot imported"
print(matplotlib.rcParams._get_backend_or_none())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"MPLBACKEND": "", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None"  # no backend was chosen
    assert (tmp_path / "fig.png").stat().st_size > 0 and (tmp_path / "fig.pdf").exists()
