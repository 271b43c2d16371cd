"""Encoding options on ModelConfig: defaults, JSON round trip, a saved config's unknown
encoding."""

import dataclasses
import json

import pytest

from lgjax import encodings
from lgjax.config import ConfigError, ModelConfig, RunConfig, TrainConfig


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


def test_an_unknown_encoding_in_a_saved_config_is_named():
    with pytest.raises(ConfigError, match="nosuch"):
        ModelConfig.from_dict({"encoding": "nosuch"})


