"""History format 1.3, "Transactions in full": ``txn-end`` and the zombie-commit it
dates, a copier's consumed records read at its isolation, and the rule for a value whose
partition is unknown. Each rule with the history that has the anomaly and the near miss
beside it; bad ``txn-end`` lines are exit 3 with file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from txn_hist import TH

from kchaos.harness.checker import check_history
from kchaos.harness.checker.model import Results
from kchaos.harness.errors import HistoryError

RC, RU = "read_committed", "read_uncommitted"


def found(r: Results) -> dict[str, int]:
    return {k: a.count for k, a in r.anomalies.items()}


# -- zombie-commit, dated by txn-end ------------------------------------------------------


def paused_producer(h: TH, *, commit_before_fence: bool) -> int:
    """Process 1 opens z on tid-a; process 2's init of tid-a fences it, either before
    process 1 calls commit (the zombie fault's pause inside a transaction) or after;
    process 1's commit is acknowledged after the fence. Returns the fencing init's ok."""
    h.init(1, "tid-a")
    h.begin(1, "z", "tid-a", ("t", "z-0"))
    if commit_before_fence:
        h.txn_end(1, "z")
    fence = h.init(2, "tid-a")
    if not commit_before_fence:
        h.txn_end(1, "z")
    h.end(1, "z", "ok", ("t", 0, 0, "z-0"))
    h.drain_tp("t", 0, [(0, "z-0")], 2)
    return fence


def test_a_commit_called_after_the_fence_of_an_open_transaction_is_a_zombie_commit(
    tmp_path: Path,
) -> None:
    h = TH()
    fence = paused_producer(h, commit_before_fence=False)
    r = h.check(tmp_path)
    assert found(r) == {"zombie-commit": 1}
    ex = r.anomalies["zombie-commit"].examples[0]
    assert ex["txn"] == "z" and ex["process"] == 1
    assert ex["fenced_by"] == {"process": 2, "index": fence}
    called = next(i for i, e in enumerate(h.events) if e["f"] == "txn-end")
    assert ex["commit_called"] == called and called in ex["index"] and fence in ex["index"]


def test_near_miss_a_commit_called_before_the_fence_and_acknowledged_after_it(
    tmp_path: Path,
) -> None:
    h = TH()
    paused_producer(h, commit_before_fence=True)
    r = h.check(tmp_path)
    assert r.valid is True, found(r)


def test_the_commit_txn_end_dates_the_commit_not_an_earlier_abort_one(tmp_path: Path) -> None:
    """Only a txn-end with action commit is the commit call."""
    h = TH()
    h.init(1, "tid-a")
    h.begin(1, "z", "tid-a", ("t", "z-0"))
    h.txn_end(1, "z", "abort")
    h.init(2, "tid-a")
    h.txn_end(1, "z", "commit")
    h.end(1, "z", "ok", ("t", 0, 0, "z-0"))
    h.drain_tp("t", 0, [(0, "z-0")], 2)
    assert found(h.check(tmp_path)) == {"zombie-commit": 1}


def test_near_miss_the_first_commit_txn_end_is_the_call(tmp_path: Path) -> None:
    h = TH()
    h.init(1, "tid-a")
    h.begin(1, "z", "tid-a", ("t", "z-0"))
    h.txn_end(1, "z", "commit")
    h.init(2, "tid-a")
    h.txn_end(1, "z", "commit")  # a second call of the same commit
    h.end(1, "z", "ok", ("t", 0, 0, "z-0"))
    h.drain_tp("t", 0, [(0, "z-0")], 2)
    assert h.check(tmp_path).valid is True


@pytest.mark.parametrize("case", ["own-init", "fence-failed", "aborted", "no-txn-end"])
def test_near_miss_zombie_with_txn_end(tmp_path: Path, case: str) -> None:
    h = TH()
    h.init(1, "tid-a")
    h.begin(1, "z", "tid-a", ("t", "z-0"))
    if case == "own-init":
        h.init(1, "tid-a")  # the same process: no fencing of itself
    elif case == "fence-failed":
        h.init(2, "tid-a", typ="info")  # an init that did not complete ok fences nothing
    elif case == "no-txn-end":
        h.init(2, "tid-a")  # invoked before the fence, no txn-end: its invoke dates it
    else:
        h.init(2, "tid-a")
    if case != "no-txn-end":
        h.txn_end(1, "z", "abort" if case == "aborted" else "commit")
    if case == "aborted":
        h.end(1, "z", "fail")
        h.drain_tp("t", 0, [], 2)
    else:
        h.end(1, "z", "ok", ("t", 0, 0, "z-0"))
        h.drain_tp("t", 0, [(0, "z-0")], 2)
    r = h.check(tmp_path)
    assert r.valid is True, found(r)


# -- a copier's reads ---------------------------------------------------------------------


def aborted_input(h: TH) -> None:
    """Producer 1's transaction in-x (value x-0 on in/0 offset 0) aborted."""
    h.init(1, "tid-in")
    h.begin(1, "in-x", "tid-in", ("in", "x-0"))
    h.txn_end(1, "in-x", "abort")
    h.end(1, "in-x", "fail")


def copier_consumes(h: TH, isolation: str | None, value: str = "x-0") -> None:
    """Copier process 4 (tid copier) consumes ``value`` at in/0 offset 0 and copies it
    in an aborted step (so no copy lands); ``isolation``: its assign line's (None: no
    assign line)."""
    if isolation is not None:
        h.assign_iso(4, isolation, ("in", 0))
    h.init(4, "copier")
    h.begin(4, "c1", "copier", ("out", "c1-0"), consumed=[("in", 0, 0, value)],
            group="g", positions=[("in", 0, 1)], copies={"c1-0": value})  # fmt: skip
    h.txn_end(4, "c1", "abort")
    h.end(4, "c1", "fail")
    h.drain_tp("in", 0, [], 2)
    h.drain_tp("out", 0, [], 2)


@pytest.mark.parametrize("isolation", [None, RC])
def test_a_read_committed_copier_consuming_an_aborted_value_is_an_aborted_read(
    tmp_path: Path, isolation: str | None
) -> None:
    h = TH()
    aborted_input(h)
    copier_consumes(h, isolation)  # no assign line: read_committed
    r = h.check(tmp_path)
    assert found(r) == {"aborted-read": 1}  # one value, one kind: not uncommitted too
    ex = r.anomalies["aborted-read"].examples[0]
    assert (ex["value"], ex["txn"], ex["outcome"]) == ("x-0", "in-x", "fail")
    assert (ex["topic"], ex["partition"], ex["offset"]) == ("in", 0, 0)


def test_near_miss_a_read_uncommitted_copier_may_consume_an_aborted_value(
    tmp_path: Path,
) -> None:
    h = TH()
    aborted_input(h)
    copier_consumes(h, RU)
    r = h.check(tmp_path)
    assert r.valid is True, found(r)


def test_the_copiers_latest_assign_decides(tmp_path: Path) -> None:
    h = TH()
    aborted_input(h)
    h.assign_iso(4, RC, ("in", 0))
    copier_consumes(h, RU)  # the later assign: read_uncommitted
    assert h.check(tmp_path).valid is True


def test_a_copier_consuming_a_failed_plain_send_counts_as_a_poll_of_it(tmp_path: Path) -> None:
    """Version 1's rules for a plain send: any reader, any isolation."""
    h = TH("in")
    h.invoke("p-0")
    h.done("p-0", "fail")
    copier_consumes(h, RU, "p-0")
    (tmp_path / "consumed").mkdir()
    consumed = found(h.check(tmp_path / "consumed"))
    h = TH("in")
    h.invoke("p-0")
    h.done("p-0", "fail")
    h.assign_iso(4, RU, ("in", 0))
    h.poll_at(4, ("in", 0, 0, "p-0"))
    h.drain_tp("in", 0, [], 2)
    (tmp_path / "polled").mkdir()
    polled = found(h.check(tmp_path / "polled"))
    assert consumed == polled == {"aborted-read": 1, "uncommitted-read": 1}


def test_a_read_committed_copier_consuming_a_vanished_value_is_an_uncommitted_read(
    tmp_path: Path,
) -> None:
    h = TH()
    h.init(1, "tid-in")
    h.begin(1, "in-x", "tid-in", ("in", "x-0"))
    h.end(1, "in-x", "info")  # unknown outcome; the drain shows it never landed
    copier_consumes(h, None)
    r = h.check(tmp_path)
    assert found(r) == {"uncommitted-read": 1}
    assert r.anomalies["uncommitted-read"].examples[0]["value"] == "x-0"


def test_near_miss_a_copier_consuming_committed_input_again_after_an_abort(
    tmp_path: Path,
) -> None:
    """The same records consumed twice (an aborted step, then its retry): same
    positions, no duplicate; in the drain: nothing."""
    h = TH()
    h.init(1, "tid-in")
    h.begin(1, "in-x", "tid-in", ("in", "x-0"))
    h.end(1, "in-x", "ok", ("in", 0, 0, "x-0"))
    h.init(4, "copier")
    for txn, outcome in (("c1", "fail"), ("c2", "ok")):
        h.begin(4, txn, "copier", ("out", f"{txn}-0"), consumed=[("in", 0, 0, "x-0")],
                group="g", positions=[("in", 0, 1)], copies={f"{txn}-0": "x-0"})  # fmt: skip
        h.txn_end(4, txn, "commit" if outcome == "ok" else "abort")
        h.end(4, txn, outcome, *([("out", 0, 0, "c2-0")] if outcome == "ok" else []))
    h.drain_tp("in", 0, [(0, "x-0")], 2)
    h.drain_tp("out", 0, [(0, "c2-0")], 2)
    r = h.check(tmp_path)
    assert r.valid is True, found(r)


def test_a_copier_reading_another_value_at_a_drained_position_is_inconsistent(
    tmp_path: Path,
) -> None:
    h = TH()
    h.init(1, "tid-in")
    h.begin(1, "in-x", "tid-in", ("in", "x-0"))
    h.end(1, "in-x", "ok", ("in", 0, 0, "x-0"))
    h.init(4, "copier")
    h.begin(4, "c1", "copier", ("out", "c1-0"), consumed=[("in", 0, 0, "x-0")])
    h.end(4, "c1", "fail")
    h.drain_tp("in", 0, [(0, "other")], 2)
    h.drain_tp("out", 0, [], 2)
    r = h.check(tmp_path)
    assert "inconsistent-offset" in found(r)


# -- a value whose partition is unknown ---------------------------------------------------


def unplaced(h: TH, outcome: str = "ok") -> None:
    """Producer 1's transaction x: n-0 on t (partition 0 reported), n-1 on t with no
    partition reported; t has partitions 0 and 1 (named by the monitor)."""
    h.init(1, "tid-a")
    h.begin(1, "x", "tid-a", ("t", "n-0"), ("t", "n-1"))
    h.txn_end(1, "x")
    h.end(1, "x", outcome, *([("t", 0, 0, "n-0"), ("t", None, None, "n-1")]
                             if outcome == "ok" else []))  # fmt: skip
    for part in (0, 1):
        h.add(process="monitor", type="ok", f="metadata", topic="t", partition=part, leader=1,
              isr=[1, 2, 3], replicas=[1, 2, 3], min_insync=2)  # fmt: skip


def test_an_unplaced_value_missing_from_a_topic_drained_completely_is_lost_and_torn(
    tmp_path: Path,
) -> None:
    h = TH()
    unplaced(h)
    h.drain_tp("t", 0, [(0, "n-0")], 2)
    h.drain_tp("t", 1, [(0, "other")], 1)
    r = h.check(tmp_path)
    assert found(r) == {"lost-write": 1, "torn-transaction": 1}
    assert r.anomalies["lost-write"].examples[0]["value"] == "n-1"


@pytest.mark.parametrize(
    "partition_1",
    [
        "not drained",
        "log start above 0",
        "last stable offset below the high watermark",
    ],
)
def test_near_miss_an_unplaced_value_of_a_topic_not_drained_completely_is_not_missing(
    tmp_path: Path, partition_1: str
) -> None:
    h = TH()
    unplaced(h)
    h.drain_tp("t", 0, [(0, "n-0")], 2)
    if partition_1 == "log start above 0":
        h.drain_tp("t", 1, [(3, "other")], 4, lso=3)
    elif partition_1 == "last stable offset below the high watermark":
        h.drain_tp("t", 1, [(0, "other")], 3, stable=1)
    r = h.check(tmp_path)
    assert "lost-write" not in found(r) and "torn-transaction" not in found(r)
    assert found(r).get("unseen") == 1  # n-1 may be where the drain could not look
    assert r.valid == "unknown"


@pytest.mark.parametrize("out_drained", [True, False])
def test_an_unplaced_copy_missing_from_a_topic_drained_completely_is_eos_lost(
    tmp_path: Path, out_drained: bool
) -> None:
    h = TH()
    h.init(1, "tid-in")
    h.begin(1, "in-x", "tid-in", ("in", "x-0"))
    h.end(1, "in-x", "ok", ("in", 0, 0, "x-0"))
    h.init(4, "copier")
    h.begin(4, "c1", "copier", ("out", "c1-0"), consumed=[("in", 0, 0, "x-0")],
            group="g", positions=[("in", 0, 1)], copies={"c1-0": "x-0"})  # fmt: skip
    h.txn_end(4, "c1")
    h.end(4, "c1", "ok", ("out", None, None, "c1-0"))
    h.drain_tp("in", 0, [(0, "x-0")], 2)
    if out_drained:
        h.drain_tp("out", 0, [], 0)
    else:  # out/0 drained only up to a stuck last stable offset: the copy may be there
        h.drain_tp("out", 0, [], 1, stable=0)
    r = h.check(tmp_path)
    if out_drained:
        assert found(r) == {"eos-lost": 1, "lost-write": 1}
    else:
        assert found(r) == {"unseen": 1}  # the copy: neither lost nor judged for eos
        assert r.stats["transactions"]["eos"] == {"inputs_judged": 0, "inputs_unjudged": 1}


# -- bad txn-end lines --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"action": "rollback"}, "action", "unknown action"),
        ({"action": None}, "action", "expected"),
        ({"txn": "nope"}, "txn", "not open"),
        ({"txn": None}, "txn", "expected"),
        ({"type": "ok"}, "type", "invoke"),
    ],
)
def test_a_bad_txn_end_line_names_file_line_and_field(
    tmp_path: Path, change: dict, field: str, words: str
) -> None:
    h = TH()
    h.init(1, "tid-a")
    h.begin(1, "x", "tid-a", ("t", "a-0"))
    at = h.txn_end(1, "x")
    h.end(1, "x", "ok", ("t", 0, 0, "a-0"))
    h.drain_tp("t", 0, [(0, "a-0")], 1)
    assert h.check(tmp_path).valid is True
    h.events[at].update(change)
    path = h.write(tmp_path / "history.jsonl")
    with pytest.raises(HistoryError) as err:
        check_history(path)
    e = err.value
    assert e.exit_code == 3 and e.line == at + 1 and e.field == field, str(e)
    assert words in str(e)


def test_a_txn_end_after_its_transactions_completion_is_bad_input(tmp_path: Path) -> None:
    h = TH()
    h.init(1, "tid-a")
    h.begin(1, "x", "tid-a", ("t", "a-0"))
    h.end(1, "x", "fail")
    at = h.txn_end(1, "x")
    with pytest.raises(HistoryError) as err:
        check_history(h.write(tmp_path / "history.jsonl"))
    assert err.value.line == at + 1 and err.value.field == "txn"


def test_the_format_documents_txn_end_and_transaction_version_lines_are_read(
    tmp_path: Path,
) -> None:
    lines = [
        '{"index":40,"time":900,"process":4,"type":"invoke","f":"txn-init","transactional_id":"kchaos-t4"}',
        '{"index":41,"time":950,"process":4,"type":"ok","f":"txn-init","transactional_id":"kchaos-t4","producer_id":7001,"producer_epoch":3,"transaction_version":1}',
        '{"index":50,"time":1000,"process":4,"type":"invoke","f":"txn","txn":"4-12","transactional_id":"kchaos-t4","sends":[{"topic":"t","key":"k1","value":"4-12-0"},{"topic":"u","key":"k9","value":"4-12-1"}]}',
        '{"index":57,"time":1390,"process":4,"type":"invoke","f":"txn-end","txn":"4-12","action":"commit"}',
        '{"index":58,"time":1400,"process":4,"type":"ok","f":"txn","txn":"4-12","sends":[{"topic":"t","partition":0,"offset":77,"value":"4-12-0"},{"topic":"u","partition":2,"offset":30,"value":"4-12-1"}]}',
        '{"index":900,"time":80000,"process":"drain","type":"ok","f":"drain","records":[{"topic":"t","partition":0,"offset":77,"value":"4-12-0"},{"topic":"u","partition":2,"offset":30,"value":"4-12-1"}]}',
        '{"index":950,"time":81000,"process":"drain","type":"ok","f":"drain-end","topic":"t","partition":0,"log_start_offset":77,"high_watermark":79,"isolation":"read_committed","last_stable_offset":79}',
        '{"index":951,"time":81000,"process":"drain","type":"ok","f":"drain-end","topic":"u","partition":2,"log_start_offset":30,"high_watermark":32,"isolation":"read_committed","last_stable_offset":32}',
    ]
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(lines) + "\n")
    r = check_history(path)
    assert r.valid is True, found(r)
    assert r.stats["transactions"]["ok"] == 1
