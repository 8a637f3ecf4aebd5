from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from test_schedule import RANDOM

from kchaos.faults import from_spec
from kchaos.faults.schema import nemesis_schema
from kchaos.harness.errors import ConfigError

SCRIPTED = {
    "type": "scripted",
    "faults": [
        {
            "at": 1,
            "for": 5,
            "fault": "pause",
            "target": "leader:t:0",
            "params": {"mode": "freezer"},
        },
        {"at": 3, "fault": "cut", "target": 2, "params": {"to": "broker-3", "both_ways": True}},
    ],
}


VALIDATOR = jsonschema.Draft202012Validator(nemesis_schema())


def test_schema_is_valid_and_accepts_good_specs() -> None:
    jsonschema.Draft202012Validator.check_schema(nemesis_schema())
    for spec in (SCRIPTED, RANDOM):
        VALIDATOR.validate(spec)
        from_spec(spec)


@pytest.mark.parametrize(
    "bad",
    [
        {"faults": [{"at": 1, "fault": "lightning"}]},
        {"faults": [{"at": 1, "fault": "pause", "params": {"mode": "gc"}}]},
        {"faults": [{"at": 1, "fault": "latency", "params": {"latency": 3}}]},
        {"faults": [{"at": -1, "fault": "pause"}]},
        {"type": "random", "faults": [{"fault": "pause", "params": {"pause_s": {"pick": [1]}}}]},
        {"type": "random", "quiet": 3, "faults": [{"fault": "pause"}]},
        # a fault that takes no target, given a target class (scripted and random)
        {"faults": [{"at": 1, "fault": "preferred-election", "target": "broker-1"}]},
        {"type": "random", "faults": [{"fault": "preferred-election", "target": ["random"]}]},
        {"type": "random", "faults": [{"fault": "reassign", "target": "all"}]},
        # a step's length given twice: for, and its old spelling duration
        {"faults": [{"at": 1, "for": 2, "duration": 2, "fault": "pause"}]},
    ],
)
def test_schema_and_from_spec_both_reject(bad: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate(bad)
    with pytest.raises(ConfigError):
        from_spec(bad)


def test_a_fault_that_takes_no_target_accepts_none_or_nothing() -> None:
    for spec in (
        {"faults": [{"at": 1, "fault": "preferred-election", "target": "none"}]},
        {"faults": [{"at": 1, "fault": "preferred-election"}]},
        {"type": "random", "faults": [{"fault": "preferred-election", "target": ["none"]}]},
        {"type": "random", "faults": [{"fault": "preferred-election"}]},
    ):
        VALIDATOR.validate(spec)
        from_spec(spec)


def test_a_random_entry_names_the_target_it_refuses() -> None:
    spec = {
        "type": "random",
        "faults": [
            {"fault": "pause", "target": ["random"]},
            {"fault": "preferred-election", "target": ["none", "random"]},
        ],
    }
    with pytest.raises(ConfigError) as err:
        from_spec(spec)
    assert err.value.field == "nemesis.faults[1].target[1]"  # the second choice
    assert "takes no target" in str(err.value) and "'random'" in str(err.value)
