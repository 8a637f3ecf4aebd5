from kchaos.faults.schedule import from_spec
from kchaos.harness.run import translate
from kchaos.harness.scenario import library


def test_workload_spec_of_smoke():
    sc = library.load("smoke")
    spec = translate.workload_spec(sc)
    spec.validate()
    assert spec.topics == ("smoke",)
    assert spec.producers == 2 and len(spec.consumers) == 1
    assert spec.client == "confluent"
    assert spec.producer.acks == "all" and spec.producer.idempotence is True
    assert spec.producer.delivery_timeout_ms == 10000
    assert spec.duration_s == sc.workload.duration


def test_acks1_producer_is_not_idempotent():
    sc = library.load("unsafe-acks1-unclean-election")
    spec = translate.workload_spec(sc)
    spec.validate()
    assert spec.producer.acks == "1" and spec.producer.idempotence is False
    assert spec.producer.retries == 0


def test_cluster_fields():
    sc = library.load("kip-392-follower-fetch-failover")
    fields = translate.cluster_fields(sc, "4.4.0")
    assert fields["broker_properties"][2] == {"broker.rack": "rack-2"}
    assert fields["server_properties"]["replica.selector.class"].endswith(
        "RackAwareReplicaSelector"
    )
    assert "kafka_image" not in fields


def test_every_library_schedule_builds_and_is_reproducible():
    for name in library.library_names():
        sc = library.load(name)
        spec = translate.nemesis_spec(sc)
        assert spec is not None
        a = from_spec(spec, seed=sc.seed)
        b = from_spec(spec, seed=sc.seed)
        assert a.to_list() == b.to_list() and a.faults, name
        assert a.length <= sc.workload.duration, name


def test_random_schedule_of_leader_moves():
    sc = library.load("acks1-planned-leader-moves")
    schedule = from_spec(translate.nemesis_spec(sc), seed=sc.seed)
    names = {f.spec.fault for f in schedule.faults}
    assert names <= {"preferred-election", "reassign"} and len(schedule.faults) >= 4
    other = from_spec(
        translate.nemesis_spec(library.load("acks1-planned-leader-moves", seed=sc.seed + 1)),
        seed=sc.seed + 1,
    )
    assert other.to_list() != schedule.to_list()
