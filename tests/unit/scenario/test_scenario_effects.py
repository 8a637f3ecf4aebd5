"""``expect.effects``: the faults whose own effect a run must show, named by step id or by
fault name, checked against the scenario's nemesis when it loads."""

from __future__ import annotations

import pytest
from test_loader import GOOD, error_of, load

from kchaos.harness.scenario.dump import scenario_yaml

EXPECT = "  valid: false\n  anomalies: [lost-write]"


def with_effects(entries: str) -> str:
    return GOOD.replace(EXPECT, f"  valid: true\n  effects: {entries}")


def test_effects_by_step_id_and_by_fault_name_load_and_dump() -> None:
    sc = load(with_effects("[f-1, pause]"))
    assert sc.expect.effects == ("f-1", "pause")
    assert sc.to_dict()["expect"]["effects"] == ["f-1", "pause"]
    assert "effects:\n  - f-1\n  - pause" in scenario_yaml(sc)
    assert load(GOOD).expect.effects == ()


@pytest.mark.parametrize(
    ("entries", "words"),
    [
        ("[f-2]", "no fault f-2: the nemesis has 1"),
        ("[f-0]", "no fault f-0"),
        ("[kill]", "'kill' is neither a step id"),
    ],
)
def test_an_effect_naming_no_fault_of_the_nemesis_is_refused(entries: str, words: str) -> None:
    err = error_of(with_effects(entries))
    assert words in str(err)
    assert err.field == "expect.effects.0"


def test_an_effect_that_is_not_a_name_is_refused_by_the_schema() -> None:
    err = error_of(with_effects("[F 1]"))
    assert err.field is not None and "effects" in err.field


def test_effects_per_release() -> None:
    text = GOOD.replace(
        EXPECT, '  valid: true\n  before:\n    "3.7.0": {valid: false, effects: [f-1]}'
    )
    assert load(text, kafka_version="3.6.2").expect.effects == ("f-1",)
    assert load(text, kafka_version="3.7.0").expect.effects == ()
