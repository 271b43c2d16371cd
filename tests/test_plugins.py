"""The public way in: register_encoding / register_task refuse silent replacement; a module given
once with --plugin trains through every command and its runs reopen without it; a bad plugin is
one line, exit 2, before any work."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lgjax
from lgjax.config import ConfigError, ModelConfig, RunConfig
from lgjax.encodings import ENCODINGS
from lgjax.tasks import TASKS

TESTS = Path(__file__).parent


def test_registering_an_existing_name_is_refused_unless_asked():
    rope = ENCODINGS["rope"]
    with pytest.raises(ConfigError, match="encoding 'rope' is already registered"):
        lgjax.register_encoding("rope", ENCODINGS["nope"])
    with pytest.raises(ConfigError, match="already registered"):
        ENCODINGS["rope"] = ENCODINGS["nope"]  # the old spelling cannot replace either
    with pytest.raises(ConfigError, match="task 'prev' is already registered"):
        lgjax.register_task("prev", TASKS["first"])
    try:
        lgjax.register_encoding("rope", ENCODINGS["nope"], replace=True)
        assert ENCODINGS["rope"] is ENCODINGS["nope"]
    finally:
        lgjax.register_encoding("rope", rope, replace=True, )
        ENCODINGS.providers["rope"] = "lgjax.encodings"
    assert ENCODINGS["rope"] is rope
    with pytest.raises(ConfigError, match="not an lgjax.encodings.Encoding"):
        lgjax.register_encoding("x", 42)


def test_a_run_records_the_module_of_a_plugin_entry(fresh_plugins):
    sys.path.insert(0, str(TESTS))
    try:
        from lgjax import plugins

        plugins.load(["example_plugin"])
    finally:
        sys.path.remove(str(TESTS))
    rc = RunConfig(lgjax.TaskConfig("block_start"), ModelConfig("power_bias"))
    saved = json.loads(rc.to_json())
    assert saved["plugins"] == ["example_plugin"]
    assert RunConfig.from_json(rc.to_json()) == rc
    assert "plugins" not in json.loads(RunConfig().to_json())  # core entries record nothing


def lgjax_cli(cwd, *argv, plugin_path=True):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        ([str(TESTS), str(cwd)] if plugin_path else []) + [str(TESTS.parent)])}
    return subprocess.run([sys.executable, "-m", "lgjax", *argv], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)


BAD_PLUGINS = {  # module source -> what the one line must say
    "raise RuntimeError('boom at import')": "RuntimeError: boom at import",
    "def broken(:\n    pass": "SyntaxError",
    "from lgjax.encodings import ENCODINGS\nENCODINGS['x'] = 42": "encoding 'x'",
    "import jax.numpy as jnp\nimport lgjax\nfrom lgjax.encodings import Encoding, bias_kernel\n"
    "b = lambda p, d, c: jnp.zeros(3)\n"
    "lgjax.register_encoding('badshape', Encoding('bias', bias_kernel(b), bias=b))": "bias",
    "import lgjax\nfrom lgjax.encodings import Encoding\n"
    "def k(p, q, kk, c):\n    raise ValueError('no kernel here')\n"
    "lgjax.register_encoding('badkernel', Encoding('none', k))": "no kernel here",
    "import lgjax\nfrom lgjax.encodings import ENCODINGS\n"
    "lgjax.register_encoding('rope', ENCODINGS['nope'])": "already registered",
}


@pytest.mark.parametrize("source", list(BAD_PLUGINS), ids=range(len(BAD_PLUGINS)))
def test_a_bad_plugin_is_one_line_exit_2_before_any_work(tmp_path, capsys, monkeypatch,
                                                         fresh_plugins, source):
    from lgjax.harness.cli import main

    (tmp_path / "bad_plugin.py").write_text(source + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    rc = main(["--plugin", "bad_plugin", "multiseed", "--out", str(tmp_path / "out"),
               "--ckpt-root", str(tmp_path / "ck")])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 2 and len(lines) == 1, err
    assert "bad_plugin" in lines[0] and BAD_PLUGINS[source] in lines[0], lines[0]
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "ck").exists()


def test_a_missing_plugin_is_one_line_exit_2(tmp_path):
    proc = lgjax_cli(tmp_path, "contract-lab", "--plugin", "no_such_plugin_module", "--out",
                     str(tmp_path / "out"))
    assert proc.returncode == 2 and "--plugin no_such_plugin_module: cannot import" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_plugin_given_once_trains_everywhere_and_its_runs_reopen_without_it(
        tmp_path, capsys, monkeypatch, fresh_plugins):
    from lgjax.harness.cli import main

    ck, out = tmp_path / "ck", tmp_path / "out"
    monkeypatch.syspath_prepend(str(TESTS))

    def run(*argv, plugin=True):
        rc = main([*(("--plugin", "example_plugin") if plugin else ()), *argv])
        printed = capsys.readouterr()
        assert rc == 0, printed.err[-3000:]
        return printed

    run("multiseed", "--encodings", "power_bias", "--seeds", "1", "--steps", "8", "--batch", "8",
        "--eval-sequences", "8", "--eval-lengths", "12,16", "--ckpt-root", str(ck), "--out",
        str(out / "ms"), "--no-progress")
    saved = json.loads((ck / "multiseed-K1" / "power_bias" / "config.json").read_text())
    assert saved["plugins"] == ["example_plugin"]
    assert json.loads((out / "ms" / "results.json").read_text())["plugins"] == ["example_plugin"]
    alpha = run("realizability-alpha", "--encodings", "rope", "--tasks", "block_start,prev",
                "--steps", "20", "--lbfgs-iters", "20", "--sweep-nums", "16", "--sweep-bases",
                "10000", "--sweep-scales", "1.0", "--out", str(out / "alpha"))
    assert "block_start" in alpha.out
    run("realizability-train", "--tiers", "1L1H", "--encodings", "power_bias", "--tasks",
        "block_start,prev", "--seeds", "1", "--steps", "6", "--chunk", "3", "--ckpt-every", "3",
        "--eval-sequences", "8", "--ckpt-root", str(ck), "--out", str(out / "rt"),
        "--no-progress")
    # (contract-lab --plugin: tests/test_contract_kernels.py)
    run("contract-train", "--tasks", "offset_copy", "--schemes", "power_bias", "--seeds", "1",
        "--steps", "4", "--eval-sequences", "8", "--probe-sequences", "8", "--d", "16",
        "--heads", "2", "--layers", "1", "--extend", "40", "--shifts", "4", "--ckpt-root",
        str(ck), "--out", str(out / "ct"), "--no-progress")
    # later commands, told nothing, import the plugin from the runs' config.json: this process
    # forgets it first, as a new one would not have it
    fresh_plugins()
    assert "power_bias" not in lgjax.encodings.ENCODINGS
    run("dynamics", str(ck / "multiseed-K1" / "power_bias"), "--lengths", "8,12", "--out",
        str(out / "dyn"), plugin=False)
    fresh_plugins()
    run("contract-report", str(ck), "--out", str(out / "cr"), "--eval-sequences", "8",
        plugin=False)
    assert (out / "cr" / "report.md").is_file() and (out / "dyn" / "dynamics.csv").is_file()


def test_a_content_aware_plugin_trains_everywhere_and_its_runs_reopen_without_it(
        tmp_path, capsys, monkeypatch, fresh_plugins, tiny_quick):
    """tests/example_content_plugin.py: a content-aware encoding with options through multiseed,
    transformer, realizability-train, contract-train and profile; dynamics reopens its run
    without the flag."""
    from lgjax.harness.cli import main

    ck, out = tmp_path / "ck", tmp_path / "out"
    monkeypatch.syspath_prepend(str(TESTS))
    tiny_quick(ib_eval=16, rz_eval=16, ib_steps=4, rz_steps=4)

    def run(*argv, plugin=True):
        rc = main([*(("--plugin", "example_content_plugin") if plugin else ()), *argv])
        printed = capsys.readouterr()
        assert rc == 0, printed.err[-3000:]
        return printed

    small = ("--seeds", "1", "--eval-sequences", "8", "--no-progress")
    run("multiseed", "--encodings", "soft_count", "--steps", "6", "--batch", "8",
        "--eval-lengths", "12,16", "--ckpt-root", str(ck), "--out", str(out / "ms"), *small)
    saved = json.loads((ck / "multiseed-K1" / "soft_count" / "config.json").read_text())
    assert saved["plugins"] == ["example_content_plugin"]
    assert saved["model"]["enc"] == {"slope": 0.5}
    ms = json.loads((out / "ms" / "results.json").read_text())
    assert ms["soft_count"]["head_path"] == "general"
    assert ms["soft_count"]["head_path_reason"].startswith("general (content-aware encoding")
    run("transformer", "--encodings", "soft_count", "--steps", "3", "--batch", "8", "--d", "16",
        "--heads", "2", "--layers", "1", "--eval-lengths", "12,16", "--profile-lengths", "16",
        "--ckpt-root", str(ck), "--out", str(out / "tf"), *small)
    run("realizability-train", "--tiers", "1L1H", "--encodings", "soft_count", "--tasks", "prev",
        "--steps", "4", "--chunk", "2", "--ckpt-every", "2", "--ckpt-root", str(ck),
        "--out", str(out / "rt"), *small)
    run("contract-train", "--tasks", "offset_copy", "--schemes", "soft_count", "--steps", "3",
        "--probe-sequences", "8", "--d", "16", "--heads", "2", "--layers", "1", "--extend", "40",
        "--shifts", "4", "--ckpt-root", str(ck), "--out", str(out / "ct"), *small)
    prof = run("profile", "soft_count", "--quick", "--out", str(out / "prof"))
    assert "Contract (at init): undefined for soft_count: a content-aware encoding" in prof.out
    assert "Realizability (alpha_L, training-free): alpha_L undefined for soft_count" in prof.out
    assert json.loads((out / "prof" / "profile.json").read_text())["plugins"] == [
        "example_content_plugin"]
    fresh_plugins()
    assert "soft_count" not in lgjax.encodings.ENCODINGS
    run("dynamics", str(ck / "multiseed-K1" / "soft_count"), "--lengths", "8,12", "--out",
        str(out / "dyn"), plugin=False)
    assert (out / "dyn" / "dynamics.csv").is_file()
