"""The history pass's reading of ``txn`` lines: the paths its fast loop takes (a missing
or null field, an id from the process's ``txn-init``, a value repeated within one
transaction, more values than one block of the per-value arrays), the narrow and wide
gaps a transactional reader leaves, which the ordering checker judges two ways, and the
garbage collector's pause during a check."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from checker_hist import H, counts
from txn_hist import TH

from kchaos.harness.checker import check_history
from kchaos.harness.checker.facts import FAIL, OK, TXN_OPEN
from kchaos.harness.checker.nogc import paused_gc
from kchaos.harness.checker.parse import read_history
from kchaos.harness.errors import HistoryError

RC = "read_committed"


def _error(h: TH, tmp_path: Path) -> HistoryError:
    path = h.write(tmp_path / "history.jsonl")
    with pytest.raises(HistoryError) as err:
        check_history(path)
    assert err.value.exit_code == 3 and str(err.value).startswith(f"{path}:{err.value.line}: ")
    return err.value


def test_a_null_transactional_id_is_bad_input_not_the_inits(tmp_path: Path) -> None:
    h = TH()
    h.init(1, "tid-a")
    at = h.begin(1, "x", "tid-a", ("t", "a-0"))
    h.events[at]["transactional_id"] = None  # present: not replaced by the init's id
    e = _error(h, tmp_path)
    assert (e.line, e.field) == (at + 1, "transactional_id") and "expected a string" in str(e)


def test_without_transactional_id_the_processs_init_names_it(tmp_path: Path) -> None:
    h = TH()
    h.init(1, "tid-a")
    at = h.begin(1, "x", "tid-a", ("t", "a-0"))
    del h.events[at]["transactional_id"]
    h.end(1, "x", "ok", ("t", 0, 0, "a-0"))
    h.drain_tp("t", 0, [(0, "a-0")], 2)
    r = h.check(tmp_path)
    assert r.valid is True
    assert r.stats["transactions"]["by_transactional_id"]["tid-a"]["ok"] == 1


def test_without_transactional_id_nor_init_is_bad_input(tmp_path: Path) -> None:
    h = TH()
    at = h.begin(1, "x", "tid-a", ("t", "a-0"))
    del h.events[at]["transactional_id"]
    e = _error(h, tmp_path)
    assert (e.line, e.field) == (at + 1, "transactional_id") and "no txn-init" in str(e)


@pytest.mark.parametrize(("sends", "words"), [(None, "expected a list"), ("x", "expected a list")])
def test_an_ok_line_whose_sends_are_not_a_list_is_bad_input(
    tmp_path: Path, sends: object, words: str
) -> None:
    h = TH()
    h.init(1, "tid-a")
    h.begin(1, "x", "tid-a", ("t", "a-0"))
    at = h.end(1, "x", "ok")
    h.events[at]["sends"] = sends
    e = _error(h, tmp_path)
    assert (e.line, e.field) == (at + 1, "sends") and words in str(e)


def test_a_value_twice_in_one_transaction_is_bad_input(tmp_path: Path) -> None:
    h = TH()
    h.init(1, "tid-a")
    at = h.begin(1, "x", "tid-a", ("t", "a-0"), ("u", "a-0"))
    e = _error(h, tmp_path)
    assert (e.line, e.field) == (at + 1, "sends.value") and "sent twice" in str(e)


def test_a_copy_of_a_value_consumed_by_the_same_transaction_is_read(tmp_path: Path) -> None:
    h = TH()
    h.send("in-0", 0, 0)
    h.init(1, "copier")
    h.begin(1, "c", "copier", ("out", "o-0"), consumed=[("t", 0, 0, "in-0")], group="g",
            positions=[("t", 0, 1)], copies={"o-0": "in-0"})  # fmt: skip
    h.end(1, "c", "ok", ("out", 0, 0, "o-0"))
    h.drain_tp("t", 0, [(0, "in-0")], 1)
    h.drain_tp("out", 0, [(0, "o-0")], 2)
    r = h.check(tmp_path)
    assert r.valid is True, r.anomalies
    assert r.stats["transactions"]["eos"] == {"inputs_judged": 1, "inputs_unjudged": 0}


def test_transaction_values_past_the_first_block_of_rows_are_kept(tmp_path: Path) -> None:
    """More values than one block (8192) of the per-value arrays: the rows the txn invoke
    adds itself grow the arrays like any other value's."""
    h = TH()
    h.init(1, "tid-a")
    n = 9000
    h.begin(1, "big", "tid-a", *[("t", f"v{i}") for i in range(n)])
    h.end(1, "big", "ok", *[("t", 0, i, f"v{i}") for i in range(n - 1)])  # last: no offset
    h.begin(1, "small", "tid-a", ("t", "w"))
    h.end(1, "small", "fail")
    h.begin(1, "open", "tid-a", ("t", "z"))
    facts = read_history(h.write(tmp_path / "history.jsonl"))
    big = [facts.values[f"v{i}"] for i in range(n)]
    assert big == list(range(n)) and len(facts.status) == n + 2
    assert {facts.status[v] for v in big} == {OK}
    assert facts.ack_off[big[-2]] == n - 2 and facts.ack_off[big[-1]] == -1
    assert facts.status[facts.values["w"]] == FAIL
    assert facts.status[facts.values["z"]] == TXN_OPEN
    assert facts.txn.txn_of[big[-1]] == 0 and facts.txn.txn_of[facts.values["z"]] == 2


def test_a_read_committed_poll_notes_only_transaction_values(tmp_path: Path) -> None:
    h = TH()
    h.init(1, "tid-a")
    h.begin(1, "x", "tid-a", ("t", "a-0"))
    h.end(1, "x", "fail")
    h.send("p-0", 0, 2)
    h.assign_iso(5, RC, ("t", 0))
    h.poll_at(5, ("t", 0, 0, "a-0"), ("t", 0, 2, "p-0"))
    facts = read_history(h.write(tmp_path / "history.jsonl"))
    assert facts.txn.rc_read == {facts.values["a-0"]}


# -- gaps: narrow ones are looked up offset by offset, wide ones searched -----------------


def _gap_history(held: list[int], poll_to: int) -> H:
    """Partition 0 holds records at ``held``; a consumer reads offset 0, then
    ``poll_to``."""
    h = H()
    for off in held:
        h.send(f"v{off}", 0, off)
    h.poll(5, (0, 0, "v0"), (0, poll_to, f"v{poll_to}"))
    h.drain(*[(0, off, f"v{off}") for off in held])
    h.drain_end(0, held[-1] + 1)
    return h


@pytest.mark.parametrize(
    ("held", "poll_to", "skipped"),
    [
        ([0, 1, 2], 2, [1]),  # one offset jumped over, held
        ([0, 2], 2, None),  # one offset jumped over, not held (a control marker)
        ([0, 3, 4], 4, [3]),  # narrow: only the last offset before it is held
        ([0, 4], 4, None),  # narrow: nothing held in between
        ([0, 9, 20], 20, [9]),  # wide
        ([0, 20], 20, None),  # wide: nothing held in between
        ([0, 2, 3, 4, 5, 6, 7, 8, 9, 30], 30, [2, 3, 4, 5, 6]),  # wide: examples capped
    ],
)
def test_poll_skip_over_narrow_and_wide_gaps(
    tmp_path: Path, held: list[int], poll_to: int, skipped: list[int] | None
) -> None:
    r = _gap_history(held, poll_to).check(tmp_path)
    assert r.stats["ordering"]["gaps"] == 1
    if skipped is None:
        assert "poll-skip" not in counts(r)
        return
    assert counts(r) == {"poll-skip": 1}
    ex = r.anomalies["poll-skip"].examples[0]
    assert ex["skipped_offsets"] == skipped and ex["offset"] == skipped[0]
    assert ex["skipped_count"] == len([o for o in held if 0 < o < poll_to])


# -- the cyclic collector is paused during a check and restored after -----------------------


def test_paused_gc_restores_the_collector_also_on_error_and_when_nested() -> None:
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block found it paused: leaves it so
    assert gc.isenabled()
    with pytest.raises(ValueError), paused_gc():
        raise ValueError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()  # disabled by the caller before: not turned on
    finally:
        gc.enable()


def test_a_check_leaves_the_collector_enabled_after_a_verdict_and_after_bad_input(
    tmp_path: Path,
) -> None:
    h = TH()
    h.init(1, "tid-a")
    h.begin(1, "x", "tid-a", ("t", "a-0"))
    h.end(1, "x", "ok", ("t", 0, 0, "a-0"))
    h.drain_tp("t", 0, [(0, "a-0")], 2)
    assert h.check(tmp_path).valid is True and gc.isenabled()
    h.end(1, "nope", "ok")
    with pytest.raises(HistoryError):
        check_history(h.write(tmp_path / "bad.jsonl"))
    assert gc.isenabled()
