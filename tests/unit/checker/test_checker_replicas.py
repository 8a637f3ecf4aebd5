"""Replica by replica (RUN_DIR/replicas.jsonl): divergence, duplicate producer sequences,
and the replica story of duplicate and lost-write examples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from checker_hist import H

from kchaos.harness.checker import check_run
from kchaos.harness.errors import HistoryError

PID = 7


def batch(
    broker: int,
    records: list[tuple[int, int, str]],
    *,
    epoch: int = 0,
    pid: int = PID,
    producer_epoch: int = 0,
) -> dict[str, Any]:
    """One batch line of ``broker``: records as (offset, sequence, value)."""
    return {
        "type": "batch",
        "broker": broker,
        "topic": "t",
        "partition": 0,
        "base_offset": records[0][0],
        "last_offset": records[-1][0],
        "leader_epoch": epoch,
        "producer_id": pid,
        "producer_epoch": producer_epoch,
        "base_sequence": records[0][1],
        "transactional": False,
        "control": False,
        "segment": "/var/lib/kafka/data/t-0/00000000000000000000.log",
        "records": [list(r) for r in records],
    }


def write_replicas(run: Path, logs: dict[int, list[tuple[int, int, str]]], down: int = 0) -> None:
    lines: list[dict[str, Any]] = [{"type": "reader", "reader": "test", "format": 1}]
    for broker, records in sorted(logs.items()):
        rep = {"topic": "t", "partition": 0}
        lines.append({"type": "broker", "broker": broker, "status": "dumped", "replicas": [rep]})
        if records:
            lines.append(batch(broker, records))
    if down:
        lines.append({"type": "broker", "broker": down, "status": "unavailable", "error": "x"})
    (run / "replicas.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))


def write_isr(run: Path, isr: list[int], replicas: tuple[int, ...] = (1, 2, 3)) -> None:
    line = {
        "offset": 5,
        "time": 1,
        "type": "partition",
        "topic": "t",
        "partition": 0,
        "leader": isr[0],
        "leader_epoch": 0,
        "partition_epoch": 0,
        "isr": isr,
        "elr": [],
        "last_known_elr": [],
        "replicas": list(replicas),
        "recovering": False,
    }
    (run / "controller.jsonl").write_bytes(orjson.dumps(line) + b"\n")


def clean_history(run: Path, values: tuple[str, ...] = ("a", "b", "c")) -> None:
    h = H()
    for i, v in enumerate(values):
        h.send(v, 0, i)
    h.drain_all(0, list(values))
    h.write(run / "history.jsonl")


LOG = [(0, 0, "a"), (1, 1, "b"), (2, 2, "c")]


def test_agreeing_replicas_are_compared_and_not_flagged(tmp_path: Path) -> None:
    clean_history(tmp_path)
    write_isr(tmp_path, [1, 2, 3])
    write_replicas(tmp_path, {1: LOG, 2: LOG, 3: LOG + [(3, 3, "above-hw")]})
    r = check_run(tmp_path)
    assert r.valid is True and "replica-divergence" not in r.anomalies
    s = r.stats["replicas"]
    assert s["offsets_compared"] == 3 and s["disagreements"] == 0  # offset 3 >= HW
    assert s["duplicate_sequences"] == 0
    part = s["partitions"][0]
    assert part["replicas"] == [1, 2, 3] and part["in_sync"] == [1, 2, 3]
    assert r.checkers["replicas"].valid is True


def test_in_sync_replicas_that_disagree_below_the_hw_make_the_run_invalid(tmp_path: Path) -> None:
    clean_history(tmp_path)
    write_isr(tmp_path, [1, 2, 3])
    other = [(0, 0, "a"), (1, 1, "B!"), (2, 2, "c")]
    write_replicas(tmp_path, {1: LOG, 2: LOG, 3: other})
    r = check_run(tmp_path)
    assert r.valid is False and r.count("replica-divergence") == 1
    ex = r.anomalies["replica-divergence"].examples[0]
    assert ex["offset"] == 1 and ex["high_watermark"] == 3
    assert {(x["broker"], x["value"]) for x in ex["replicas"]} == {(1, "b"), (2, "b"), (3, "B!")}
    assert ex["replicas"][0]["producer_id"] == PID and ex["replicas"][0]["sequence"] == 1
    data = orjson.loads((tmp_path / "results.json").read_bytes())
    assert data["anomalies"]["replica-divergence"]["count"] == 1
    assert data["checkers"]["replicas"]["valid"] is False


def test_an_in_sync_replica_missing_a_committed_offset_diverges(tmp_path: Path) -> None:
    clean_history(tmp_path)
    write_isr(tmp_path, [1, 2])
    write_replicas(tmp_path, {1: LOG, 2: LOG[:2], 3: LOG})
    r = check_run(tmp_path)
    assert r.count("replica-divergence") == 1
    ex = r.anomalies["replica-divergence"].examples[0]
    assert {"broker": 2, "offset": 2, "held": False} in ex["replicas"]


def test_a_replica_outside_the_isr_is_evidence_only(tmp_path: Path) -> None:
    clean_history(tmp_path)
    write_isr(tmp_path, [1, 2])
    write_replicas(tmp_path, {1: LOG, 2: LOG, 3: LOG[:1]}, down=0)
    r = check_run(tmp_path)
    assert r.valid is True
    s = r.stats["replicas"]
    assert s["disagreements"] == 2 and s["disagreements_evidence_only"] == 2
    assert s["partitions"][0]["first_disagreements"][0]["offset"] == 1


def test_without_the_controller_record_nothing_invalidates(tmp_path: Path) -> None:
    clean_history(tmp_path)
    write_replicas(tmp_path, {1: LOG, 2: [(0, 0, "a"), (1, 1, "x"), (2, 2, "c")]}, down=3)
    r = check_run(tmp_path)
    assert r.valid is True
    s = r.stats["replicas"]
    assert s["disagreements"] == 1 and s["disagreements_in_sync"] == 0
    assert s["partitions"][0]["in_sync"] is None
    assert s["brokers_unavailable"] == {"3": "x"}


def test_a_duplicate_producer_sequence_is_evidence_for_the_duplicate(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.send("b", 0, 1)
    h.drain_all(0, ["a", "b", "b"])  # "b" written twice: the producer's retry got in again
    h.write(tmp_path / "history.jsonl")
    write_isr(tmp_path, [1, 2])
    twice = [(0, 0, "a"), (1, 1, "b"), (2, 1, "b")]
    write_replicas(tmp_path, {1: twice, 2: twice})
    r = check_run(tmp_path)
    assert r.count("duplicate") == 1 and "replica-divergence" not in r.anomalies
    s = r.stats["replicas"]
    assert s["duplicate_sequences"] == 1
    dup = s["duplicate_sequence_examples"][0]
    assert (dup["producer_id"], dup["sequence"], dup["offsets"], dup["brokers"]) == (
        PID,
        1,
        [1, 2],
        [1, 2],
    )
    story = r.anomalies["duplicate"].examples[0]["replicas"]
    assert [(x["broker"], x["offset"], x["sequence"]) for x in story] == [
        (1, 1, 1),
        (1, 2, 1),
        (2, 1, 1),
        (2, 2, 1),
    ]


def write_batches(run: Path, brokers: tuple[int, ...], batches: list[dict[str, Any]]) -> None:
    """Every broker holds the same ``batches`` (made for broker 0)."""
    lines: list[dict[str, Any]] = [{"type": "reader", "reader": "test", "format": 1}]
    for broker in brokers:
        rep = {"topic": "t", "partition": 0}
        lines.append({"type": "broker", "broker": broker, "status": "dumped", "replicas": [rep]})
        lines.extend({**b, "broker": broker} for b in batches)
    (run / "replicas.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))


def duplicated_b(run: Path, batches: list[dict[str, Any]]) -> Any:
    h = H()
    h.send("a", 0, 0)
    h.send("b", 0, 1)
    h.drain_all(0, ["a", "b", "b"])
    h.write(run / "history.jsonl")
    write_isr(run, [1, 2])
    write_batches(run, (1, 2), batches)
    return check_run(run)


@pytest.mark.parametrize(
    ("second", "cause"),
    [
        ({"producer_epoch": 1}, "producer-epoch-bump"),  # re-sent from sequence 0, epoch 1
        ({}, "same-epoch-resend"),
        ({"pid": PID + 1}, "different-producers"),
        ({"pid": -1}, "not-idempotent"),
    ],
)
def test_a_duplicate_is_pinned_on_who_wrote_it_twice(
    tmp_path: Path, second: dict[str, Any], cause: str
) -> None:
    first = batch(0, [(0, 0, "a"), (1, 1, "b")])
    again = batch(0, [(2, 0 if second else 2, "b")], **second)
    r = duplicated_b(tmp_path, [first, again])
    dup = r.anomalies["duplicate"]
    assert dup.count == 1 and dup.causes == {cause: 1}
    assert dup.examples[0]["cause"] == cause
    assert r.valid is False  # a cause is evidence, never a change of verdict
    assert orjson.loads((tmp_path / "results.json").read_bytes())["anomalies"]["duplicate"][
        "causes"
    ] == {cause: 1}


def test_one_sequence_at_two_offsets_is_the_brokers(tmp_path: Path) -> None:
    r = duplicated_b(tmp_path, [batch(0, [(0, 0, "a"), (1, 1, "b"), (2, 1, "b")])])
    assert r.anomalies["duplicate"].causes == {"sequence-written-twice": 1}


def test_a_copy_no_replica_holds_leaves_the_cause_unknown(tmp_path: Path) -> None:
    r = duplicated_b(tmp_path, [batch(0, [(0, 0, "a"), (1, 1, "b")])])  # offset 2 not dumped
    assert r.anomalies["duplicate"].causes == {"unknown": 1}


def test_a_lost_write_gets_what_each_replica_holds(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.send("b", 0, 1)
    h.drain_all(0, ["a"])
    h.write(tmp_path / "history.jsonl")
    write_isr(tmp_path, [1])
    write_replicas(tmp_path, {1: LOG[:1], 2: LOG[:2]})
    r = check_run(tmp_path)
    ex = r.anomalies["lost-write"].examples[0]
    assert [(x["broker"], x["offset"]) for x in ex["replicas"]] == [(2, 1)]
    assert ex["replicas_at_offset"] == [
        {"broker": 1, "offset": 1, "held": False},
        {**ex["replicas"][0]},
    ]


def test_a_run_without_the_file_has_no_comparison(tmp_path: Path) -> None:
    clean_history(tmp_path)
    r = check_run(tmp_path)
    assert "replicas" not in r.stats and "replicas" not in r.checkers


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"type": "batch", "broker": 1, "topic": "t", "partition": "0"}, "partition"),
        ({**batch(1, LOG), "records": [[0, 0]]}, "records"),
        ({"type": "surprise"}, "type"),
    ],
)
def test_a_bad_line_names_file_line_and_field(tmp_path: Path, line: Any, field: str) -> None:
    clean_history(tmp_path)
    write_replicas(tmp_path, {1: LOG})
    with (tmp_path / "replicas.jsonl").open("ab") as fh:
        fh.write(orjson.dumps(line) + b"\n")
    with pytest.raises(HistoryError) as err:
        check_run(tmp_path)
    assert err.value.line == 4 and err.value.field == field
    assert str(err.value).startswith(str(tmp_path / "replicas.jsonl"))
