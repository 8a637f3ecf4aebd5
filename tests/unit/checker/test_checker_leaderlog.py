"""Who shrank an ISR, read from the leaders' own ``Shrinking ISR`` log lines."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from broker_logs import CONTAINER, MS, ORIGIN, S, log_run, stamp
from checker_hist import C, H, check_with

from kchaos.harness.checker import check_run
from kchaos.harness.checker.leaderlog import (
    BATCH_SLACK_NS,
    MATCH_WINDOW_NS,
    OutOfSync,
    load_leader_log,
    parse_shrink,
)
from kchaos.harness.rundir import names
from kchaos.harness.rundir.rundir import RunDir

FIXTURES = Path(__file__).parent / "fixtures"

# Real lines, as the brokers wrote them (runs of 2026-11-25, kip-501-busy-leader).
LINE_440 = (
    "[2026-11-25 23:09:16,053] INFO [Partition slow-0 broker=2] Shrinking ISR from 1,3,2 to 2."
    " Leader: (highWatermark: 678, endOffset: 812). Out of sync replicas: (brokerId: 1,"
    " endOffset: 678, lastCaughtUpTimeMs: 1795648149444) (brokerId: 3, endOffset: 694,"
    " lastCaughtUpTimeMs: 1795648149277). (kafka.cluster.Partition)"
)
LINE_391 = (
    "[2026-11-25 23:17:13,460] INFO [Partition slow-0 broker=1] Shrinking ISR from 1,2,3 to 1."
    " Leader: (highWatermark: 0, endOffset: 56). Out of sync replicas: (brokerId: 2,"
    " endOffset: 0, lastCaughtUpTimeMs: 1795648631005) (brokerId: 3, endOffset: 0,"
    " lastCaughtUpTimeMs: 1795648631037). (kafka.cluster.Partition)"
)
LINE_391_ZERO = (
    "[2026-11-25 23:18:01,365] INFO [Partition slow-0 broker=1] Shrinking ISR from 1,3 to 1."
    " Leader: (highWatermark: 112, endOffset: 393). Out of sync replicas: (brokerId: 3,"
    " endOffset: 112, lastCaughtUpTimeMs: 0). (kafka.cluster.Partition)"
)
LINE_TXN = (
    "[2026-11-25 20:43:18,779] INFO [Partition __transaction_state-33 broker=1] Shrinking ISR"
    " from 3,1,2 to 1. Leader: (highWatermark: 81, endOffset: 82). Out of sync replicas:"
    " (brokerId: 2, endOffset: 81, lastCaughtUpTimeMs: 1795639386770) (brokerId: 3,"
    " endOffset: 81, lastCaughtUpTimeMs: 1795639386770). (kafka.cluster.Partition)"
)
# Kafka before 3.6 (apache/kafka#13187 added lastCaughtUpTimeMs); the leader prints
# ``unknown`` for a replica it has no state for
LINE_OLD = (
    "[2023-01-02 03:04:05,006] INFO [Partition my-topic-2-11 broker=3] Shrinking ISR from"
    " 3,1,2 to 3. Leader: (highWatermark: 7, endOffset: 20). Out of sync replicas:"
    " (brokerId: 1, endOffset: 19) (brokerId: 2, endOffset: unknown). (kafka.cluster.Partition)"
)


# -- reading the lines --------------------------------------------------------------------


def test_a_440_line_is_read_whole() -> None:
    msg = parse_shrink(LINE_440)
    assert msg is not None
    assert (msg.topic, msg.partition, msg.leader) == ("slow", 0, 2)
    assert (msg.isr_before, msg.isr_after) == ((1, 3, 2), (2,))
    assert (msg.high_watermark, msg.leader_end_offset) == (678, 812)
    assert msg.out_of_sync == (
        OutOfSync(broker=1, end_offset=678, last_caught_up_ms=1795648149444),
        OutOfSync(broker=3, end_offset=694, last_caught_up_ms=1795648149277),
    )


def test_a_391_line_has_the_same_wording() -> None:
    msg = parse_shrink(LINE_391)
    assert msg is not None
    assert (msg.topic, msg.partition, msg.leader, msg.isr_after) == ("slow", 0, 1, (1,))
    assert [r.broker for r in msg.out_of_sync] == [2, 3]
    assert msg.out_of_sync[1].last_caught_up_ms == 1795648631037
    zero = parse_shrink(LINE_391_ZERO)
    assert zero is not None and zero.out_of_sync == (OutOfSync(3, 112, 0),)


def test_topic_names_with_dashes_and_digits_and_older_wording() -> None:
    txn = parse_shrink(LINE_TXN)
    assert txn is not None and (txn.topic, txn.partition) == ("__transaction_state", 33)
    old = parse_shrink(LINE_OLD)
    assert old is not None
    assert (old.topic, old.partition, old.leader, old.isr_after) == ("my-topic-2", 11, 3, (3,))
    assert old.out_of_sync == (OutOfSync(1, 19, None), OutOfSync(2, None, None))


def test_other_lines_are_not_shrinks_and_a_mangled_one_is_an_error() -> None:
    assert parse_shrink("[2026-11-25 23:08:32,298] INFO [Broker id=1] Transitioning") is None
    assert parse_shrink("[x] INFO [Partition t-0 broker=1] ISR updated to 3,1,2") is None
    with pytest.raises(ValueError, match="maybeShrinkIsr"):
        parse_shrink(LINE_440[:150])  # a torn line
    with pytest.raises(ValueError, match="Out of sync replicas"):
        parse_shrink(LINE_440.replace("brokerId", "replicaId"))


# -- matching against the controller's record ---------------------------------------------


def _line(
    time_ns: int,
    leader: int,
    before: list[int],
    after: list[int],
    lagging: dict[int, int],
    *,
    topic: str = "t",
    partition: int = 0,
    caught_up_ns: int = 0,
) -> str:
    """A Shrinking ISR line: ``lagging`` maps each out-of-sync broker to its end offset,
    all last caught up at ``caught_up_ns`` (history time)."""
    caught_ms = (ORIGIN + caught_up_ns) // MS
    replicas = " ".join(
        f"(brokerId: {b}, endOffset: {o}, lastCaughtUpTimeMs: {caught_ms})"
        for b, o in lagging.items()
    )
    return (
        f"{stamp(time_ns)} INFO [Partition {topic}-{partition} broker={leader}] Shrinking ISR"
        f" from {','.join(map(str, before))} to {','.join(map(str, after))}. Leader:"
        f" (highWatermark: 10, endOffset: 40). Out of sync replicas: {replicas}."
        " (kafka.cluster.Partition)"
    )


def _run(tmp_path: Path, logs: dict[int, list[str]] | None) -> Path:
    """run.json with the time origin and, unless None, each broker's server.log after a
    line of the launcher's (so a broker's first line is line 2)."""
    return log_run(tmp_path, logs, header=["[kchaos] server properties"])


def _history() -> H:
    h = H()
    h.meta(0, 1, [1, 2, 3])
    h.send("a", 0, 0)
    h.drain_all(0, ["a"])
    return h


def _shrinks(tmp_path: Path, c: C, logs: dict[int, list[str]] | None) -> dict:
    result = check_with(_history(), c, _run(tmp_path, logs))
    assert result.valid is True  # who shrank an ISR is evidence, never an anomaly
    shrinks: dict = result.stats["isr"]["shrinks"]
    return shrinks


def _record() -> C:
    """Leader 1; broker 2 leaves the ISR at 5 s (offset 40), broker 3 is fenced at 8 s."""
    c = C()
    for broker in (1, 2, 3):
        c.broker(0, broker, 5)
    c.part(0, 1, [1, 2, 3])
    c.part(5 * S, 1, [1, 3], epoch=1)
    c.broker(8 * S, 3, 5, fenced=True)
    c.part(8 * S, 1, [1], elr=[3], epoch=2)
    return c


def test_a_shrink_with_its_leader_line_carries_the_line_as_evidence(tmp_path: Path) -> None:
    logs = {
        1: [
            "[2026-01-01 00:00:00,000] INFO something else (kafka.server.KafkaServer)",
            _line(5 * S - 20 * MS, 1, [1, 2, 3], [1, 3], {2: 7}, caught_up_ns=2 * S),
        ]
    }
    shrinks = _shrinks(tmp_path, _record(), logs)
    assert shrinks["cause_source"] == "logs"
    assert shrinks["by_cause"] == {"leader": 1, "fenced": 1}
    first, second = shrinks["first"]
    assert (first["broker"], first["cause"], first["controller_offset"]) == (2, "leader", 50)
    assert first["evidence"] == {
        "broker": 1,
        "log": f"{CONTAINER.format(1)}/{names.SERVER_LOG}:3",
        "time_s": 4.98,
        "lag_ms": 2980,
        "last_caught_up_ms": (ORIGIN + 2 * S) // MS,
        "follower_end_offset": 7,
        "leader_end_offset": 40,
    }
    # the fenced broker is the controller's doing: no evidence sought, none attached
    assert second["cause"] == "fenced" and "evidence" not in second
    assert shrinks["leader_log"] == {"nodes": 1, "lines": 1, "unmatched": 0}


def test_a_shrink_no_leader_logged_is_unexplained(tmp_path: Path) -> None:
    shrinks = _shrinks(tmp_path, _record(), {1: [], 2: [], 3: []})
    assert shrinks["cause_source"] == "logs"
    assert shrinks["by_cause"] == {"unexplained": 1, "fenced": 1}
    assert "evidence" not in shrinks["first"][0]


def test_without_node_logs_the_cause_is_by_elimination(tmp_path: Path) -> None:
    shrinks = _shrinks(tmp_path, _record(), None)
    assert shrinks["cause_source"] == "elimination"
    assert shrinks["by_cause"] == {"leader": 1, "fenced": 1}
    assert "leader_log" not in shrinks and "evidence" not in shrinks["first"][0]


def test_a_fenced_removal_is_untouched_even_with_a_matching_line(tmp_path: Path) -> None:
    logs = {1: [_line(8 * S - 10 * MS, 1, [1, 3], [1], {3: 9})]}
    shrinks = _shrinks(tmp_path, _record(), logs)
    assert shrinks["by_cause"] == {"unexplained": 1, "fenced": 1}
    assert "evidence" not in shrinks["first"][1]
    assert shrinks["leader_log"]["unmatched"] == 1


@pytest.mark.parametrize(
    ("why", "line"),
    [
        ("another partition", _line(5 * S - 20 * MS, 1, [1, 2, 3], [1, 3], {2: 7}, partition=1)),
        ("another topic", _line(5 * S - 20 * MS, 1, [1, 2, 3], [1, 3], {2: 7}, topic="u")),
        ("another ISR after", _line(5 * S - 20 * MS, 1, [1, 2, 3], [1], {2: 7, 3: 7})),
        ("not naming broker 2", _line(5 * S - 20 * MS, 1, [1, 2, 3], [1, 3], {3: 7})),
        ("too early", _line(5 * S - MATCH_WINDOW_NS - 10 * MS, 1, [1, 2, 3], [1, 3], {2: 7})),
        ("after the commit", _line(5 * S + BATCH_SLACK_NS + 10 * MS, 1, [1, 2, 3], [1, 3], {2: 7})),
    ],
)
def test_a_line_that_does_not_fit_explains_nothing(tmp_path: Path, why: str, line: str) -> None:
    shrinks = _shrinks(tmp_path, _record(), {1: [line]})
    assert shrinks["first"][0]["cause"] == "unexplained", why
    assert shrinks["leader_log"]["unmatched"] == 1


def test_a_line_of_another_broker_is_not_the_leaders(tmp_path: Path) -> None:
    line = _line(5 * S - 20 * MS, 3, [1, 2, 3], [1, 3], {2: 7})  # broker=3 is not the leader
    shrinks = _shrinks(tmp_path, _record(), {3: [line]})
    assert shrinks["first"][0]["cause"] == "unexplained"


def test_a_line_just_after_its_batch_time_is_matched(tmp_path: Path) -> None:
    # the batch's CreateTime is taken when the controller opens it (seen: 5 ms early)
    logs = {1: [_line(5 * S + 5 * MS, 1, [1, 2, 3], [1, 3], {2: 7})]}
    shrinks = _shrinks(tmp_path, _record(), logs)
    assert shrinks["first"][0]["evidence"]["time_s"] == 5.005


def test_the_closest_line_is_taken_never_one_from_before_the_previous_state(
    tmp_path: Path,
) -> None:
    c = C()
    for broker in (1, 2, 3):
        c.broker(0, broker, 5)
    c.part(0, 1, [1, 2, 3])
    c.part(5 * S, 1, [1, 3], epoch=1)  # offset 50
    c.part(6 * S, 1, [1, 2, 3], epoch=2)  # offset 60: broker 2 back
    c.part(9 * S, 1, [1, 3], epoch=3)  # offset 70: a second shrink nobody logged
    logs = {
        1: [
            _line(3 * S, 1, [1, 2, 3], [1, 3], {2: 4}),  # refused: a newer line came
            _line(5 * S - 30 * MS, 1, [1, 2, 3], [1, 3], {2: 5}),
        ]
    }
    shrinks = _shrinks(tmp_path, c, logs)
    first, second = shrinks["first"]
    assert first["controller_offset"] == 50
    assert first["evidence"]["log"].endswith(":3") and first["evidence"]["follower_end_offset"] == 5
    # the 3 s line is inside offset 70's window, but from before the state it changed
    # (offset 60, 6 s): a leader's request starts from the partition epoch it knows
    assert (second["controller_offset"], second["cause"]) == (70, "unexplained")
    assert shrinks["leader_log"]["unmatched"] == 1


def test_lag_is_unknown_when_the_leader_printed_no_catch_up_time(tmp_path: Path) -> None:
    line = _line(5 * S - 20 * MS, 1, [1, 2, 3], [1, 3], {2: 7}).replace(
        f"lastCaughtUpTimeMs: {ORIGIN // MS}", "lastCaughtUpTimeMs: 0"
    )
    assert "lastCaughtUpTimeMs: 0)" in line
    evidence = _shrinks(tmp_path, _record(), {1: [line]})["first"][0]["evidence"]
    assert evidence["lag_ms"] is None and evidence["last_caught_up_ms"] == 0


def test_a_mangled_line_is_a_warning_naming_file_and_line(tmp_path: Path) -> None:
    logs = {1: ["[kchaos] x", LINE_440[:150]]}
    result = check_with(_history(), _record(), _run(tmp_path, logs))
    assert any(
        w.startswith(f"{CONTAINER.format(1)}/{names.SERVER_LOG}:3: ") and "maybeShrinkIsr" in w
        for w in result.warnings
    ), result.warnings
    assert result.stats["isr"]["shrinks"]["by_cause"]["unexplained"] == 1


def test_logs_without_a_time_origin_fall_back_to_elimination(tmp_path: Path) -> None:
    _run(tmp_path, {1: [_line(5 * S - 20 * MS, 1, [1, 2, 3], [1, 3], {2: 7})]})
    (tmp_path / names.RUN_JSON).write_text("{}")
    assert load_leader_log(RunDir(tmp_path)) is None
    result = check_with(_history(), _record(), tmp_path)
    assert result.stats["isr"]["shrinks"]["cause_source"] == "elimination"
    assert any("history_start_unix_ns" in w for w in result.warnings)


# -- a real run, cut small --------------------------------------------------------------


def test_the_busy_leader_run_reads_its_causes_from_the_leaders_logs(tmp_path: Path) -> None:
    run = shutil.copytree(FIXTURES / "busy-440-b", tmp_path / "run")
    shrinks = check_run(run, write=False).stats["isr"]["shrinks"]
    assert shrinks["cause_source"] == "logs"
    assert shrinks["by_cause"] == {"leader": 4, "fenced": 1, "unexplained": 1}
    got = [
        (s["controller_offset"], s["broker"], s["cause"], s.get("evidence"))
        for s in shrinks["first"]
    ]
    b1 = "kchaos-20261125-230819-7278-broker-1/server.log"
    b2 = "kchaos-20261125-230819-7278-broker-2/server.log"

    def ev(log: str, t: float, lag: int, caught: int, follower: int, leader: int) -> dict:
        return {
            "broker": 1 if log.startswith(b1) else 2,
            "log": log,
            "time_s": t,
            "lag_ms": lag,
            "last_caught_up_ms": caught,
            "follower_end_offset": follower,
            "leader_end_offset": leader,
        }

    assert got == [
        # broker 1, the first leader, dropped both followers at 23:08:32,228, 31 ms
        # before the controller's commit; each had been caught up 2.2 and 2.4 s earlier
        (55, 2, "leader", ev(f"{b1}:5", 3.196716, 2208, 1795648110020, 0, 48)),
        (55, 3, "leader", ev(f"{b1}:5", 3.196716, 2421, 1795648109807, 0, 48)),
        (91, 1, "fenced", None),  # broker 1 killed: its session expired
        (111, 3, "leader", ev(f"{b2}:4", 22.643716, 2915, 1795648128760, 158, 222)),
        (125, 3, "leader", ev(f"{b2}:7", 28.761716, 9033, 1795648128760, 206, 390)),
        # the fixture leaves broker 2's line for this one out (README.md)
        (146, 3, "unexplained", None),
    ]
