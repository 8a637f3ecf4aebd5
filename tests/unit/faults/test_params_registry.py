from __future__ import annotations

import pytest

from kchaos.faults import fault_spec, registry
from kchaos.faults.base import takes_no_target
from kchaos.faults.params import Param, Where, validate_params
from kchaos.harness.errors import ConfigError


def test_registry_has_every_family() -> None:
    reg = registry()
    families = {cls.family for cls in reg.values()}
    assert families == {"network", "partition", "pause", "disk", "crash", "leadership", "client"}
    for name in ("latency", "bandwidth", "timeout", "reset-peer", "slow-close"):
        assert reg[name].family == "network"
    for name in ("isolate", "split", "cut", "bridge", "client-cut"):
        assert reg[name].family == "partition"
    for name in ("kill", "term", "rolling-restart", "hard-reboot", "power-loss"):
        assert reg[name].family == "crash"
    assert {"pause", "disk-stall", "slow-disk", "disk-full"} <= set(reg)
    for cls in reg.values():
        assert cls.__doc__ and cls.summary, cls.name
        for p in cls.params_spec:
            assert p.doc, (cls.name, p.name)


def test_defaults_filled_in() -> None:
    spec = fault_spec("latency", "broker-1", {"latency_ms": 250})
    assert spec.params == {
        "link": "all",
        "direction": "both",
        "toxicity": 1.0,
        "latency_ms": 250,
        "jitter_ms": 0,
    }
    assert fault_spec("split").target == "minority"
    assert fault_spec("power-loss").target == "all"


@pytest.mark.parametrize(
    ("params", "field", "fragment"),
    [
        ({"latency": 5}, "params.latency", "unknown parameter"),
        ({"latency_ms": -5}, "params.latency_ms", ">= 0"),
        ({"latency_ms": "fast"}, "params.latency_ms", "must be a number"),
        ({"latency_ms": 1.5}, "params.latency_ms", "integer"),
        ({"link": "storage"}, "params.link", "one of"),
        ({"toxicity": 2}, "params.toxicity", "<= 1"),
        ({"direction": True}, "params.direction", "string"),
    ],
)
def test_bad_params_name_the_field(params: dict[str, object], field: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        fault_spec("latency", "random", params, where=Where("s.yaml", "nemesis.faults[0]"))
    assert err.value.field == f"nemesis.faults[0].{field}"
    assert fragment in str(err.value)
    assert str(err.value).startswith("s.yaml: nemesis.faults[0]." + field)


def test_unknown_fault_and_bad_target() -> None:
    with pytest.raises(ConfigError, match="unknown fault 'lightning'") as err:
        fault_spec("lightning")
    assert err.value.field == "fault"
    with pytest.raises(ConfigError) as err:
        fault_spec("pause", "leader:t")
    assert err.value.field == "target"
    with pytest.raises(ConfigError) as err:
        fault_spec("cut", "broker-1", {"to": "random:0"})
    assert err.value.field == "params.to"


def test_bool_is_not_a_number() -> None:
    with pytest.raises(ConfigError):
        validate_params([Param("x", "float", 1.0, "x")], {"x": True}, Where())
    assert validate_params([Param("x", "float", 1.0, "x")], {"x": 2}, Where()) == {"x": 2.0}
    with pytest.raises(ConfigError, match="mapping"):
        validate_params([], [1, 2], Where())  # type: ignore[arg-type]


@pytest.mark.parametrize("target", ["random", "random:2", "broker-1", 2, "controller", "all"])
def test_a_fault_that_takes_no_target_refuses_every_target_class(target: object) -> None:
    where = Where("s.yaml", "nemesis.faults[0]")
    with pytest.raises(ConfigError) as err:
        fault_spec("preferred-election", target, where=where)  # type: ignore[arg-type]
    assert err.value.field == "nemesis.faults[0].target"
    assert "preferred-election takes no target" in str(err.value)
    assert fault_spec("preferred-election").target == "none"
    assert fault_spec("reassign", "none", {"topic": "t"}).target == "none"
    assert takes_no_target("reassign") and not takes_no_target("pause")
    assert not takes_no_target("lightning")
