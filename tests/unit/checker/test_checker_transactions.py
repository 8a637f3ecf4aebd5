"""History format 1.2: each transactional kind found in a history that has it, and the
near misses next to it left alone; bad transactional input is exit 3 with file, line
and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from txn_hist import TH

from kchaos.harness.checker import RunSettings, check_history, check_run
from kchaos.harness.checker.model import Results
from kchaos.harness.errors import HistoryError

RC, RU = "read_committed", "read_uncommitted"


def found(r: Results) -> dict[str, int]:
    return {k: a.count for k, a in r.anomalies.items()}


def committed_pair(h: TH, *, offsets: bool = True) -> None:
    """Producer 1 commits t4-1: a-0 to t/0 at offset 0, a-1 to u/0 at offset 0."""
    h.init(1, "tid-a")
    h.begin(1, "t4-1", "tid-a", ("t", "a-0"), ("u", "a-1"))
    if offsets:
        h.end(1, "t4-1", "ok", ("t", 0, 0, "a-0"), ("u", 0, 0, "a-1"))
    else:
        h.end(1, "t4-1", "ok")


# -- a clean transactional run -----------------------------------------------------------


def test_a_committed_and_an_aborted_transaction_read_correctly_are_valid(tmp_path: Path) -> None:
    h = TH()
    committed_pair(h)
    h.begin(1, "t4-2", "tid-a", ("t", "b-0"))
    h.end(1, "t4-2", "fail")
    h.assign_iso(5, RC, ("t", 0), ("u", 0))
    h.poll_at(5, ("t", 0, 0, "a-0"))  # b-0 at offset 2 is skipped: aborted
    h.assign_iso(6, RU, ("t", 0))
    h.poll_at(6, ("t", 0, 0, "a-0"), ("t", 0, 2, "b-0"))  # read_uncommitted sees it
    h.drain_tp("t", 0, [(0, "a-0")], 4)
    h.drain_tp("u", 0, [(0, "a-1")], 2)
    r = h.check(tmp_path)
    assert r.valid is True, found(r)
    s = r.stats["transactions"]
    assert (s["ok"], s["fail"], s["info"], s["open"]) == (1, 1, 0, 0)
    assert s["values"]["ok"] == 2 and s["values"]["fail"] == 1
    assert s["inits"] == 1 and s["by_transactional_id"]["tid-a"]["ok"] == 1
    assert s["anomalies_by_transactional_id"] == {}


# -- lost-write (extended) ----------------------------------------------------------------


def test_a_committed_value_missing_from_the_drain_is_a_lost_write(tmp_path: Path) -> None:
    h = TH()
    committed_pair(h)
    h.drain_tp("t", 0, [], 2)
    h.drain_tp("u", 0, [], 2)
    r = h.check(tmp_path)
    assert found(r) == {"lost-write": 2}  # all lost: not torn
    ex = r.anomalies["lost-write"].examples[0]
    assert ex["txn"] == "t4-1" and ex["transactional_id"] == "tid-a"
    assert ex["value"] == "a-0" and ex["offset"] == 0
    assert r.stats["transactions"]["anomalies_by_transactional_id"] == {"tid-a": {"lost-write": 2}}


def test_without_offsets_the_partition_comes_from_the_ok_line(tmp_path: Path) -> None:
    h = TH()
    h.init(1, "tid-a")
    h.begin(1, "x", "tid-a", ("t", "a-0"))
    h.end(1, "x", "ok", ("t", 1, None, "a-0"))
    h.drain_tp("t", 0, [], 0)
    h.drain_tp("t", 1, [(0, "other")], 1)
    r = h.check(tmp_path)
    assert found(r)["lost-write"] == 1
    assert r.anomalies["lost-write"].examples[0]["partition"] == 1


def test_without_any_position_a_value_missing_from_a_wholly_drained_topic_is_lost(
    tmp_path: Path,
) -> None:
    h = TH()
    committed_pair(h, offsets=False)
    h.drain_tp("t", 0, [(0, "a-0")], 1)
    h.drain_tp("u", 0, [], 0)
    r = h.check(tmp_path)
    assert found(r) == {"lost-write": 1, "torn-transaction": 1}
    assert r.anomalies["lost-write"].examples[0]["value"] == "a-1"


def test_near_miss_a_partition_not_drained_is_unseen_not_lost_nor_torn(tmp_path: Path) -> None:
    h = TH()
    committed_pair(h)
    h.drain_tp("t", 0, [(0, "a-0")], 1)  # u/0 never drained
    r = h.check(tmp_path)
    assert found(r) == {"unseen": 1}
    assert r.valid == "unknown"


def test_near_miss_no_position_and_a_topic_partly_drained_is_unseen(tmp_path: Path) -> None:
    h = TH()
    committed_pair(h, offsets=False)
    h.drain_tp("t", 0, [(0, "a-0")], 1)
    h.meta(0, 1, [1, 2, 3])  # t/0 is known; u is named by the send only
    h.add(process="monitor", type="ok", f="metadata", topic="u", partition=1, leader=1,
          isr=[1, 2, 3], replicas=[1, 2, 3], min_insync=2)  # fmt: skip
    h.drain_tp("u", 0, [], 0)  # u/1 not drained: a-1 may be there
    r = h.check(tmp_path)
    assert found(r) == {"unseen": 1}


def test_near_miss_a_value_below_the_log_start_offset_is_not_lost(tmp_path: Path) -> None:
    h = TH()
    committed_pair(h)
    h.drain_tp("t", 0, [(1, "later")], 2, lso=1)  # a-0 at 0 was deleted
    h.drain_tp("u", 0, [(0, "a-1")], 2)
    assert h.check(tmp_path).valid is True


# -- aborted-read (extended) and uncommitted-read -----------------------------------------


def aborted(h: TH) -> None:
    h.init(1, "tid-a")
    h.begin(1, "x", "tid-a", ("t", "b-0"), ("t", "b-1"))
    h.end(1, "x", "fail")


def test_a_read_committed_poll_of_an_aborted_value_is_an_aborted_read(tmp_path: Path) -> None:
    h = TH()
    aborted(h)
    h.assign_iso(5, RC, ("t", 0))
    h.poll_at(5, ("t", 0, 0, "b-0"))
    h.drain_tp("t", 0, [], 3)
    r = h.check(tmp_path)
    assert found(r) == {"aborted-read": 1}  # counted once: not also uncommitted-read
    ex = r.anomalies["aborted-read"].examples[0]
    assert (ex["value"], ex["txn"], ex["transactional_id"]) == ("b-0", "x", "tid-a")
    assert ex["outcome"] == "fail"


def test_an_aborted_value_in_the_read_committed_drain_is_an_aborted_read(
    tmp_path: Path,
) -> None:
    h = TH()
    aborted(h)
    h.drain_tp("t", 0, [(0, "b-0"), (1, "b-1")], 3)
    r = h.check(tmp_path)
    assert found(r) == {"aborted-read": 2}


def test_near_miss_read_uncommitted_readers_may_see_aborted_values(tmp_path: Path) -> None:
    h = TH()
    aborted(h)
    h.send("plain", 0, 3)
    h.assign_iso(6, RU, ("t", 0))
    h.poll_at(6, ("t", 0, 0, "b-0"), ("t", 0, 1, "b-1"), ("t", 0, 3, "plain"))
    h.assign(7, 0)  # no isolation: read_uncommitted, as in version 1
    h.poll_at(7, ("t", 0, 1, "b-1"))
    h.drain_tp("t", 0, [(3, "plain")], 4)
    r = h.check(tmp_path)
    assert r.valid is True, found(r)


def test_a_reader_that_switches_to_read_committed_is_judged_from_then_on(
    tmp_path: Path,
) -> None:
    h = TH()
    aborted(h)
    h.assign_iso(6, RU, ("t", 0))
    h.poll_at(6, ("t", 0, 0, "b-0"))
    h.assign_iso(6, RC, ("t", 0))
    h.poll_at(6, ("t", 0, 1, "b-1"))
    h.drain_tp("t", 0, [], 3)
    r = h.check(tmp_path)
    assert found(r) == {"aborted-read": 1}
    assert r.anomalies["aborted-read"].examples[0]["value"] == "b-1"


def test_a_read_committed_read_of_a_vanished_unknown_transaction_is_uncommitted(
    tmp_path: Path,
) -> None:
    h = TH()
    h.init(1, "tid-a")
    h.begin(1, "x", "tid-a", ("t", "c-0"))
    h.end(1, "x", "info")
    h.assign_iso(5, RC, ("t", 0))
    h.poll_at(5, ("t", 0, 0, "c-0"))
    h.drain_tp("t", 0, [], 2)
    r = h.check(tmp_path)
    assert found(r) == {"uncommitted-read": 1}
    assert r.anomalies["uncommitted-read"].examples[0]["txn"] == "x"


def test_near_miss_an_info_transaction_entirely_absent_is_valid(tmp_path: Path) -> None:
    h = TH()
    h.init(1, "tid-a")
    h.begin(1, "x", "tid-a", ("t", "c-0"), ("t", "c-1"))
    h.end(1, "x", "info")
    h.send("plain", 0, 3)
    h.drain_tp("t", 0, [(3, "plain")], 4)
    r = h.check(tmp_path)
    assert r.valid is True, found(r)
    assert r.stats["transactions"]["info"] == 1


# -- torn-transaction ---------------------------------------------------------------------


def test_an_unknown_transaction_half_in_the_drain_is_torn(tmp_path: Path) -> None:
    h = TH()
    h.init(1, "tid-a")
    h.begin(1, "x", "tid-a", ("t", "c-0"), ("u", "c-1"))
    h.end(1, "x", "info")
    h.drain_tp("t", 0, [(0, "c-0")], 2)
    h.drain_tp("u", 0, [], 2)
    r = h.check(tmp_path)
    assert found(r) == {"torn-transaction": 1}
    ex = r.anomalies["torn-transaction"].examples[0]
    assert ex["txn"] == "x" and ex["drained"] == ["c-0"] and ex["missing"] == ["c-1"]
    assert len(ex["index"]) >= 2  # the invoke and the completion, at least


def test_a_committed_transaction_half_lost_is_torn_and_lost(tmp_path: Path) -> None:
    h = TH()
    committed_pair(h)
    h.drain_tp("t", 0, [(0, "a-0")], 2)
    h.drain_tp("u", 0, [], 2)
    r = h.check(tmp_path)
    assert found(r) == {"torn-transaction": 1, "lost-write": 1}


def test_near_miss_a_partition_not_drained_completely_is_not_torn(tmp_path: Path) -> None:
    h = TH()
    h.init(1, "tid-a")
    h.begin(1, "x", "tid-a", ("t", "c-0"), ("u", "c-1"))
    h.end(1, "x", "info")
    h.drain_tp("t", 0, [(0, "c-0")], 2)
    h.meta(0, 1, [1, 2, 3])
    h.add(process="monitor", type="ok", f="metadata", topic="u", partition=0, leader=1,
          isr=[1, 2, 3], replicas=[1, 2, 3], min_insync=2)  # fmt: skip
    r = h.check(tmp_path)  # u/0 known but not drained: c-1 unknown, not missing
    assert "torn-transaction" not in found(r)


# -- zombie-commit ------------------------------------------------------------------------


def test_a_commit_after_another_processs_init_is_a_zombie_commit(tmp_path: Path) -> None:
    h = TH()
    h.init(1, "tid-a")
    h.init(2, "tid-a")  # fences process 1
    h.begin(1, "z", "tid-a", ("t", "z-0"))
    h.end(1, "z", "ok", ("t", 0, 0, "z-0"))
    h.drain_tp("t", 0, [(0, "z-0")], 2)
    r = h.check(tmp_path)
    assert found(r) == {"zombie-commit": 1}
    ex = r.anomalies["zombie-commit"].examples[0]
    assert ex["txn"] == "z" and ex["transactional_id"] == "tid-a" and ex["process"] == 1
    assert ex["fenced_by"]["process"] == 2
    assert r.stats["transactions"]["anomalies_by_transactional_id"] == {
        "tid-a": {"zombie-commit": 1}
    }


@pytest.mark.parametrize("case", ["same-process", "invoked-before", "fenced-aborts", "re-init"])
def test_near_miss_zombie(tmp_path: Path, case: str) -> None:
    h = TH()
    h.init(1, "tid-a")
    if case == "same-process":
        h.init(1, "tid-a")  # the same producer restarting its own id
    if case == "invoked-before":
        h.begin(1, "z", "tid-a", ("t", "z-0"))
        h.init(2, "tid-a")
    else:
        if case != "same-process":
            h.init(2, "tid-a")
        if case == "re-init":
            h.init(1, "tid-a")  # process 1 takes the id back, fencing process 2
        h.begin(1, "z", "tid-a", ("t", "z-0"))
    if case == "fenced-aborts":
        h.end(1, "z", "fail")
        h.drain_tp("t", 0, [], 2)
    else:
        h.end(1, "z", "ok", ("t", 0, 0, "z-0"))
        h.drain_tp("t", 0, [(0, "z-0")], 2)
    r = h.check(tmp_path)
    assert r.valid is True, found(r)


# -- hanging-transaction ------------------------------------------------------------------


def hanging(h: TH, wait_s: float, stable: int) -> None:
    committed_pair(h)
    h.wait(wait_s)
    h.drain_tp("t", 0, [(0, "a-0")], 3, stable=stable)
    h.drain_tp("u", 0, [(0, "a-1")], 2)


def test_a_stable_offset_stuck_past_the_timeout_is_a_hanging_transaction(
    tmp_path: Path,
) -> None:
    h = TH()
    hanging(h, 61, 1)
    r = h.check(tmp_path)
    assert found(r) == {"hanging-transaction": 1}
    ex = r.anomalies["hanging-transaction"].examples[0]
    assert (ex["topic"], ex["partition"], ex["last_stable_offset"]) == ("t", 0, 1)
    assert ex["transaction_timeout_ms"] == 60_000


@pytest.mark.parametrize(("wait_s", "stable"), [(30, 1), (61, 3)])
def test_near_miss_a_stable_offset_below_within_the_timeout_or_none_below(
    tmp_path: Path, wait_s: float, stable: int
) -> None:
    h = TH()
    hanging(h, wait_s, stable)
    r = h.check(tmp_path)
    assert r.valid is True, found(r)


def test_the_transaction_timeout_comes_from_run_json(tmp_path: Path) -> None:
    h = TH()
    hanging(h, 61, 1)
    (tmp_path / "run.json").write_text(json.dumps({"producer": {"transaction.timeout.ms": 120000}}))
    h.write(tmp_path / "history.jsonl")
    r = check_run(tmp_path, write=False)
    assert r.valid is True, found(r)
    assert r.stats["transactions"]["transaction_timeout_ms"] == 120_000
    assert RunSettings().transaction_timeout_ms == 60_000


# -- eos-duplicate and eos-lost -----------------------------------------------------------


def copier_input(h: TH, n: int = 3) -> None:
    for i in range(n):
        h.add(process=0, type="invoke", f="send", topic="in", key="k", value=f"in-{i}")
        h.add(process=0, type="ok", f="send", topic="in", partition=0, offset=i, value=f"in-{i}")
    h.init(4, "copier")


def copy(h: TH, txn: str, inputs: list[int], outcome: str, copied: list[int] | None = None,
         upto: int | None = None) -> list[str]:  # fmt: skip
    copied = inputs if copied is None else copied
    outs = [(f"{txn}-{i}", f"in-{i}") for i in copied]
    h.begin(
        4,
        txn,
        "copier",
        *[("out", o) for o, _ in outs],
        consumed=[("in", 0, i, f"in-{i}") for i in inputs],
        group="g",
        positions=[("in", 0, (max(inputs) + 1) if upto is None else upto)],
        copies=dict(outs),
    )
    h.end(4, txn, outcome)
    return [o for o, _ in outs]


def drain_copier(h: TH, outs: list[str], n: int = 3) -> None:
    h.drain_tp("in", 0, [(i, f"in-{i}") for i in range(n)], n)
    h.drain_tp("out", 0, list(enumerate(outs)), len(outs) + 4)


def test_near_miss_an_aborted_copy_retried_is_copied_once(tmp_path: Path) -> None:
    h = TH()
    copier_input(h)
    copy(h, "c1", [0, 1, 2], "fail")
    outs = copy(h, "c2", [0, 1, 2], "ok")
    drain_copier(h, outs)
    r = h.check(tmp_path)
    assert r.valid is True, found(r)
    assert r.stats["transactions"]["eos"]["inputs_judged"] == 3


def test_two_committed_copies_of_an_input_are_an_eos_duplicate(tmp_path: Path) -> None:
    h = TH()
    copier_input(h)
    outs = copy(h, "c1", [0, 1], "ok")
    outs += copy(h, "c2", [1, 2], "ok")  # in-1 again
    drain_copier(h, outs)
    r = h.check(tmp_path)
    assert found(r) == {"eos-duplicate": 1}
    ex = r.anomalies["eos-duplicate"].examples[0]
    assert ex["value"] == "in-1" and ex["copies"] == ["c1-1", "c2-1"]
    assert ex["txns"] == ["c1", "c2"] and ex["transactional_id"] == "copier"


def test_an_input_below_the_committed_position_never_copied_is_eos_lost(
    tmp_path: Path,
) -> None:
    h = TH()
    copier_input(h)
    outs = copy(h, "c1", [0, 1, 2], "ok", copied=[0, 2])  # in-1 skipped
    drain_copier(h, outs)
    r = h.check(tmp_path)
    assert found(r) == {"eos-lost": 1}
    ex = r.anomalies["eos-lost"].examples[0]
    assert (ex["value"], ex["offset"], ex["committed_position"]) == ("in-1", 1, 3)
    assert ex["txn"] == "c1" and ex["transactional_id"] == "copier"


def test_an_input_only_in_the_input_drain_below_the_position_is_eos_lost(
    tmp_path: Path,
) -> None:
    h = TH()
    copier_input(h)
    outs = copy(h, "c1", [0], "ok", upto=3)  # commits past in-1 and in-2 unread
    drain_copier(h, outs)
    r = h.check(tmp_path)
    assert found(r) == {"eos-lost": 2}


def test_near_miss_inputs_at_or_above_the_position_are_not_yet_due(tmp_path: Path) -> None:
    h = TH()
    copier_input(h)
    outs = copy(h, "c1", [0, 1], "ok")  # in-2 not consumed, position 2
    copy(h, "c2", [2], "info")  # unknown: its copy is absent, position not committed
    drain_copier(h, outs)
    r = h.check(tmp_path)
    assert r.valid is True, found(r)


# -- bad input ----------------------------------------------------------------------------


def good_txn() -> TH:
    h = TH()
    copier_input(h, 1)
    h.begin(4, "x", "copier", ("out", "o-0"), consumed=[("in", 0, 0, "in-0")],
            group="g", positions=[("in", 0, 1)], copies={"o-0": "in-0"})  # fmt: skip
    h.end(4, "x", "ok", ("out", 0, 0, "o-0"))
    h.assign_iso(5, RC, ("out", 0))
    h.drain_tp("in", 0, [(0, "in-0")], 1)
    h.drain_tp("out", 0, [(0, "o-0")], 2)
    return h


def test_the_bad_input_base_is_valid(tmp_path: Path) -> None:
    assert good_txn().check(tmp_path).valid is True


def _line(h: TH, f: str, typ: str) -> int:
    return next(i for i, e in enumerate(h.events) if e["f"] == f and e["type"] == typ)


@pytest.mark.parametrize(
    ("f", "typ", "change", "field", "words"),
    [
        ("txn", "invoke", {"sends": []}, "sends", "without sends"),
        ("txn", "invoke", {"sends": None}, "sends", "expected a list"),
        ("txn", "invoke", {"txn": None}, "txn", "expected"),
        ("txn", "invoke", {"transactional_id": 5}, "transactional_id", "expected a string"),
        ("txn", "invoke", {"consumed": [{"topic": "in"}]}, "consumed.partition", "lacks"),
        (
            "txn",
            "invoke",
            {"offsets": {"group": "g", "positions": [["in", 0]]}},
            "offsets.positions",
            "next offset",
        ),  # fmt: skip
        ("txn", "ok", {"txn": "nope"}, "txn", "without an invoke"),
        ("txn", "ok", {"sends": [{"topic": "out", "value": "zz"}]}, "sends", "not one of"),
        (
            "txn",
            "ok",
            {"sends": [{"value": "o-0", "partition": 0, "offset": -5}]},
            "sends.offset",
            "offset",
        ),  # fmt: skip
        ("txn-init", "ok", {"transactional_id": None}, "transactional_id", "expected"),
        ("assign", "ok", {"isolation": "snapshot"}, "isolation", "unknown isolation"),
        ("drain-end", "ok", {"isolation": "READ_COMMITTED"}, "isolation", "unknown isolation"),
        ("drain-end", "ok", {"last_stable_offset": 9}, "last_stable_offset", "above"),
    ],
)
def test_bad_transactional_input_names_file_line_and_field(
    tmp_path: Path, f: str, typ: str, change: dict, field: str, words: str
) -> None:
    h = good_txn()
    at = _line(h, f, typ)
    h.events[at].update(change)
    path = h.write(tmp_path / "history.jsonl")
    with pytest.raises(HistoryError) as err:
        check_history(path)
    e = err.value
    assert e.exit_code == 3 and e.line == at + 1 and e.field == field, str(e)
    assert str(e).startswith(f"{path}:{at + 1}: ") and words in str(e)


def test_copy_of_a_value_never_consumed_is_bad_input(tmp_path: Path) -> None:
    h = good_txn()
    at = _line(h, "txn", "invoke")
    h.events[at]["sends"][0]["copy_of"] = "never-read"
    path = h.write(tmp_path / "history.jsonl")
    with pytest.raises(HistoryError) as err:
        check_history(path)
    assert err.value.line == at + 1 and err.value.field == "sends.copy_of"


def test_a_value_in_two_transactions_is_bad_input(tmp_path: Path) -> None:
    h = good_txn()
    h.begin(4, "y", "copier", ("out", "o-0"))
    path = h.write(tmp_path / "history.jsonl")
    with pytest.raises(HistoryError) as err:
        check_history(path)
    assert err.value.line == len(h.events) and err.value.field == "sends.value"


def test_kchaos_check_exits_3_on_a_txn_completion_without_invoke(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kchaos.cli.main import main

    h = good_txn()
    h.end(4, "ghost", "ok")
    h.write(tmp_path / "history.jsonl")
    with pytest.raises(SystemExit) as done:
        main(["check", str(tmp_path)])
    assert done.value.code == 3
    err = capsys.readouterr().err
    assert f"history.jsonl:{len(h.events)}" in err and "txn" in err and "Traceback" not in err


# -- the last stable offset and the drain's isolation ------------------------------------


def test_near_miss_values_above_a_stuck_stable_offset_are_unseen_not_lost(
    tmp_path: Path,
) -> None:
    h = TH()
    committed_pair(h)  # a-0 at t/0 offset 0, a-1 at u/0 offset 0
    h.begin(1, "x2", "tid-a", ("t", "a-2"))
    h.end(1, "x2", "ok", ("t", 0, 2, "a-2"))
    h.send("plain", 0, 4)
    h.assign_iso(6, RU, ("t", 0))
    h.poll_at(6, ("t", 0, 0, "a-0"), ("t", 0, 2, "a-2"))  # read_uncommitted: past the LSO
    h.wait(5)  # the drain waited less than the transaction timeout
    h.drain_tp("t", 0, [(0, "a-0")], 6, stable=1)
    h.drain_tp("u", 0, [(0, "a-1")], 2)
    r = h.check(tmp_path)
    assert found(r) == {"unseen": 1}  # plain at 4: nobody saw it; a-2 was seen
    assert r.anomalies["unseen"].examples[0]["value"] == "plain"
    assert r.stats["transactions"]["hanging_partitions"] == [
        {"topic": "t", "partition": 0, "last_stable_offset": 1, "judged": False}
    ]


def test_an_acknowledged_offset_at_or_above_the_watermark_stays_lost_with_an_lso(
    tmp_path: Path,
) -> None:
    h = TH()
    committed_pair(h)
    h.drain_tp("t", 0, [], 0, stable=0)  # the log ends before a-0's offset
    h.drain_tp("u", 0, [(0, "a-1")], 2)
    r = h.check(tmp_path)
    assert found(r) == {"lost-write": 1, "torn-transaction": 1}


def test_a_drain_end_without_isolation_reads_committed_in_a_transactional_run(
    tmp_path: Path,
) -> None:
    h = TH()
    aborted(h)
    h.drain((0, 0, "b-0"), (0, 1, "b-1"))  # H's drain lines and drain-end: no isolation
    h.drain_end(0, 3)
    r = h.check(tmp_path)
    assert found(r) == {"aborted-read": 2}


def test_near_miss_a_drain_that_says_read_uncommitted_may_hold_aborted_values(
    tmp_path: Path,
) -> None:
    h = TH()
    aborted(h)
    h.drain_tp("t", 0, [(0, "b-0"), (1, "b-1")], 3, isolation=RU)
    r = h.check(tmp_path)
    assert r.valid is True, found(r)
    assert any("read_uncommitted" in w for w in r.warnings)


def test_the_console_summary_counts_transactions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kchaos.cli.main import main

    h = TH()
    committed_pair(h)
    h.drain_tp("t", 0, [(0, "a-0")], 2)
    h.drain_tp("u", 0, [(0, "a-1")], 2)
    h.write(tmp_path / "history.jsonl")
    with pytest.raises(SystemExit) as done:
        main(["check", str(tmp_path)])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("VALID") and "transactions: ok 1, fail 0, info 0; 2 values" in out
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["stats"]["transactions"]["values"]["ok"] == 2


@pytest.mark.parametrize(
    ("run_json", "timeout"),
    [
        ({}, 60_000),
        ({"workload": {"producer": {"transaction_timeout_ms": 9000}}}, 9000),
        ({"scenario": {"producer": {"transaction.timeout.ms": "15000"}}}, 15000),
    ],
)
def test_the_transaction_timeout_keys(run_json: dict, timeout: int) -> None:
    assert RunSettings.from_run_json(run_json).transaction_timeout_ms == timeout


def test_a_transaction_timeout_that_is_not_a_positive_integer_is_bad_input() -> None:
    with pytest.raises(HistoryError) as err:
        RunSettings.from_run_json({"producer": {"transaction.timeout.ms": "soon"}})
    assert err.value.exit_code == 3 and err.value.field == "producer.transaction.timeout.ms"


def test_a_transaction_value_read_at_two_offsets_is_a_duplicate_naming_it(
    tmp_path: Path,
) -> None:
    h = TH()
    committed_pair(h)
    h.drain_tp("t", 0, [(0, "a-0"), (1, "a-0")], 2)
    h.drain_tp("u", 0, [(0, "a-1")], 2)
    r = h.check(tmp_path)
    assert found(r) == {"duplicate": 1}
    ex = r.anomalies["duplicate"].examples[0]
    assert (ex["value"], ex["txn"], ex["transactional_id"]) == ("a-0", "t4-1", "tid-a")
    lines = {h.events[i]["f"] for i in ex["index"]}
    assert {"txn", "drain"} <= lines  # the txn lines that name the value, found by value


def test_the_format_documents_own_example_lines_are_read_and_judged(tmp_path: Path) -> None:
    """The lines of history-format.md's version 1.2 section, in one history."""
    lines = [
        '{"index":1,"time":100,"process":0,"type":"invoke","f":"send","topic":"in","key":"k","value":"1-5"}',
        '{"index":2,"time":200,"process":0,"type":"ok","f":"send","topic":"in","partition":0,"offset":5,"value":"1-5"}',
        '{"index":40,"time":900,"process":4,"type":"invoke","f":"txn-init","transactional_id":"kchaos-t4"}',
        '{"index":41,"time":950,"process":4,"type":"ok","f":"txn-init","transactional_id":"kchaos-t4","producer_id":7001,"producer_epoch":3}',
        '{"index":50,"time":1000,"process":4,"type":"invoke","f":"txn","txn":"4-12","transactional_id":"kchaos-t4","sends":[{"topic":"t","key":"k1","value":"4-12-0"},{"topic":"u","key":"k9","value":"4-12-1"}]}',
        '{"index":58,"time":1400,"process":4,"type":"ok","f":"txn","txn":"4-12","sends":[{"topic":"t","partition":0,"offset":77,"value":"4-12-0"},{"topic":"u","partition":2,"offset":30,"value":"4-12-1"}]}',
        '{"index":60,"time":1500,"process":4,"type":"invoke","f":"txn","txn":"4-13","transactional_id":"kchaos-t4","consumed":[{"topic":"in","partition":0,"offset":5,"value":"1-5"}],"offsets":{"group":"copier","positions":[["in",0,6]]},"sends":[{"topic":"out","key":"k5","value":"4-13-0","copy_of":"1-5"}]}',
        '{"index":61,"time":1600,"process":4,"type":"ok","f":"txn","txn":"4-13"}',
        '{"index":70,"time":1700,"process":7,"type":"ok","f":"assign","partitions":[["t",0]],"isolation":"read_committed"}',
        '{"index":71,"time":1800,"process":7,"type":"invoke","f":"poll"}',
        '{"index":72,"time":1900,"process":7,"type":"ok","f":"poll","records":[{"topic":"t","partition":0,"offset":77,"value":"4-12-0"}]}',
        '{"index":900,"time":80000,"process":"drain","type":"ok","f":"drain","records":[{"topic":"t","partition":0,"offset":77,"value":"4-12-0"},{"topic":"u","partition":2,"offset":30,"value":"4-12-1"},{"topic":"in","partition":0,"offset":5,"value":"1-5"},{"topic":"out","partition":0,"offset":0,"value":"4-13-0"}]}',
        '{"index":950,"time":81000,"process":"drain","type":"ok","f":"drain-end","topic":"t","partition":0,"log_start_offset":77,"high_watermark":79,"isolation":"read_committed","last_stable_offset":79}',
        '{"index":951,"time":81000,"process":"drain","type":"ok","f":"drain-end","topic":"u","partition":2,"log_start_offset":30,"high_watermark":32,"isolation":"read_committed","last_stable_offset":32}',
        '{"index":952,"time":81000,"process":"drain","type":"ok","f":"drain-end","topic":"in","partition":0,"log_start_offset":5,"high_watermark":6,"isolation":"read_committed","last_stable_offset":6}',
        '{"index":953,"time":81000,"process":"drain","type":"ok","f":"drain-end","topic":"out","partition":0,"log_start_offset":0,"high_watermark":2,"isolation":"read_committed","last_stable_offset":2}',
    ]
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(lines) + "\n")
    r = check_history(path)
    assert r.valid is True, found(r)
    s = r.stats["transactions"]
    assert (s["ok"], s["inits"], s["values"]["ok"]) == (2, 1, 3)
    assert s["eos"] == {"inputs_judged": 1, "inputs_unjudged": 0}
    # the same history with the copy missing from the output's drain: eos-lost and lost
    lines[11] = lines[11].replace(',{"topic":"out","partition":0,"offset":0,"value":"4-13-0"}', "")
    path.write_text("\n".join(lines) + "\n")
    assert found(check_history(path)) == {"eos-lost": 1, "lost-write": 1}


# -- min_ok_sends (SRE validation's "something was acknowledged") -------------------------


def test_committed_transaction_values_count_as_acknowledged_for_min_ok_sends(
    tmp_path: Path,
) -> None:
    """A run of transactional producers only has no plain send: its committed values
    are what it acknowledged; an aborted transaction's values are not."""
    h = TH()
    committed_pair(h)
    h.begin(1, "t4-2", "tid-a", ("t", "b-0"))
    h.end(1, "t4-2", "fail")
    h.drain_tp("t", 0, [(0, "a-0")], 4)
    h.drain_tp("u", 0, [(0, "a-1")], 2)
    for threshold, valid in ((2, True), (3, False)):
        r = h.check(tmp_path, RunSettings(min_ok_sends=threshold))
        slo = r.stats["availability"]["slo"]["min_ok_sends"]
        assert (slo["observed"], slo["pass"], r.valid) == (2, valid, valid)
