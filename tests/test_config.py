"""Encoding options on ModelConfig: defaults, JSON round trip, and configs saved before the
encodings owned their options (flat `rope_base`, `ape_oob`, ... fields) still being the config
requested now. tests/data holds copies of such saved files: a contract run's config.json and a
realizability program's config.json + results.json."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from lgjax import checkpoints, encodings
from lgjax.config import ConfigError, ModelConfig, RunConfig, TrainConfig
from lgjax.harness.study import RunOptions, run_study
from lgjax.studies.contract import train as contract_train
from lgjax.studies.realizability import train as rt

DATA = Path(__file__).parent / "data"


def test_a_model_holds_its_encodings_options_and_no_other():
    assert ModelConfig("ape").enc == encodings.ApeOptions()
    assert ModelConfig("nope").enc == encodings.NoOptions()
    with pytest.raises(ConfigError, match=r"model\.enc: encoding 'rope' takes RopeOptions"):
        ModelConfig("rope", enc=encodings.ApeOptions())
    with pytest.raises(ConfigError, match="model.enc"):  # switching encoding: pass enc=None
        dataclasses.replace(ModelConfig("rope"), encoding="ape")
    assert dataclasses.replace(ModelConfig("rope"), encoding="ape", enc=None) == ModelConfig("ape")


@pytest.mark.parametrize("name", sorted(encodings.ENCODINGS))
def test_every_encoding_round_trips_through_json(name):
    options = encodings.ENCODINGS[name].options
    changed = {f.name: f.default * 2 for f in dataclasses.fields(options)
               if type(f.default) in (int, float)}
    rc = RunConfig(model=ModelConfig(name, enc=options(**changed)), train=TrainConfig(seeds=(3,)))
    assert RunConfig.from_json(rc.to_json()) == rc
    # every option is in the file as data (a tuple of factors as a JSON array)
    as_data = json.loads(json.dumps(dataclasses.asdict(rc.model.enc)))
    assert json.loads(rc.to_json())["model"]["enc"] == as_data


def test_flat_fields_map_to_the_models_encoding_and_others_are_dropped():
    flat = {"encoding": "rope", "d": 32, "rope_scale": 0.5, "ape_oob": "untrained",
            "alibi_slopes": "geometric", "t5_buckets": 8}
    assert ModelConfig.from_dict(flat) == ModelConfig("rope", d=32,
                                                      enc=encodings.RopeOptions(scale=0.5))
    with pytest.raises(ConfigError, match="nosuch"):
        ModelConfig.from_dict({"encoding": "nosuch"})


def test_a_saved_flat_run_config_is_the_run_requested_now(tmp_path):
    """A contract run saved with flat fields is the run the study asks for today: its run
    directory is accepted (reloaded, resumed), one with another table size is refused."""
    run = tmp_path / "contract" / "offset_copy" / "ape"
    run.mkdir(parents=True)
    shutil.copy(DATA / "legacy_run" / "config.json", run)
    cfg = contract_train.Config()  # the saved run trained 1500 steps, the default back then
    cfg = dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, steps=1500))
    rc = contract_train.runs(cfg)["contract/offset_copy/ape"]
    assert checkpoints.read_config(run) == rc
    assert (rc.model.enc.size, rc.model.enc.oob, rc.model.enc.train_max) == (128, "clamp", 32)
    checkpoints.check_run_dir(run, rc, resume=True)
    other = dataclasses.replace(rc.model, enc=dataclasses.replace(rc.model.enc, size=64))
    with pytest.raises(ConfigError, match=r"enc\.size: saved 128 vs now 64"):
        checkpoints.check_run_dir(run, dataclasses.replace(rc, model=other), resume=True)


def test_a_saved_flat_program_is_recognised_as_finished(tmp_path, capsys):
    """A realizability program saved with flat fields (RoPE frequency scale 0.3) is skipped as
    finished by `realizability-train --rope-scale 0.3`; at another scale it is not the same."""
    name = "realizability-rope-scale-0.3"
    shutil.copytree(DATA / "legacy_program", tmp_path / "ck" / name / "1L1H" / "rope")
    run = RunOptions(seeds=5, steps=3000, batch=64, eval_sequences=1024,
                     ckpt_root=str(tmp_path / "ck"), out=str(tmp_path / "out"), progress=False)
    cfg = rt.Config(tiers=("1L1H",), encodings=("rope",), tasks=("skip-3",), rope_scale=0.3,
                    name=name, layout="flat", run=run)
    saved = json.loads((DATA / "legacy_program" / "results.json").read_text())
    assert rt.runs(cfg) == {}  # measured: nothing to train
    assert run_study(rt.STUDY, cfg)["programs"] == [saved]
    assert "1L1H rope" in capsys.readouterr().out
    path = rt.program_dir(cfg, "1L1H", "rope")
    other = rt.program_grid(dataclasses.replace(cfg, rope_scale=0.1), "1L1H", "rope")
    assert rt.measured(cfg, path, other) is None
    with pytest.raises(ConfigError, match=r"model\.enc\.scale: saved 0\.3 vs now 0\.1"):
        checkpoints.check_run_dir(path, other, resume=True)
    # measured at 1024 sequences, no checkpoint left: another evaluation is refused, not retrained
    fewer = dataclasses.replace(cfg, run=dataclasses.replace(run, eval_sequences=512))
    with pytest.raises(ConfigError, match="no final checkpoint to measure again"):
        run_study(rt.STUDY, fewer)
    assert json.loads((path / "results.json").read_text()) == saved
