"""nonmonotonic-poll and poll-skip within stretches, and what starts a new stretch."""

from __future__ import annotations

from pathlib import Path

from checker_hist import H, counts

from kchaos.harness.checker.api import check_facts
from kchaos.harness.checker.parse import read_history


def _log(h: H, n: int, partition: int = 0) -> list[str]:
    values = [f"p{partition}-{i}" for i in range(n)]
    for i, v in enumerate(values):
        h.send(v, partition, i)
    return values


def test_nonmonotonic_poll_within_a_stretch(tmp_path: Path) -> None:
    h = H()
    v = _log(h, 5)
    h.assign(5, 0)
    h.poll(5, (0, 0, v[0]), (0, 1, v[1]), (0, 2, v[2]))
    bad = h.poll(5, (0, 1, v[1]), (0, 2, v[2]), (0, 3, v[3]), (0, 4, v[4]))  # back to 1
    h.poll(5, (0, 4, v[4]))  # 4 again: not greater
    h.drain_all(0, v)
    r = h.check(tmp_path)
    assert counts(r) == {"nonmonotonic-poll": 2}
    ex = r.anomalies["nonmonotonic-poll"].examples[0]
    assert (ex["process"], ex["offset"], ex["previous_offset"]) == (5, 1, 2)
    assert bad in ex["index"]


def test_each_assign_starts_a_new_stretch(tmp_path: Path) -> None:
    h = H()
    v = _log(h, 4)
    h.poll(5, (0, 0, v[0]), (0, 1, v[1]), (0, 2, v[2]), (0, 3, v[3]))
    h.assign(5, 0)
    h.poll(5, (0, 1, v[1]), (0, 2, v[2]))  # seek back after a rebalance
    h.assign(5, 0)
    h.poll(5, (0, 3, v[3]))  # seek forward to the committed offset
    h.poll(6, (0, 0, v[0]))  # another consumer: its own stretch
    h.drain_all(0, v)
    assert h.check(tmp_path).valid is True


def test_poll_skip_over_records_the_drain_holds(tmp_path: Path) -> None:
    h = H()
    v = _log(h, 6)
    h.poll(5, (0, 0, v[0]), (0, 1, v[1]))
    line = h.poll(5, (0, 4, v[4]))  # 2 and 3 jumped over
    h.poll(5, (0, 5, v[5]))
    h.drain_all(0, v)
    r = h.check(tmp_path)
    assert counts(r) == {"poll-skip": 1}
    ex = r.anomalies["poll-skip"].examples[0]
    assert ex["skipped_offsets"] == [2, 3] and ex["value"] == v[2]
    assert (ex["previous_offset"], ex["next_offset"]) == (1, 4)
    assert line in ex["index"]


def test_gaps_the_drain_does_not_hold_are_no_skip(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.send("b", 0, 3)  # offsets 1 and 2: e.g. transaction markers, nothing readable
    h.poll(5, (0, 0, "a"), (0, 3, "b"))
    h.drain((0, 0, "a"), (0, 3, "b"))
    h.drain_end(0, 4)
    assert h.check(tmp_path).valid is True


def test_gaps_below_the_log_start_offset_and_in_undrained_partitions(tmp_path: Path) -> None:
    h = H()
    v = _log(h, 6)
    w = _log(h, 3, partition=1)
    h.poll(5, (0, 0, v[0]), (0, 3, v[3]))  # 1, 2 were deleted before the drain
    h.poll(5, (1, 0, w[0]), (1, 2, w[2]))  # partition 1 not drained: cannot judge
    h.drain_all(0, v[3:], lso=3)
    r = h.check(tmp_path)
    assert "poll-skip" not in counts(r)
    assert r.stats["ordering"]["gaps_in_undrained_partitions"] == 1


def test_the_ordering_checker_alone(tmp_path: Path) -> None:
    h = H()
    v = _log(h, 3)
    h.poll(5, (0, 2, v[2]), (0, 0, v[0]))
    h.drain_all(0, v)
    facts = read_history(h.write(tmp_path / "h.jsonl"))
    r = check_facts(facts, checkers=["ordering"])
    assert counts(r) == {"nonmonotonic-poll": 1}
    assert list(r.checkers) == ["ordering"]
