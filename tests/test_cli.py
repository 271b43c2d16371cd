import json
import re

import numpy as np

from lgjax.harness.cli import main

TINY = ["multiseed", "--encodings", "rope", "--seeds", "2", "--steps", "12", "--batch", "16",
        "--d", "16", "--vocab", "8", "--train-lengths", "4,8", "--eval-lengths", "8,12",
        "--eval-sequences", "64", "--no-progress"]


def test_multiseed_end_to_end(tmp_path, capsys):
    """Also under a --ckpt-root whose name holds glob characters (`[`, `]`, `*`, `?`;
    tests/test_odd_paths.py): the runs train, resume, open and analyse as under any other."""
    from lgjax.runs import open_run

    args = [a if a != "rope" else "rope,ape" for a in TINY]
    root = tmp_path / "ck[a=1]*?"
    argv = [*args, "--ckpt-root", str(root), "--out", str(tmp_path / "out")]
    assert main(argv) == 0, capsys.readouterr().err
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert res["reduced"] is True and res["lengths"] == [8, 12] and res["steps"] == 12
    for enc in ("rope", "ape"):
        for metric in ("accuracy", "peak_height", "selected_offset"):
            assert np.asarray(res[enc][metric]).shape == (2, 2)
    # one scored row per sequence: accuracy is a count over the 64 evaluation sequences
    counts = np.asarray(res["rope"]["accuracy"]) * 64
    np.testing.assert_allclose(counts, np.round(counts), atol=1e-4)
    for f in ("results.csv", "multiseed.png", "multiseed.pdf"):
        assert (tmp_path / "out" / f).stat().st_size > 0
    out = capsys.readouterr().out
    assert "selected offset" in out and "rope accu" in out
    assert main([*argv, "--resume"]) == 0, capsys.readouterr().err
    run_dir = root / "multiseed-K1" / "rope"
    with open_run(run_dir) as run:
        assert run.steps()[-1] == 12
        run.restore()
    assert main(["dynamics", str(run_dir), "--lengths", "8,12", "--eval-sequences", "32",
                 "--out", str(tmp_path / "dyn")]) == 0, capsys.readouterr().err


def test_config_errors_before_compile(tmp_path, capsys):
    common = ["--ckpt-root", str(tmp_path / "ck"), "--out", str(tmp_path / "o")]
    cases = [(["--K", "8", "--train-lengths", "8,16"], "task.opts.offset"),
             (["--d", "15", "--encodings", "rope"], "model.d"),
             (["--d", "30", "--heads", "4"], "model.d"),
             (["--encodings", "ape", "--eval-lengths", "12,80"], "model.enc.size")]
    for extra, field in cases:
        assert main(["multiseed", "--steps", "1", *common, *extra]) == 2
        assert field in capsys.readouterr().err
    assert not (tmp_path / "ck").exists()  # nothing was created, nothing compiled


def test_every_flag_has_help():
    """Every flag of every command says what it does (its field's trailing comment: a comment
    on the line above is not read)."""
    from lgjax.harness.cli import commands, parser_for

    missing = []
    for name in commands():
        parser, _ = parser_for([name])
        sub = next(a for a in parser._actions if a.dest == "command").choices[name]
        missing += [f"{name} {'/'.join(a.option_strings) or a.dest}" for a in sub._actions
                    if not (a.help or "").strip()]
    assert not missing, missing


def test_every_flag_help_is_whole():
    """A flag's help is its field's trailing comment; a comment continued on the next line was
    cut mid-sentence in --help (reproduce --tiers), so every help closes what it opens."""
    from lgjax.harness.cli import commands, parser_for

    for name in commands():
        parser, _ = parser_for([name])
        sub = next(a for a in parser._actions if a.dest == "command").choices[name]
        for action in sub._actions:
            text = re.sub(r"\[[^\])]*\)", "", action.help or "")  # half-open [0, M)
            assert text.count("(") == text.count(")"), (name, action.dest, action.help)
