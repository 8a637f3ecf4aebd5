import json
from pathlib import Path

import jsonschema
import pytest

from kchaos.cli.main import main
from kchaos.harness.scenario import library
from kchaos.harness.scenario.loader import schema

REQUIRED = {
    "kip-501-slow-leader",
    "kip-903-lost-page-cache-rejoin",
    "kip-392-follower-fetch-failover",
    "kip-263-unclean-restart",
    "zombie-leader-gc-pause",
    "whole-cluster-power-loss",
    "whole-cluster-power-loss-flush-every-message",
    "unsafe-acks1-unclean-election",
    "acks1-planned-leader-moves",
    "librdkafka-idempotent-duplicate",
    "smoke",
    "txn-smoke",
    "txn-coordinator-failover",
    "txn-zombie-fencing",
    "txn-unsafe-unclean-election",
    "kafka-15489-controller-split-brain",
    "kafka-15375-failed-start-marker",
    "eos-copier-broker-bounces",
}


def test_published_schema_is_a_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(schema())
    on_disk = Path(__file__).parents[3] / "harness" / "schema" / "scenario.schema.json"
    assert json.loads(on_disk.read_text()) == schema()


def test_library_has_every_incident():
    assert set(library.library_names()) >= REQUIRED


def test_faults_registry_is_used_for_validation():
    # The library is validated against the real fault names and parameters: each scenario
    # carries the faults' own validated specs.
    sc = library.load("smoke")
    assert sc.plan is not None and sc.plan.schedule is not None
    assert all(f.spec.params for f in sc.plan.schedule.faults)


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_every_library_scenario_validates(name):
    sc = library.load(name)
    assert sc.name == name
    assert len(sc.description) > 250, "the paragraph: incident, source, healthy behaviour"
    assert "source" in sc.description.lower()
    assert not sc.nemesis.empty


def test_negative_controls_and_twin():
    power = library.load("whole-cluster-power-loss")
    assert power.expect.valid is False and "lost-write" in power.expect.anomalies
    assert "log.flush.interval.messages" not in power.cluster.server_properties
    twin = library.load("whole-cluster-power-loss-flush-every-message")
    assert twin.expect.valid is True
    assert twin.cluster.server_properties["log.flush.interval.messages"] == "1"
    assert [s.fault for s in twin.nemesis.steps] == [s.fault for s in power.nemesis.steps]
    unsafe = library.load("unsafe-acks1-unclean-election")
    assert unsafe.workload.producers.acks == "1" and "lost-write" in unsafe.expect.anomalies
    assert library.load("acks1-planned-leader-moves").expect.valid is None


def test_smoke_is_short():
    sc = library.load("smoke")
    assert sc.workload.duration <= 60


def test_resolve_paths_and_names(tmp_path: Path):
    assert library.resolve("smoke").name == "smoke.yaml"
    f = tmp_path / "mine.yaml"
    f.write_text(library.resolve("smoke").read_text())
    assert library.resolve(str(f)) == f
    assert library.suite_members("nightly") == [
        library.library_dir() / f"{n}.yaml" for n in library.library_names()
    ]
    assert library.suite_members(str(tmp_path)) == [f]


def run_cli(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    out = capsys.readouterr()
    return exit_.value.code, out.out, out.err


def test_cli_scenarios_lists_the_library(capsys):
    code, out, _ = run_cli(["scenarios"], capsys)
    assert code == 0
    lines = out.rstrip().splitlines()
    # one line per scenario; a known-bug scenario's ticket on an indented line below it
    assert {line.split()[0] for line in lines if not line.startswith(" ")} == set(
        library.library_names()
    )
    assert any(line.split()[0] == "KAFKA-15489:" for line in lines if line.startswith(" "))


def test_cli_validate(capsys, tmp_path: Path):
    code, out, _ = run_cli(["validate", "smoke", "kip-501-slow-leader"], capsys)
    assert code == 0 and out.count("valid scenario") == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text(library.resolve("smoke").read_text().replace("brokers: 3", "brokers: -1"))
    code, _, err = run_cli(["validate", str(bad)], capsys)
    assert code == 3
    assert err.startswith(f"kchaos: {bad}:") and "cluster.brokers" in err
    assert "Traceback" not in err
    code, _, err = run_cli(["validate", "smoke", "--set", "workload.duration=5"], capsys)
    assert code == 3 and "after the workload" in err


def test_cli_broker_config_overlay(capsys, tmp_path: Path):
    props = tmp_path / "server.properties"
    props.write_text("log.flush.interval.messages=\\\n  1\n")
    code, out, _ = run_cli(["validate", "smoke", "--broker-config", str(props)], capsys)
    assert code == 0
    sc = library.load("smoke", broker_config=props)
    assert sc.cluster.server_properties["log.flush.interval.messages"] == "1"


def test_kip_501_slow_leader_expects_an_outage_before_elr_and_none_with_it():
    from kchaos.harness.scenario.loader import load_scenario

    path = library.library_dir() / "kip-501-slow-leader.yaml"
    before = load_scenario(path, kafka_version="3.9.1").expect
    after = load_scenario(path, kafka_version="4.4.0").expect
    assert before.anomalies == ("offline",) and (before.offline_at_least or 0) >= 10
    assert "offline" not in before.forbid
    assert after.forbid == ("offline",) and after.offline_at_least is None


def test_kip_501_slow_leader_slows_the_leader_with_load_only():
    # issue 21: the leader is made slow by its own request handling, with no fault on its
    # links or disk; the only fault is the kill of the lone leader, started by the shrink
    from kchaos.faults.base import registry

    sc = library.load("kip-501-slow-leader")
    faults = registry()
    assert sc.nemesis.random is None
    assert [(s.fault, faults[s.fault].family) for s in sc.nemesis.steps] == [("kill", "crash")]
    assert sc.cluster.broker_properties[1]["num.io.threads"] in (1, "1")
    assert sc.topics[0].configs["compression.zstd.level"] in (19, "19")
