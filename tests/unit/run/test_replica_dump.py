"""The replica dump: kafka-dump-log.sh text to batches, and replicas.jsonl as the runner
writes it (the cluster faked; the text is real).

The fixture is the output of ``kafka-dump-log.sh --deep-iteration --print-data-log`` on
``ctl-0`` of broker 1 after a real run on Kafka 4.4.0 (idempotent producer, the
partition's leader SIGKILLed at 5 s and restarted: leader epoch 0, then 1), the payload
cut after the workloads' ``|`` as the runner cuts it inside the container, and the file
shortened to the batches that start below offset 300.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from kchaos.harness.errors import InputError
from kchaos.harness.run import replicas
from kchaos.harness.run.replica_dump import parse_segments, partition_of
from kchaos.harness.rundir.rundir import RunDir

FIXTURE = Path(__file__).parent / "fixtures" / "kafka-4.4.0-replica-leader-kill.dump.txt"


def test_the_real_dump_gives_every_batch_and_record() -> None:
    text = FIXTURE.read_text()
    batches = list(parse_segments(text))
    assert len(batches) == text.count("\nbaseOffset: ")
    records = [r for b in batches for r in b.records]
    assert len(records) == text.count("\n| offset: ")
    # one idempotent producer, its sequence the offset, its values "1-<n>"
    assert [r.offset for r in records] == list(range(len(records)))
    assert all(r.sequence == r.offset and r.value == f"1-{r.offset}" for r in records)
    assert {(b.producer_id, b.producer_epoch) for b in batches} == {(0, 0)}
    assert all(b.base_offset == b.records[0].offset for b in batches)
    assert all(b.last_offset == b.records[-1].offset for b in batches)
    assert all(b.base_sequence == b.base_offset for b in batches)
    # the kill shows as a new leader epoch from the batch at offset 269 on
    epochs = [(b.base_offset, b.leader_epoch) for b in batches]
    assert {e for _, e in epochs} == {0, 1}
    assert min(o for o, e in epochs if e == 1) == 269
    assert max(o for o, e in epochs if e == 0) < 269
    assert {(b.topic, b.partition) for b in batches} == {("ctl", 0)}
    assert not any(b.control or b.transactional for b in batches)


def test_an_uncut_payload_a_control_batch_and_two_partitions() -> None:
    text = "\n".join(
        [
            "Dumping /d/a-b-3/00000000000000000000.log",
            "Log starting offset: 0",
            "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 "
            "producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 2 isTransactional: false "
            "isControl: false position: 0",
            "| offset: 0 CreateTime: 1 keySize: -1 valueSize: 9 sequence: -1 headerKeys: [] "
            "payload: 4-2|xx xx",
            "Dumping /d/t-0/00000000000000000005.log",
            "baseOffset: 5 lastOffset: 5 count: 1 baseSequence: -1 lastSequence: -1 "
            "producerId: 9 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true "
            "isControl: true position: 0",
            "| offset: 5 CreateTime: 1 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
            "endTxnMarker: COMMIT coordinatorEpoch: 0",
        ]
    )
    a, b = parse_segments(text)
    assert (a.topic, a.partition, a.leader_epoch, a.producer_id) == ("a-b", 3, 2, -1)
    assert a.records[0].value == "4-2"
    assert (b.topic, b.partition, b.control, b.transactional) == ("t", 0, True, True)
    assert b.records[0].value is None and b.records[0].offset == 5


def test_a_batch_line_without_its_offsets_names_the_line() -> None:
    text = "Dumping /d/t-0/0.log\nbaseOffset: x lastOffset: 0 partitionLeaderEpoch: 0\n"
    with pytest.raises(InputError) as err:
        list(parse_segments(text, source="dump of broker-1"))
    assert err.value.line == 2 and err.value.field == "baseOffset"
    assert str(err.value).startswith("dump of broker-1:2: baseOffset")


def test_segment_files_are_the_run_topics_in_offset_order() -> None:
    listing = [
        "/d/t-1/00000000000000000100.log",
        "/d/t-1/00000000000000000020.log",
        "/d/t-0/00000000000000000000.log",
        "/d/t-x-0/00000000000000000000.log",  # another topic whose name starts with t-
        "/d/__cluster_metadata-0/00000000000000000000.log",
        "/d/t-0/00000000000000000000.index",
    ]
    assert replicas.segment_files(listing, ["t"]) == [
        "/d/t-0/00000000000000000000.log",
        "/d/t-1/00000000000000000020.log",
        "/d/t-1/00000000000000000100.log",
    ]
    assert partition_of("/d/t-x-0/00000000000000000000.log") == ("t-x", 0)


def test_the_checkpoint_gives_each_partitions_high_watermark() -> None:
    text = "0\n3\n__consumer_offsets 3 0\nctl 0 721\nkchaos-probe 0 0\n"
    assert replicas.parse_checkpoint(text)[("ctl", 0)] == 721


@dataclass(frozen=True)
class Node:
    node_id: int
    name: str


class FakeCluster:
    """Broker 1 answers with the real dump; broker 2 is stopped."""

    def __init__(self) -> None:
        self.brokers = (Node(1, "broker-1"), Node(2, "broker-2"))
        self.calls: list[list[str]] = []

    def exec(self, node: Node, cmd: list[str]) -> tuple[int, str]:
        self.calls.append(cmd)
        if node.node_id == 2:
            raise RuntimeError("container kchaos-x-broker-2 is not running")
        if cmd[0] == "find":
            return 0, "/var/lib/kafka/data/ctl-0/00000000000000000000.log\n"
        if cmd[0] == "cat":
            return 0, "0\n1\nctl 0 721\n"
        return 0, FIXTURE.read_text()


def test_log_dirs_are_the_ones_the_harness_gives_the_broker() -> None:
    from kchaos.harness.cluster.spec import ClusterSpec

    class WithSpec:
        toxiproxy_ip = "10.0.0.2"

        def __init__(self, props: dict[str, str]) -> None:
            self.spec = ClusterSpec(brokers=1, server_properties=props)

    node = Node(1, "broker-1")
    assert replicas.log_dirs(WithSpec({}), node) == ["/var/lib/kafka/data"]
    assert replicas.log_dirs(WithSpec({"log.dirs": "/a/, /b"}), node) == ["/a", "/b"]
    assert replicas.log_dirs(FakeCluster(), node) == ["/var/lib/kafka/data"]  # no spec


def test_replicas_jsonl_has_a_line_per_broker_and_batch(tmp_path: Path) -> None:
    cluster = FakeCluster()
    summary = replicas.write_replicas(cluster, RunDir(tmp_path), ["ctl"])
    lines: list[dict[str, Any]] = [
        orjson.loads(x) for x in (tmp_path / "replicas.jsonl").read_bytes().splitlines()
    ]
    assert lines[0]["type"] == "reader"
    brokers = [x for x in lines if x["type"] == "broker"]
    assert [(b["broker"], b["status"]) for b in brokers] == [(1, "dumped"), (2, "unavailable")]
    assert "not running" in brokers[1]["error"]
    (rep,) = brokers[0]["replicas"]
    batches = [x for x in lines if x["type"] == "batch"]
    assert rep["batches"] == len(batches) == 115 and rep["records"] == 368
    assert (rep["first_offset"], rep["next_offset"], rep["checkpoint_high_watermark"]) == (
        0,
        368,
        721,
    )
    assert batches[0]["records"][:2] == [[0, 0, "1-0"], [1, 1, "1-1"]]
    assert summary["brokers"]["broker-2"]["status"] == "unavailable"
    assert not list(tmp_path.glob("*.tmp"))
    assert "1 of 2 broker(s)" in replicas.describe(summary)


def test_collect_never_raises_and_records_the_error(tmp_path: Path) -> None:
    class Rec:
        data: dict[str, Any] = {}

        def update(self, **kw: Any) -> None:
            self.data.update(kw)

    rec = Rec()
    summary = replicas.collect(object(), RunDir(tmp_path / "missing-dir"), rec, ["ctl"])
    assert "error" in summary and rec.data["replicas"] == summary
