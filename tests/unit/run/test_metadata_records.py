"""The metadata-log converter (harness.run.metadata_records): hand-made dumps for each
replay rule, and dumps captured from real brokers (tests/unit/run/fixtures)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kchaos.harness.checker.controller import read_controller
from kchaos.harness.errors import MetadataDumpError
from kchaos.harness.run.metadata_records import (
    BrokerLine,
    PartitionLine,
    convert,
    parse_dump,
    snapshot_to_read,
)
from kchaos.harness.rundir.controller import IncompleteLine

T0_MS = 1_700_000_000_000
ORIGIN = (T0_MS + 1_000) * 1_000_000  # the history started 1 s after the first batch
TID = "AAAAAAAAAAAAAAAAAAAAAQ"
OTHER = "AAAAAAAAAAAAAAAAAAAAAg"


def batch(offset: int, ms: int, *records: dict) -> str:
    head = (
        f"baseOffset: {offset} lastOffset: {offset + len(records) - 1} count: {len(records)} "
        "baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 1 isTransactional: false isControl: false "
        f"deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: {ms} size: 100 "
        "magic: 2 compresscodec: none crc: 1 isvalid: true"
    )
    lines = [head]
    for i, rec in enumerate(records):
        lines.append(
            f"| offset: {offset + i} CreateTime: {ms} keySize: -1 valueSize: 10 sequence: -1 "
            f"headerKeys: [] payload: {json.dumps(rec)}"
        )
    return "\n".join(lines)


def rec(typ: str, version: int = 0, **data: object) -> dict:
    return {"type": typ, "version": version, "data": data}


def topic(name: str, tid: str = TID) -> dict:
    return rec("TOPIC_RECORD", name=name, topicId=tid)


def partition(part: int = 0, tid: str = TID, **over: object) -> dict:
    data = {
        "partitionId": part,
        "topicId": tid,
        "replicas": [1, 2, 3],
        "isr": [1, 2, 3],
        "removingReplicas": [],
        "addingReplicas": [],
        "leader": 1,
        "leaderEpoch": 0,
        "partitionEpoch": 0,
    }
    data.update(over)
    return rec("PARTITION_RECORD", **data)


def change(part: int = 0, tid: str = TID, version: int = 0, **over: object) -> dict:
    return rec("PARTITION_CHANGE_RECORD", version, partitionId=part, topicId=tid, **over)


def register(broker: int, epoch: int, version: int = 3, **over: object) -> dict:
    data = {"brokerId": broker, "brokerEpoch": epoch, "incarnationId": "x", "endPoints": []}
    data.update(over)
    return rec("REGISTER_BROKER_RECORD", version, **data)


def dump(*batches: str, path: str = "/d/__cluster_metadata-0/00000000000000000000.log") -> str:
    return f"Dumping {path}\nLog starting offset: 0\n" + "\n".join(batches) + "\n"


def lines(text: str, topics=("t",)) -> list:
    return convert(parse_dump(text), origin_unix_ns=ORIGIN, topics=topics).lines


def test_partition_record_then_change_deltas():
    text = dump(
        batch(0, T0_MS, topic("t"), partition(0), partition(1, isr=[1, 2])),
        batch(3, T0_MS + 3000, change(0, leader=2, isr=[2, 3])),  # election + ISR shrink
        batch(4, T0_MS + 4000, change(0, isr=[1, 2, 3])),  # ISR expand, leader absent
        batch(5, T0_MS + 5000, change(0, leader=-2, leaderRecoveryState=-1)),  # no change
        batch(6, T0_MS + 6000, change(0, leader=-1, isr=[3])),  # leader lost
        batch(7, T0_MS + 7000, change(0, leader=3, leaderRecoveryState=1)),  # unclean
        batch(8, T0_MS + 8000, change(0, leaderRecoveryState=0, isr=None)),
    )
    out = [line.to_json() for line in lines(text)]
    assert [o["offset"] for o in out] == [1, 2, 3, 4, 5, 6, 7, 8]
    p0 = [o for o in out if o["partition"] == 0]
    assert p0[0] == {
        "offset": 1, "time": 0, "type": "partition", "topic": "t", "partition": 0,
        "leader": 1, "leader_epoch": 0, "partition_epoch": 0, "isr": [1, 2, 3], "elr": [],
        "last_known_elr": [], "replicas": [1, 2, 3], "recovering": False,
    }  # fmt: skip
    assert [(o["leader"], o["leader_epoch"], o["partition_epoch"]) for o in p0] == [
        (1, 0, 0),
        (2, 1, 1),
        (2, 1, 2),
        (2, 1, 3),
        (-1, 2, 4),
        (3, 3, 5),
        (3, 3, 6),
    ]
    assert [o["isr"] for o in p0] == [[1, 2, 3], [2, 3], [1, 2, 3], [1, 2, 3], [3], [3], [3]]
    assert [o["recovering"] for o in p0] == [False] * 5 + [True, False]
    # times: ns since the history's start, clamped at 0 before it
    assert [o["time"] for o in p0] == [0, 2_000_000_000, 3e9, 4e9, 5e9, 6e9, 7e9]


def test_elr_fields_and_null_means_unchanged():
    text = dump(
        batch(0, T0_MS, topic("t"), partition(0, eligibleLeaderReplicas=None, lastKnownElr=None)),
        batch(2, T0_MS, change(0, version=2, isr=[1], eligibleLeaderReplicas=[2, 3])),
        batch(
            3,
            T0_MS,
            change(
                0, version=2, leader=-1, isr=[], eligibleLeaderReplicas=[2, 3], lastKnownElr=[1]
            ),
        ),  # fmt: skip
        batch(4, T0_MS, change(0, version=2, eligibleLeaderReplicas=None, lastKnownElr=None)),
        batch(
            5,
            T0_MS,
            change(0, version=2, leader=1, isr=[1], eligibleLeaderReplicas=[], lastKnownElr=[]),
        ),  # fmt: skip
    )
    got = [(p.isr, p.elr, p.last_known_elr, p.leader) for p in lines(text)]
    assert got == [
        ((1, 2, 3), (), (), 1),
        ((1,), (2, 3), (), 1),
        ((), (2, 3), (1,), -1),
        ((), (2, 3), (1,), -1),
        ((1,), (), (), 1),
    ]


def test_only_run_topics_and_every_broker():
    text = dump(
        batch(0, T0_MS, register(1, 10), register(2, 11)),
        batch(
            2,
            T0_MS,
            topic("__consumer_offsets", OTHER),
            partition(0, OTHER),
            topic("t"),
            partition(0),
        ),  # fmt: skip
        batch(6, T0_MS, change(0, OTHER, leader=2), change(0, leader=3)),
    )
    got = lines(text)
    assert [type(x).__name__ for x in got] == ["BrokerLine"] * 2 + ["PartitionLine"] * 2
    assert {x.topic for x in got if isinstance(x, PartitionLine)} == {"t"}
    # topics=None: every topic but the internal ones
    everything = convert(parse_dump(text), origin_unix_ns=ORIGIN).lines
    assert [x.offset for x in everything] == [x.offset for x in got]


def test_broker_registration_fence_unfence_and_new_epoch():
    text = dump(
        batch(0, T0_MS, register(1, 10)),  # fenced by default
        batch(
            1,
            T0_MS,
            rec("BROKER_REGISTRATION_CHANGE_RECORD", 2, brokerId=1, brokerEpoch=10, fenced=-1),
        ),  # fmt: skip
        batch(
            2,
            T0_MS,
            rec(
                "BROKER_REGISTRATION_CHANGE_RECORD",
                2,
                brokerId=1,
                brokerEpoch=10,
                fenced=0,
                inControlledShutdown=1,
            ),
        ),  # fmt: skip
        batch(
            3,
            T0_MS,
            rec("BROKER_REGISTRATION_CHANGE_RECORD", 2, brokerId=1, brokerEpoch=10, fenced=1),
        ),  # fmt: skip
        batch(4, T0_MS, register(1, 44, fenced=True, inControlledShutdown=False)),
        batch(
            5,
            T0_MS,
            rec(
                "BROKER_REGISTRATION_CHANGE_RECORD",
                2,
                brokerId=1,
                brokerEpoch=44,
                fenced=-1,
                inControlledShutdown=0,
            ),
        ),  # fmt: skip
        batch(6, T0_MS, rec("UNREGISTER_BROKER_RECORD", brokerId=1, brokerEpoch=44)),
    )
    got = [(b.broker_epoch, b.fenced, b.shutting_down) for b in lines(text)]
    assert got == [
        (10, True, False),
        (10, False, False),
        (10, False, True),
        (10, True, True),
        (44, True, False),  # a new incarnation: a new epoch, no longer shutting down
        (44, False, False),
        (-1, True, False),
    ]
    assert all(isinstance(b, BrokerLine) for b in lines(text))


def test_old_fence_records_and_register_without_fenced_field():
    text = dump(
        batch(0, T0_MS, register(2, 7, version=0)),  # 3.3: no inControlledShutdown
        batch(1, T0_MS, rec("UNFENCE_BROKER_RECORD", id=2, epoch=7)),
        batch(2, T0_MS, rec("FENCE_BROKER_RECORD", id=2, epoch=7)),
        batch(3, T0_MS, rec("FENCE_BROKER_RECORD", id=2, epoch=6)),  # stale epoch: ignored
    )
    result = convert(parse_dump(text), origin_unix_ns=ORIGIN, topics=())
    assert [(b.broker_epoch, b.fenced) for b in result.lines] == [(7, True), (7, False), (7, True)]
    assert any("epoch 7, not 6" in w for w in result.warnings)


def test_removed_topic_and_unknown_partition():
    text = dump(
        batch(0, T0_MS, topic("t"), partition(0)),
        batch(2, T0_MS, rec("REMOVE_TOPIC_RECORD", topicId=TID)),
        batch(3, T0_MS, change(0, leader=2)),
    )
    result = convert(parse_dump(text), origin_unix_ns=ORIGIN, topics=["t"])
    assert [x.offset for x in result.lines] == [1]
    assert any("unknown partition" in w for w in result.warnings)


def test_snapshot_is_the_starting_state_where_segments_were_cleaned():
    snap = dump(
        batch(
            0,
            T0_MS,
            register(1, 10, fenced=False),
            topic("t"),
            partition(0, leader=2, leaderEpoch=5, partitionEpoch=9),
        ),  # fmt: skip
        path="/d/__cluster_metadata-0/00000000000000000100-0000000002.checkpoint",
    )
    seg = dump(
        batch(90, T0_MS + 2000, change(0, leader=-2, isr=[1, 2])),  # inside the snapshot
        batch(100, T0_MS + 3000, change(0, leader=3)),
        path="/d/__cluster_metadata-0/00000000000000000090.log",
    )
    result = convert(parse_dump(snap + seg), origin_unix_ns=ORIGIN, topics=["t"])
    out = [x.to_json() for x in result.lines]
    assert [(o["offset"], o.get("snapshot", False)) for o in out] == [
        (98, True),
        (99, True),
        (100, False),
    ]
    assert out[0]["leader_epoch"] == 5 and out[0]["isr"] == [1, 2, 3]
    assert out[2]["leader"] == 3 and out[2]["leader_epoch"] == 6 and out[2]["partition_epoch"] == 10
    assert out[1]["type"] == "broker" and out[1]["fenced"] is False
    names = ["00000000000000000090.log", "00000000000000000100-0000000002.checkpoint"]
    assert snapshot_to_read(names) == names[1]
    assert snapshot_to_read(["00000000000000000000.log", names[1]]) is None


def test_times_never_go_back_and_control_records_are_skipped():
    text = dump(
        batch(0, T0_MS + 5000, topic("t"), partition(0)),
        "| offset: 2 CreateTime: 1 keySize: 4 valueSize: 19 sequence: -1 headerKeys: [] "
        'LeaderChange: {"version":0,"leaderId":1}',
        batch(3, T0_MS + 4000, change(0, leader=2)),  # a clock step back
    )
    got = lines(text)
    assert [x.time for x in got] == [4_000_000_000, 4_000_000_000]


@pytest.mark.parametrize(
    "bad, message",
    [
        ("| offset: x CreateTime: 1 payload: {}", "not an integer"),
        ('| offset: 3 CreateTime: 1 keySize: -1 payload: {"type": ', "not JSON"),
        ('| offset: 3 CreateTime: 1 keySize: -1 payload: {"version": 0}', "has no type"),
        (
            '| offset: 3 CreateTime: 1 payload: {"type":"PARTITION_CHANGE_RECORD","version":0,'
            '"data":{"partitionId":0,"topicId":"' + TID + '","isr":"1,2"}}',
            "isr: PARTITION_CHANGE_RECORD at offset 3 of .*: expected a list",
        ),
    ],
)
def test_a_malformed_line_is_a_clear_error(bad: str, message: str):
    text = dump(batch(0, T0_MS, topic("t"), partition(0)), bad)
    with pytest.raises(MetadataDumpError, match=message) as info:
        convert(parse_dump(text, source="dump.txt"), origin_unix_ns=ORIGIN, topics=["t"])
    assert str(info.value).startswith("dump.txt:6: ")
    assert info.value.line == 6


def test_output_reads_back_through_the_checkers_reader(tmp_path: Path):
    text = dump(
        batch(0, T0_MS, register(1, 10), topic("t"), partition(0)),
        batch(3, T0_MS + 3000, change(0, leader=2, isr=[2, 3])),
    )
    result = convert(parse_dump(text), origin_unix_ns=ORIGIN, topics=["t"])
    path = tmp_path / "controller.jsonl"
    path.write_bytes(result.jsonl())
    record = read_controller(path)
    assert [e.kind for e in record.elections()] == ["clean"]
    assert record.brokers[1][0].broker_epoch == 10


def test_clear_elr_record_empties_elr_and_bumps_the_partition_epoch():
    text = dump(
        batch(0, T0_MS, topic("t"), partition(0, eligibleLeaderReplicas=[2], lastKnownElr=[3])),
        batch(2, T0_MS, rec("CLEAR_ELR_RECORD", topicName="other")),  # not this topic
        batch(3, T0_MS, rec("CLEAR_ELR_RECORD", topicName="t")),
        batch(4, T0_MS, rec("CLEAR_ELR_RECORD", topicName="")),  # nothing left to clear
    )
    got = [(p.offset, p.elr, p.last_known_elr, p.partition_epoch) for p in lines(text)]
    assert got == [(1, (2,), (3,), 0), (3, (), (), 1)]


def test_an_aborted_metadata_transaction_has_no_effect():
    text = dump(
        batch(0, T0_MS, topic("t"), partition(0)),
        batch(
            2,
            T0_MS,
            rec("BEGIN_TRANSACTION_RECORD", name="x"),
            change(0, leader=2),
            rec("ABORT_TRANSACTION_RECORD"),
        ),  # fmt: skip
        batch(
            5,
            T0_MS,
            rec("BEGIN_TRANSACTION_RECORD", name="y"),
            change(0, leader=3),
            rec("END_TRANSACTION_RECORD"),
        ),  # fmt: skip
    )
    got = [(p.offset, p.leader, p.leader_epoch) for p in lines(text)]
    assert got == [(1, 1, 0), (6, 3, 1)]


def test_a_record_the_tool_could_not_decode_is_a_warning():
    text = dump(
        batch(0, T0_MS, topic("t"), partition(0)),
        "| offset: 2 CreateTime: 1 keySize: -1 valueSize: 9 sequence: -1 headerKeys: [] "
        "payload: Error at 2, skipping. Unknown metadata id 99",
    )
    result = convert(parse_dump(text), origin_unix_ns=ORIGIN, topics=["t"])
    assert len(result.lines) == 2  # the partition, then the mark of the undecodable record
    assert result.warnings == ["offset 2: Error at 2, skipping. Unknown metadata id 99"]


UNDECODABLE_LINE = (
    "| offset: {o} CreateTime: {ms} keySize: -1 valueSize: 9 sequence: -1 headerKeys: [] "
    "payload: Error at {o}, skipping. Unknown metadata id 99"
)


def test_an_undecodable_record_marks_every_run_partition_incomplete_from_there(
    tmp_path: Path,
):
    text = dump(
        batch(0, T0_MS, topic("t"), partition(0), partition(1), topic("u", OTHER)),
        batch(4, T0_MS, partition(0, tid=OTHER)),
        batch(5, T0_MS + 2000, change(0, isr=[1, 2])),
        UNDECODABLE_LINE.format(o=6, ms=T0_MS + 3000),
        batch(7, T0_MS + 4000, change(0, isr=[1, 2, 3])),
    )
    result = convert(parse_dump(text), origin_unix_ns=ORIGIN, topics=["t"])
    mark = [x for x in result.lines if isinstance(x, IncompleteLine)]
    assert len(mark) == 1
    assert (mark[0].offset, mark[0].partitions) == (6, (("t", 0), ("t", 1)))
    assert mark[0].time == 2 * 1_000_000_000 and "Error at 6" in mark[0].reason
    parts = [x for x in result.lines if isinstance(x, PartitionLine)]
    assert [(x.offset, x.incomplete) for x in parts] == [
        (1, False),
        (2, False),
        (5, False),
        (7, True),
    ]
    assert result.incomplete == {("t", 0), ("t", 1)}
    assert mark[0].to_json()["partitions"] == [
        {"topic": "t", "partition": 0},
        {"topic": "t", "partition": 1},
    ]
    # read back: the checker leaves both partitions to the samples
    path = tmp_path / "controller.jsonl"
    path.write_bytes(result.jsonl())
    record = read_controller(path)
    assert set(record.incomplete) == {("t", 0), ("t", 1)}
    assert [s.offset for s in record.incomplete[("t", 0)]] == [1, 5, 7]
    assert not record.covers("t", 0) and not record.covers("t", 1)


def test_a_change_of_a_run_partition_never_created_marks_it_incomplete():
    text = dump(
        batch(0, T0_MS, topic("t"), partition(0)),
        UNDECODABLE_LINE.format(o=2, ms=T0_MS),  # (the creation of partition 1, say)
        batch(3, T0_MS, change(1, isr=[1, 2])),
        batch(4, T0_MS, change(1, isr=[1])),
    )
    result = convert(parse_dump(text), origin_unix_ns=ORIGIN, topics=["t"])
    marks = [(x.offset, x.partitions) for x in result.lines if isinstance(x, IncompleteLine)]
    assert marks == [(2, (("t", 0),)), (3, (("t", 1),))]
    assert result.incomplete == {("t", 0), ("t", 1)}
    assert any("never created" in w for w in result.warnings)


def test_an_undecodable_record_before_any_run_partition_marks_nothing():
    text = dump(
        UNDECODABLE_LINE.format(o=0, ms=T0_MS),
        batch(1, T0_MS, topic("t"), partition(0)),
    )
    result = convert(parse_dump(text), origin_unix_ns=ORIGIN, topics=["t"])
    assert [type(x).__name__ for x in result.lines] == ["PartitionLine"]
    assert result.incomplete == set() and len(result.warnings) == 1


FIXTURES = Path(__file__).parent / "fixtures"


def test_real_dump_kafka_4_4_0_leader_kill():
    """Captured from `kchaos/kafka:4.4.0` (tests/integration/test_controller_log.py):
    3 combined nodes, topic ctl (1 partition, RF 3), its leader broker 1 SIGKILLed 5.4 s
    into the run and restarted."""
    text = (FIXTURES / "kafka-4.4.0-leader-kill.dump.txt").read_text()
    origin = 1795432376690597314  # run.json history_start_unix_ns of that run
    result = convert(parse_dump(text), origin_unix_ns=origin, topics=["ctl"])
    assert result.warnings == []
    out = [line.to_json() for line in result.lines]
    parts = [o for o in out if o["type"] == "partition"]
    assert [(o["offset"], o["leader"], o["leader_epoch"], o["partition_epoch"], o["isr"])
            for o in parts] == [
        (34, 1, 0, 0, [1, 2, 3]),  # created before the history started: time 0
        (60, 2, 1, 1, [2, 3]),  # election after the kill, and ISR shrink
        (85, 2, 1, 2, [1, 2, 3]),  # ISR expand; the record has no leader: unchanged
    ]  # fmt: skip
    assert [o["time"] for o in parts] == [0, 13_300_402_686, 20_303_402_686]
    b1 = [(o["offset"], o["broker_epoch"], o["fenced"]) for o in out if o.get("broker") == 1]
    assert b1 == [
        (10, 10, True),  # registered fenced
        (12, 10, True),  # a registration change with no fencing change (log dirs)
        (16, 10, False),  # unfenced
        (64, 10, True),  # fenced after its session timed out
        (78, 78, True),  # registered again after the restart: a new broker epoch
        (81, 78, True),
        (82, 78, False),
    ]
    assert {o["broker"] for o in out if o["type"] == "broker"} == {1, 2, 3}
    offsets = [o["offset"] for o in out]
    assert offsets == sorted(set(offsets))


def test_real_dump_kafka_3_4_1_leader_kill():
    """Captured from `kchaos/kafka:3.4.1` by the same docker test: the leader, broker 3,
    SIGKILLed 5.5 s into the run. PartitionChangeRecord version 0 (no ELR fields),
    RegisterBrokerRecord version 2, control records printed as ``controlType: ...``."""
    text = (FIXTURES / "kafka-3.4.1-leader-kill.dump.txt").read_text()
    origin = 1795432901192135225
    result = convert(parse_dump(text), origin_unix_ns=origin, topics=["ctl"])
    assert result.warnings == []
    parts = [x for x in result.lines if isinstance(x, PartitionLine)]
    assert [(p.offset, p.leader, p.leader_epoch, p.partition_epoch, p.isr) for p in parts] == [
        (18, 3, 0, 0, (3, 1, 2)),
        (42, 1, 1, 1, (1, 2)),
        (65, 1, 1, 2, (1, 2, 3)),
    ]
    assert all(p.elr == () and p.last_known_elr == () and not p.recovering for p in parts)
    b3 = [(b.offset, b.broker_epoch, b.fenced) for b in result.lines
          if isinstance(b, BrokerLine) and b.broker == 3]  # fmt: skip
    assert b3 == [(4, 4, True), (7, 4, False), (46, 4, True), (58, 58, True), (61, 58, False)]
