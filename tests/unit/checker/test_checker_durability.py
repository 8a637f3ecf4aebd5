"""lost-write and unseen: each found and counted, and the near misses left alone."""

from __future__ import annotations

from pathlib import Path

from checker_hist import H, counts

from kchaos.harness.checker import RunSettings


def test_lost_writes_are_counted_with_their_lines(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    inv = h.invoke("b")
    ack = h.ok("b", 0, 1)
    h.send("c", 0, 2)
    h.send("d", 0, 3)
    h.drain((0, 0, "a"), (0, 2, "c"))  # b and d vanished
    end = h.drain_end(0, hwm=4)
    r = h.check(tmp_path)
    assert r.valid is False
    assert r.count("lost-write") == 2
    ex = r.anomalies["lost-write"].examples[0]
    assert (ex["value"], ex["topic"], ex["partition"], ex["offset"]) == ("b", "t", 0, 1)
    assert {inv, ack, end} <= set(ex["index"])
    assert r.exit_code == 1


def test_acknowledged_offset_at_or_above_the_high_watermark_is_lost(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.send("b", 0, 1)
    h.drain((0, 0, "a"), (0, 1, "b"))
    h.drain_end(0, hwm=1)  # the drain says the log ends before b, yet it returned b
    r = h.check(tmp_path)
    assert counts(r).get("lost-write") == 1
    assert r.anomalies["lost-write"].examples[0]["value"] == "b"


def test_offsets_below_the_log_start_offset_are_not_lost(tmp_path: Path) -> None:
    h = H()
    for i in range(5):
        h.send(f"v{i}", 0, i)
    h.poll(9, (0, 0, "v0"), (0, 1, "v1"))  # read before retention deleted them
    h.drain_all(0, ["v3", "v4"], lso=3)
    r = h.check(tmp_path)
    assert r.valid is True, r.to_json()
    assert counts(r) == {}


def test_info_and_fail_sends_missing_from_the_drain_are_not_lost(tmp_path: Path) -> None:
    h = H()
    h.invoke("i1")
    h.done("i1", "info")
    h.invoke("i2")
    h.done("i2", "info")  # landed: it is in the drain
    h.invoke("f1")
    h.done("f1", "fail")
    h.send("a", 0, 1)
    h.drain_all(0, ["i2", "a"])
    r = h.check(tmp_path)
    assert r.valid is True, r.to_json()


def test_lost_write_applies_whatever_the_acks_setting(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0, acks="1")
    h.drain_end(0, hwm=0)
    r = h.check(tmp_path, RunSettings(acks_all=False))
    assert counts(r) == {"lost-write": 1}


def test_value_in_the_drain_at_another_offset_is_not_lost(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.send("b", 0, 1)
    h.drain_all(0, ["b", "a"])  # swapped: inconsistent offsets, nothing lost
    r = h.check(tmp_path)
    c = counts(r)
    assert "lost-write" not in c
    assert c["inconsistent-offset"] == 2


def test_unseen_makes_the_verdict_unknown(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.send("b", 1, 0)
    h.send("c", 1, 1)
    h.poll(7, (1, 0, "b"))  # b was seen; c was not, and partition 1 has no drain-end
    h.drain_all(0, ["a"])
    r = h.check(tmp_path)
    assert r.valid == "unknown"
    assert counts(r) == {"unseen": 1}
    assert r.anomalies["unseen"].examples[0]["value"] == "c"
    assert r.exit_code == 2
    assert r.stats["durability"]["undrained_partitions"] == [{"topic": "t", "partition": 1}]


def test_invalid_wins_over_unknown(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.send("b", 1, 0)
    h.drain_end(0, hwm=1)  # a lost; b unseen
    r = h.check(tmp_path)
    assert counts(r) == {"lost-write": 1, "unseen": 1}
    assert r.valid is False


def test_two_values_acknowledged_at_one_offset(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.send("b", 0, 0)
    h.drain_all(0, ["a"])
    r = h.check(tmp_path)
    assert counts(r) == {"lost-write": 1, "inconsistent-offset": 1}
    assert r.anomalies["lost-write"].examples[0]["value"] == "b"


# An acknowledged offset at or above the final high watermark, the value drained elsewhere.


def test_acked_above_the_high_watermark_and_drained_elsewhere_is_inconsistent_only(
    tmp_path: Path,
) -> None:
    h = H()
    h.send("a", 0, 0)
    h.send("b", 0, 3)  # acknowledged at 3; the log ends at 2 and holds b at 1
    h.drain((0, 0, "a"), (0, 1, "b"))
    h.drain_end(0, hwm=2)
    r = h.check(tmp_path)
    assert counts(r) == {"inconsistent-offset": 1}
    ex = r.anomalies["inconsistent-offset"].examples[0]
    assert (ex["value"], ex["offset"], ex["values"]) == ("b", 3, ["b"])
    assert ex["drained_offsets"] == [1]
    assert r.valid is False


def test_acked_above_the_high_watermark_and_absent_from_the_drain_is_lost(
    tmp_path: Path,
) -> None:
    h = H()
    h.send("a", 0, 0)
    h.send("b", 0, 3)
    h.drain((0, 0, "a"), (0, 1, "c"))  # b nowhere in the drain
    h.drain_end(0, hwm=2)
    r = h.check(tmp_path)
    assert counts(r) == {"lost-write": 1}


def test_acked_above_the_high_watermark_where_a_poll_saw_another_value(
    tmp_path: Path,
) -> None:
    h = H()
    h.send("b", 0, 3)
    h.poll(7, (0, 3, "w"))  # w read at 3 before the log was cut back
    h.drain((0, 0, "a"), (0, 1, "b"))
    h.drain_end(0, hwm=2)
    r = h.check(tmp_path)
    # one position, counted once; w was read and is not in the drain
    assert counts(r) == {"inconsistent-offset": 1, "uncommitted-read": 1}
    assert r.anomalies["inconsistent-offset"].examples[0]["values"] == ["b", "w"]


def test_acked_below_the_high_watermark_and_drained_elsewhere_is_inconsistent_only(
    tmp_path: Path,
) -> None:
    h = H()
    h.send("b", 0, 1)  # the drain holds c at 1 and b at 2: two values at 1
    h.drain_all(0, ["a", "c", "b"])
    r = h.check(tmp_path)
    assert counts(r) == {"inconsistent-offset": 1}
    assert r.anomalies["inconsistent-offset"].examples[0]["values"] == ["b", "c"]


def test_acked_at_a_gap_in_the_drain_and_drained_elsewhere_is_inconsistent_only(
    tmp_path: Path,
) -> None:
    h = H()
    h.send("b", 0, 1)
    h.drain((0, 0, "a"), (0, 2, "b"))  # no record at 1 (a gap), b at 2
    h.drain_end(0, hwm=3)
    r = h.check(tmp_path)
    assert counts(r) == {"inconsistent-offset": 1}


def test_acked_below_the_log_start_offset_and_drained_elsewhere_is_nothing(
    tmp_path: Path,
) -> None:
    h = H()
    h.send("b", 0, 1)
    h.drain((0, 5, "b"))
    h.drain_end(0, hwm=6, lso=5)  # the drain says nothing below 5
    r = h.check(tmp_path)
    assert counts(r) == {}
