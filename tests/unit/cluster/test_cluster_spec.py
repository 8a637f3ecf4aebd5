"""ClusterSpec validation and its JSON form."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from kchaos.harness.cluster.spec import ClusterSpec, parse_version, upgraded
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
    assert back.image == back.image_tag == "kchaos/kafka:4.4.0"
    assert back.toxiproxy_image == "kchaos/toxiproxy:2.12.0"
    assert back.run_id == "r-1"
    # the model's field, under the model's name: no kafka_image beside image (issue 34)
    assert "image" in spec.to_dict() and "kafka_image" not in spec.to_dict()
    source = ClusterSpec(image="registry", images=_Images("k:2", "t:2"))
    assert ClusterSpec.from_dict(source.to_dict()).image_tag == "k:2"


# run.json's cluster_spec as kchaos b45787f wrote it (before issue 34: the Kafka tag had a
# field of its own, kafka_image; no data_mount_options yet): a stored form that must load
OLD_RUN_JSON = Path(__file__).parents[1] / "rundir" / "fixtures" / "old_run_json"


def test_specs_stored_before_issue_34_load() -> None:
    stored = json.loads((OLD_RUN_JSON / "smoke-b45787f.json").read_text())["cluster_spec"]
    assert stored["kafka_image"] is None and "image" not in stored
    spec = ClusterSpec.from_dict(stored)
    assert (spec.brokers, spec.kafka_version, spec.run_id) == (3, "4.4.0", "20261126-203730-eadc")
    assert spec.image_tag == "kchaos/kafka:4.4.0"  # from the stored images, as before
    assert spec.toxiproxy_image == "kchaos/toxiproxy:2.12.0"
    assert spec.server_properties["replica.lag.time.max.ms"] == "5000"
    assert spec.data_mount_options == ()
    # a state file's spec of that form with an explicit Kafka tag: it becomes image
    old_state = {**stored, "images": None, "kafka_image": "k:1", "toxiproxy_image": "t:1"}
    assert upgraded(old_state)["image"] == "k:1" and "kafka_image" not in upgraded(old_state)
    back = ClusterSpec.from_dict(old_state)
    assert (back.image, back.toxiproxy_image) == ("k:1", "t:1")
    assert ClusterSpec.from_dict(back.to_dict()) == back
