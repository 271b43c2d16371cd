"""Tiny end-to-end runs of every experiment subcommand through the CLI (prop1's and linear's:
tests/test_twins.py, where linear reads prop1's run)."""

import json

import numpy as np
import pytest

from lgjax.harness.cli import main

TINY = ["--steps", "3", "--batch", "8", "--no-progress"]


def _run(tmp_path, name, *extra):
    if name != "maxmargin":
        extra = ("--eval-sequences", "16", *extra)
    out = tmp_path / name
    assert main([name, *TINY, "--out", str(out), "--ckpt-root", str(tmp_path / "ck"),
                 *extra]) == 0
    return json.loads((out / "results.json").read_text())


def test_frequency(tmp_path):
    res = _run(tmp_path, "frequency", "--bases", "1000,100000", "--seeds", "1", "--Ks", "2,1",
               "--eval-lengths", "16,24", "--offset-length", "24")
    assert res["rows"] == ["1000", "100000", "K1/1000", "K1/100000"]
    assert res["1000"]["K"] == 2 and res["K1/1000"]["K"] == 1
    assert res["1000"]["g1_over_g0"] < res["100000"]["g1_over_g0"] < 1.0
    assert res["1000"]["selected_offset_at_length"] == [res["1000"]["selected_offset"][0][1]]


def test_shift(tmp_path):
    res = _run(tmp_path, "shift", "--seeds", "2", "--lengths", "12,16")
    curves = [np.asarray(c) for c in res["ape"]["curves"]]
    assert [len(c) for c in curves] == [12, 16]
    # the largest gap between the length-curves over the absolute positions both have
    assert res["ape"]["spread_absolute"] == pytest.approx(np.abs(curves[0] - curves[1][:12]).max())
    assert (tmp_path / "shift" / "shift.png").exists()


@pytest.mark.parametrize("parts", ["ab", "cd"])
def test_mechanics(tmp_path, parts, monkeypatch):
    from lgjax.studies.implicit_bias import mechanics

    monkeypatch.setattr(mechanics, "SWEEPS", {"tau": [{"temperature": 2.0}]})
    res = _run(tmp_path, "mechanics", "--parts", parts, "--seeds", "2", "--ape-seeds", "1",
               "--decays", "0,0.01", "--eval-lengths", "12,16,24", "--dyn-eval", "16")
    if parts == "ab":
        assert len(res["a"]["rows"]) == 3 and "carrier_key/h0" in res["b"]
    else:
        assert set(res["c"]["0.01"]["fixes"]) == {"interp", "clamp", "rescale"}
        assert "tau-temperature2" in res["d"]


def test_variants(tmp_path):
    res = _run(tmp_path, "variants", "--seeds", "1", "--eval-lengths", "12,16",
               "--schemes", "alibi", "--scheme-Ks", "2", "--carrier-Ks", "2",
               "--head-counts", "4", "--mode-heads", "2")
    assert np.asarray(res["b-two_offset-H2"]["mode_profile_peaks"]).shape == (1, 2, 2)
    assert np.asarray(res["d-rope-H4"]["sv_energy_per_head"]).shape == (1, 4)
    assert "a-alibi-K2" in res and "c-rope-K2" in res


def test_maxmargin(tmp_path):
    res = _run(tmp_path, "maxmargin", "--seeds", "2", "--n-seqs", "8", "--analyze-steps", "0,3",
               "--decays", "0.01", "--iters", "200")
    for enc in ("rope", "ape"):
        assert -1 <= res[enc]["trajectory"]["3"]["cos"][0] <= 1
        assert len(res[enc]["weight_decay"]["0.01"]["cos"]) == 2
