"""ClusterSpec validation and its JSON form."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kchaos.harness.cluster.spec import ClusterSpec, parse_version
from kchaos.harness.errors import ConfigError


def test_defaults() -> None:
    spec = ClusterSpec()
    assert spec.brokers == 3 and spec.controllers == 0
    assert spec.node_ids == (1, 2, 3) and spec.controller_ids == (1, 2, 3)
    assert spec.roles(1) == ("broker", "controller")


def test_dedicated_controller_ids() -> None:
    spec = ClusterSpec(brokers=2, controllers=3)
    assert spec.node_ids == (1, 2, 101, 102, 103)
    assert spec.roles(1) == ("broker",)
    assert spec.roles(102) == ("controller",)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"brokers": 0}, "brokers"),
        ({"controllers": -1}, "controllers"),
        ({"kafka_version": "3.2.0"}, "kafka_version"),
        ({"kafka_version": "four"}, "kafka_version"),
        ({"heap": "lots"}, "heap"),
        ({"disk_size_mb": 1}, "disk_size_mb"),
        ({"run_id": "../etc"}, "run_id"),
        ({"broker_properties": {7: {"a": "b"}}}, "broker_properties"),
        ({"racks": {9: "x"}}, "racks"),
    ],
)
def test_bad_values_name_their_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        ClusterSpec(**kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


def test_parse_version() -> None:
    assert parse_version("4.4.0") == (4, 4, 0)
    assert parse_version("3.3") == (3, 3, 0)
    assert parse_version("3.9.1-rc1") == (3, 9, 1)


@dataclass(frozen=True)
class _Images:
    kafka: str
    toxiproxy: str
    kafka_version: str = "4.4.0"


def test_dict_round_trip_keeps_properties_racks_and_images() -> None:
    spec = ClusterSpec(
        brokers=3,
        images=_Images("kchaos/kafka:4.4.0", "kchaos/toxiproxy:2.12.0"),
        server_properties={"a.b": 1},
        broker_properties={2: {"c.d": "x"}},
        racks={1: "r1"},
        run_id="r-1",
    )
    back = ClusterSpec.from_dict(spec.to_dict())
    assert back.server_properties == {"a.b": "1"}
    assert back.broker_properties == {2: {"c.d": "x"}}
    assert back.racks == {1: "r1"}
    assert back.kafka_image == "kchaos/kafka:4.4.0"
    assert back.toxiproxy_image == "kchaos/toxiproxy:2.12.0"
    assert back.run_id == "r-1"
