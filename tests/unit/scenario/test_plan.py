"""The scenario's plan: cluster, workload and schedule built once by the loader, in their
own packages' types, and handed to the runner as they are."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_workload import FakeWorkload

import kchaos.faults.base
from kchaos.harness.cluster.spec import ClusterSpec, default_kafka_version
from kchaos.harness.errors import ConfigError
from kchaos.harness.run import orchestrate
from kchaos.harness.run.context import RunContext
from kchaos.harness.rundir.rundir import RunDir
from kchaos.harness.rundir.scenario_model import ClusterConfig, WorkloadConfig
from kchaos.harness.scenario import library, load_scenario
from kchaos.harness.scenario.plan import plan_of
from kchaos.workloads.spec import WorkloadSpec, producer_settings


def test_workload_spec_of_smoke():
    sc = library.load("smoke")
    assert sc.plan is not None
    spec = sc.plan.workload
    assert spec.topics == ("smoke",)
    assert spec.producers.count == 2 and len(spec.consumer_workers()) == 1
    assert spec.client == "confluent-kafka"
    settings = producer_settings(spec.producers)
    assert spec.producers.acks == "all" and settings.idempotence is True
    assert settings.delivery_timeout_ms == 60000
    # the scenario's producers as they are, with the client's quiet log level added
    assert spec.producers == dataclasses.replace(
        sc.workload.producers, configs={**sc.workload.producers.configs, "log_level": "3"}
    )
    assert spec.duration == sc.workload.duration


def test_the_plans_specs_are_the_scenario_model_no_mirrored_pairs() -> None:
    """One class per description, one name per field (issue 34): the plan's workload is
    the scenario's WorkloadConfig resolved (the values that need no resolving kept as
    they are), and ClusterSpec declares none of ClusterConfig's fields again."""
    sc = library.load("txn-smoke")
    spec = plan_of(sc).workload
    assert type(spec) is WorkloadConfig and WorkloadSpec is WorkloadConfig
    resolved = {"topics", "producers", "consumers"}
    for f in dataclasses.fields(WorkloadConfig):
        if f.name not in resolved:
            assert getattr(spec, f.name) == getattr(sc.workload, f.name), f.name
    own = set(ClusterSpec.__annotations__)  # declared by ClusterSpec itself
    assert own and not own & {f.name for f in dataclasses.fields(ClusterConfig)}
    assert issubclass(ClusterSpec, ClusterConfig)


def test_acks1_producer_is_not_idempotent():
    spec = plan_of(library.load("unsafe-acks1-unclean-election")).workload
    settings = producer_settings(spec.producers)
    assert spec.producers.acks == "1" and settings.idempotence is False
    assert settings.retries == 0 and settings.single_attempt


def test_cluster_spec():
    spec = plan_of(library.load("kip-392-follower-fetch-failover")).cluster
    assert spec.broker_properties[2] == {"broker.rack": "rack-2"}
    assert spec.server_properties["replica.selector.class"].endswith("RackAwareReplicaSelector")
    assert spec.image_tag is None and spec.images is None and spec.run_id is None
    assert spec.kafka_version == "4.4.0"
    # the spec is the scenario's cluster, the runtime's own fields added (issue 34)
    sc = library.load("kip-392-follower-fetch-failover")
    assert isinstance(spec, ClusterConfig) and spec.heap == sc.cluster.heap
    replace = dataclasses.replace
    tagged = replace(sc, cluster=replace(sc.cluster, image="my/kafka:1", kafka_version=None))
    spec = plan_of(tagged).cluster
    assert spec.image == spec.image_tag == "my/kafka:1"
    assert spec.kafka_version == default_kafka_version()
    assert (
        plan_of(replace(sc, cluster=replace(sc.cluster, image="registry"))).cluster.image_tag
        is None
    )


def test_every_library_schedule_builds_and_is_reproducible():
    for name in library.library_names():
        sc = library.load(name)
        a = plan_of(sc).schedule
        assert a is not None and a.faults, name
        assert a.to_list() == plan_of(library.load(name)).schedule.to_list(), name  # type: ignore[union-attr]
        # every step starts while the workload runs (one may outlast it: the final heal)
        assert max(f.at for f in a.faults) < sc.workload.duration, name
        assert a.seed == sc.seed


def test_random_schedule_of_leader_moves_follows_the_seed():
    sc = library.load("acks1-planned-leader-moves")
    schedule = plan_of(sc).schedule
    assert schedule is not None
    names = {f.spec.fault for f in schedule.faults}
    assert names <= {"preferred-election", "reassign"} and len(schedule.faults) >= 4
    other = library.load("acks1-planned-leader-moves", seed=sc.seed + 1).plan
    assert other is not None and other.schedule is not None
    assert other.schedule.to_list() != schedule.to_list()
    # a scenario re-seeded in Python (a matrix's seeds) gets the schedule of its seed
    reseeded = dataclasses.replace(sc, seed=sc.seed + 1)
    assert plan_of(reseeded).schedule.to_list() == other.schedule.to_list()  # type: ignore[union-attr]
    assert plan_of(sc) is sc.plan  # unchanged: the loader's plan itself


def test_the_plan_is_not_part_of_the_scenario_value():
    sc = library.load("smoke")
    assert "plan" not in sc.to_dict()
    assert sc == dataclasses.replace(sc, plan=None)


SCENARIO = """\
name: one-place
description: A scenario whose fault parameter is wrong, for the plan's unit test.
cluster:
  brokers: 3
topics:
  - name: t
workload:
  duration: 30
nemesis:
  steps:
    - fault: latency
      at: 5
      for: 5
      target: broker-1
      params:
        latency_ms: -5
"""
PRODUCER_CONFIG = "  duration: 30\n  producers:\n    configs:\n      retries: {retries}\n"


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every fault validation (fault_spec's parameter check) by fault name."""
    calls: list[str] = []
    real = kchaos.faults.base.validate_params

    def spy(declared: Any, raw: Any, where: Any) -> Any:
        calls.append(where.field)
        return real(declared, raw, where)

    monkeypatch.setattr(kchaos.faults.base, "validate_params", spy)
    return calls


def test_a_bad_fault_parameter_is_reported_once_with_the_scenario_line(validations):
    with pytest.raises(ConfigError) as err:
        load_scenario("one.yaml", text=SCENARIO)
    e = err.value
    assert (e.file, e.line, e.field) == ("one.yaml", 16, "nemesis.steps.0.params.latency_ms")
    assert "must be >= 0" in e.detail
    assert len(validations) == 1  # validated once, refused once


def test_each_scripted_fault_is_validated_once_at_load(validations):
    sc = load_scenario("one.yaml", text=SCENARIO.replace("-5", "50"))
    assert len(validations) == 1
    assert sc.plan is not None and sc.plan.schedule is not None
    (fault,) = sc.plan.schedule.faults
    assert (fault.id, fault.at, fault.duration, fault.spec.target) == ("f-1", 5.0, 5.0, "broker-1")
    assert fault.spec.params["latency_ms"] == 50.0 and fault.spec.seed == sc.seed


def test_a_bad_producer_property_names_its_line():
    text = SCENARIO.replace("  duration: 30\n", PRODUCER_CONFIG.format(retries="many"))
    with pytest.raises(ConfigError) as err:
        load_scenario("one.yaml", text=text)
    e = err.value
    assert (e.line, e.field) == (11, "workload.producers.configs.retries")
    assert "'many'" in e.detail


def test_workload_spec_refusals_name_the_scenario_field():
    # WorkloadSpec's own rule (idempotence needs retries), reported at load, in the file
    text = SCENARIO.replace("  duration: 30\n", PRODUCER_CONFIG.format(retries=0))
    with pytest.raises(ConfigError) as err:
        load_scenario("one.yaml", text=text)
    e = err.value
    assert (e.file, e.field) == ("one.yaml", "workload.producers") and e.line == 9
    assert "idempotence needs retries" in e.detail


class _Progress:
    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        yield

    def workload(self, *args: Any) -> None:
        pass

    def note(self, *args: Any) -> None:
        pass


class _Rec:
    def __init__(self) -> None:
        self.data: dict[str, Any] = {}

    def update(self, **fields: Any) -> None:
        self.data.update(fields)

    def started(self, **fields: Any) -> None:
        self.update(**fields, status="running")


def test_the_runner_hands_on_the_loaders_objects(monkeypatch, tmp_path: Path, validations):
    """_drive gives the workload and the nemesis the plan's own WorkloadSpec and Schedule,
    and nothing is parsed or validated again on the way."""
    import kchaos.faults.heal
    import kchaos.faults.nemesis
    import kchaos.faults.schedule
    import kchaos.workloads.features
    from kchaos.workloads.workload import Workload

    sc = library.load("smoke")
    assert sc.plan is not None
    validations.clear()
    seen: dict[str, Any] = {}

    def for_cluster(spec: Any, cluster: Any, history: Any, **kw: Any) -> FakeWorkload:
        seen["workload"] = spec
        return FakeWorkload()

    class FakeNemesis:
        heal_actions: list[str] = []

        def __init__(self, cluster: Any, schedule: Any, sink: Any, **kw: Any) -> None:
            seen["schedule"] = self.schedule = schedule

        def start(self) -> None:
            pass

        def stop(self) -> None:
            pass

        def errors(self) -> list[Any]:
            return []

    def no_parse(*args: Any, **kw: Any) -> Any:
        raise AssertionError("the runner parsed a schedule")

    monkeypatch.setattr(Workload, "for_cluster", staticmethod(for_cluster))
    monkeypatch.setattr(kchaos.faults.nemesis, "Nemesis", FakeNemesis)
    monkeypatch.setattr(kchaos.faults.nemesis, "build_nemesis", no_parse)
    monkeypatch.setattr(kchaos.faults.schedule, "from_spec", no_parse)
    monkeypatch.setattr(kchaos.faults.heal, "heal_everything", lambda cluster: [])
    monkeypatch.setattr(orchestrate, "create_topics", lambda *a: None)
    monkeypatch.setattr(orchestrate.reread, "collect", lambda *a: None)
    # no broker here: the feature probe would wait out its 30 s timeout
    monkeypatch.setattr(kchaos.workloads.features, "read_features", lambda *a: {})

    class Cluster:
        bootstrap_servers = "localhost:9092"
        run_id = "plan-test"  # the client directory of client: targets is kept per run

        def wait_ready(self, timeout: float) -> None:
            pass

        def wait_isr_full(self, topics: Any = None, timeout: float = 60.0) -> None:
            pass

    rec = _Rec()
    ctx = RunContext(sc, Cluster(), RunDir(tmp_path), _Progress(), rec)  # type: ignore[arg-type]
    orchestrate._drive(ctx)
    assert seen["workload"] is sc.plan.workload
    assert seen["schedule"] is sc.plan.schedule
    assert rec.data["schedule"] == sc.plan.schedule.to_list()  # type: ignore[union-attr]
    assert validations == []
