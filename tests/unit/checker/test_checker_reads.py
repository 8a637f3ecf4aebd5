"""uncommitted-read, aborted-read, duplicate, inconsistent-offset, and their near misses."""

from __future__ import annotations

from pathlib import Path

from checker_hist import H, counts


def test_uncommitted_reads_are_counted_per_value(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.invoke("x")
    h.done("x", "info")  # written to the old leader, truncated later
    h.invoke("y")
    h.done("y", "info")
    h.poll(5, (0, 0, "a"), (0, 1, "x"), (0, 2, "y"))
    h.poll(6, (0, 1, "x"))
    h.drain_all(0, ["a"])
    r = h.check(tmp_path)
    assert counts(r) == {"uncommitted-read": 2}
    ex = r.anomalies["uncommitted-read"].examples[0]
    assert (ex["value"], ex["partition"], ex["offset"]) == ("x", 0, 1)
    poll_lines = [e["index"] for e in h.events if e.get("f") == "poll" and e["type"] == "ok"]
    assert set(poll_lines) <= set(ex["index"])  # both polls that read x are named


def test_polled_below_the_log_start_offset_is_not_uncommitted(tmp_path: Path) -> None:
    h = H()
    for i in range(4):
        h.send(f"v{i}", 0, i)
    h.poll(5, (0, 0, "v0"), (0, 1, "v1"), (0, 2, "v2"), (0, 3, "v3"))
    h.drain_all(0, ["v2", "v3"], lso=2)
    r = h.check(tmp_path)
    assert r.valid is True, r.to_json()


def test_uncommitted_needs_a_completed_drain(tmp_path: Path) -> None:
    h = H()
    h.invoke("x")
    h.done("x", "info")
    h.poll(5, (0, 0, "x"))  # partition 0 never drained: cannot tell
    r = h.check(tmp_path)
    assert r.anomalies == {}
    assert r.valid == "unknown" and r.reasons == ["nothing drained"]


def test_aborted_read_by_a_poll_or_by_the_drain(tmp_path: Path) -> None:
    h = H()
    h.invoke("f1")
    h.done("f1", "fail")
    h.invoke("f2")
    h.done("f2", "fail")
    h.invoke("f3")
    h.done("f3", "fail")  # never read: fine
    h.poll(5, (0, 0, "f1"))
    h.drain_all(0, ["f1", "f2"])
    r = h.check(tmp_path)
    assert counts(r) == {"aborted-read": 2}
    assert [e["value"] for e in r.anomalies["aborted-read"].examples] == ["f1", "f2"]


def test_info_sends_that_landed_are_not_aborted(tmp_path: Path) -> None:
    h = H()
    h.invoke("i")
    h.done("i", "info")
    h.poll(5, (0, 0, "i"))
    h.drain_all(0, ["i"])
    assert h.check(tmp_path).valid is True


def test_duplicates_by_any_reader(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.send("b", 0, 1)
    h.poll(5, (0, 0, "a"), (0, 1, "b"), (0, 2, "a"))  # a retried: at 0 and 2
    h.drain((0, 0, "a"), (0, 1, "b"), (0, 2, "a"), (1, 0, "b"))  # b at p0 and p1
    h.drain_end(0, 3)
    h.drain_end(1, 1)
    r = h.check(tmp_path)
    assert counts(r) == {"duplicate": 2}
    ex = r.anomalies["duplicate"].examples[0]
    assert ex["value"] == "a"
    assert ex["positions"] == [
        {"topic": "t", "partition": 0, "offset": 0},
        {"topic": "t", "partition": 0, "offset": 2},
    ]


def test_rereading_after_reassignment_is_no_duplicate(tmp_path: Path) -> None:
    h = H()
    for i in range(3):
        h.send(f"v{i}", 0, i)
    h.assign(5, 0)
    h.poll(5, (0, 0, "v0"), (0, 1, "v1"), (0, 2, "v2"))
    h.assign(5, 0)  # rebalance, seek back: the same records at the same offsets
    h.poll(5, (0, 1, "v1"), (0, 2, "v2"))
    h.assign(6, 0)
    h.poll(6, (0, 0, "v0"))
    h.drain_all(0, ["v0", "v1", "v2"])
    assert h.check(tmp_path).valid is True


def test_inconsistent_offsets_between_readers(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.invoke("b")
    h.done("b", "info")
    h.invoke("c")
    h.done("c", "info")
    h.poll(5, (0, 0, "a"), (0, 1, "b"))
    h.poll(6, (0, 1, "c"))  # b and c at offset 1
    h.drain_all(0, ["a", "c"])
    r = h.check(tmp_path)
    c = counts(r)
    assert c["inconsistent-offset"] == 1
    ex = r.anomalies["inconsistent-offset"].examples[0]
    assert ex["values"] == ["b", "c"] and ex["offset"] == 1
    assert c["uncommitted-read"] == 1  # b, read but not in the drain


def test_inconsistent_offset_between_an_ack_and_the_drain(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.send("b", 0, 0)  # acknowledged at a's offset; it is really at 1
    h.drain_all(0, ["a", "b"])
    r = h.check(tmp_path)
    assert counts(r) == {"inconsistent-offset": 1}


def test_inconsistent_offset_between_an_ack_and_a_poll(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 5)
    h.invoke("z")
    h.done("z", "info")
    h.poll(5, (0, 5, "z"))  # partition never drained: only the ack and the poll disagree
    r = h.check(tmp_path)
    assert counts(r) == {"inconsistent-offset": 1, "unseen": 1}  # a was never seen


def test_acks_without_an_offset_are_not_positions(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, -1, acks="0")  # acks=0: the client reports no offset
    h.send("b", 0, -1, acks="0")
    h.drain_all(0, ["a", "b"])
    assert h.check(tmp_path).valid is True
