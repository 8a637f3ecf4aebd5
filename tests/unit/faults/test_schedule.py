from __future__ import annotations

import io
from typing import Any

import pytest
from ruamel.yaml import YAML

from kchaos.faults import from_spec, scripted
from kchaos.faults.params import Where
from kchaos.harness.errors import ConfigError

RANDOM: dict[str, Any] = {
    "type": "random",
    "start_s": 5,
    "duration_s": 300,
    "fault_s": [2, 8],
    "quiet_s": [1, 4],
    "faults": [
        {
            "fault": "pause",
            "weight": 2,
            "target": ["random", "controller", "leader:t:0"],
            "params": {"mode": {"choice": ["sigstop", "freezer"]}},
        },
        {
            "fault": "latency",
            "for": [1, 3],
            "params": {"latency_ms": {"randint": [50, 500]}, "link": "replication"},
        },
        {"fault": "isolate"},
        {"fault": "slow-disk", "params": {"freeze_ms": {"randint": [50, 300]}}},
    ],
}


def test_scripted_sorted_with_ids_and_defaults() -> None:
    s = from_spec(
        {
            "faults": [
                {"at": 30, "for": 5, "fault": "kill", "target": "broker-1"},
                {"at": 10, "duration": 20, "fault": "pause", "params": {"mode": "freezer"}},
            ]
        }
    )
    assert [(f.id, f.at, f.duration, f.spec.fault) for f in s.faults] == [
        ("f-1", 10.0, 20.0, "pause"),
        ("f-2", 30.0, 5.0, "kill"),
    ]
    assert s.faults[0].spec.target == "random"
    assert s.faults[0].spec.params["mode"] == "freezer"
    assert s.length == 35.0
    assert scripted((1, 2, "pause", "broker-2", {})).faults[0].spec.target == "broker-2"


def test_same_seed_same_schedule() -> None:
    a = from_spec(RANDOM, seed=42).to_list()
    b = from_spec(RANDOM, seed=42).to_list()
    c = from_spec(RANDOM, seed=43).to_list()
    assert a == b
    assert a != c
    assert len(a) > 20
    assert {f["fault"] for f in a} == {"pause", "latency", "isolate", "slow-disk"}
    assert len({f["target"] for f in a if f["fault"] == "pause"}) == 3
    # the spec's own seed wins over the run's
    assert from_spec({**RANDOM, "seed": 42}, seed=99).to_list() == a


def test_random_respects_window_quiet_and_ranges() -> None:
    s = from_spec(RANDOM, seed=1)
    prev_end = 0.0
    for f in s.faults:
        assert f.at >= 5 and f.end <= 305 + 1e-6
        assert f.at - prev_end >= 1 - 1e-6  # quiet period (one lane)
        prev_end = f.end
        if f.spec.fault == "latency":
            assert 1 <= f.duration <= 3 and 50 <= f.spec.params["latency_ms"] <= 500
        else:
            assert 2 <= f.duration <= 8
        if f.spec.fault == "pause":
            assert f.spec.params["mode"] in ("sigstop", "freezer")


def test_lanes_overlap_and_stagger() -> None:
    s = from_spec({**RANDOM, "concurrency": 3, "stagger_s": 1.5}, seed=5)
    ats = [f.at for f in s.faults]
    assert ats == sorted(ats)
    assert ats[:3] == [5.0, 6.5, 8.0]
    overlaps = sum(1 for x, y in zip(s.faults, s.faults[1:], strict=False) if y.at < x.end)
    assert overlaps > 0


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"type": "chaos", "faults": []}, "nemesis.type"),
        ({"faults": []}, "nemesis.faults"),
        ({"faults": [{"for": 3, "fault": "pause"}]}, "nemesis.faults[0].at"),
        ({"faults": [{"at": -1, "fault": "pause"}]}, "nemesis.faults[0].at"),
        ({"faults": [{"at": 1, "fault": "pause", "color": 1}]}, "nemesis.faults[0].color"),
        (
            {"faults": [{"at": 1, "fault": "pause", "params": {"mode": "gc"}}]},
            "nemesis.faults[0].params.mode",
        ),
        ({**RANDOM, "quiet_s": [4, 1]}, "nemesis.quiet_s"),
        (
            {
                **RANDOM,
                "faults": [{"fault": "latency", "params": {"latency_ms": {"randint": [-9, -1]}}}],
            },
            "nemesis.faults[0].params.latency_ms",
        ),
        ({**RANDOM, "faults": [{"fault": "pause", "target": []}]}, "nemesis.faults[0].target"),
        ({**RANDOM, "faults": [{"fault": "pause", "weight": 0}]}, "nemesis.faults"),
    ],
)
def test_errors_name_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as err:
        from_spec(spec)
    assert err.value.field == field, str(err.value)


def test_errors_carry_yaml_lines() -> None:
    text = """\
nemesis:
  type: scripted
  faults:
    - at: 1
      fault: pause
    - at: 2
      fault: latency
      params:
        latency_ms: -3
"""
    doc = YAML().load(io.StringIO(text))
    with pytest.raises(ConfigError) as err:
        from_spec(doc["nemesis"], where=Where("s.yaml", "nemesis"))
    assert err.value.line == 9
    assert str(err.value).startswith("s.yaml:9: nemesis.faults[1].params.latency_ms:")


def test_duration_is_the_old_spelling_of_for_and_not_both() -> None:
    new = from_spec({"faults": [{"at": 1, "for": 4, "fault": "pause"}]}).to_list()
    old = from_spec({"faults": [{"at": 1, "duration": 4, "fault": "pause"}]}).to_list()
    assert new == old and new[0]["for"] == 4.0
    with pytest.raises(ConfigError) as err:
        from_spec({"faults": [{"at": 1, "for": 4, "duration": 4, "fault": "pause"}]})
    assert err.value.field == "nemesis.faults[0].duration"
    assert "old spelling" in err.value.detail
