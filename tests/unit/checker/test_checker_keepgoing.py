"""Histories a transactional worker writes in ``keep-going`` mode
(``workload.transactions.after_unfinished_commit``): an unfinished commit is followed by
a ``txn-end`` abort, its one ``info`` completion, and the process's next transaction on
the same producer, with no ``txn-init`` between. The checker reads them and judges the
next transaction by its own completion, so KAFKA-17754's outcomes (a delayed EndTxn of
the unfinished transaction that ends the next one) are anomalies."""

from __future__ import annotations

from pathlib import Path

import pytest
from txn_hist import TH

from kchaos.harness.checker.model import Results

TID = "kchaos-t-4"


def found(r: Results) -> dict[str, int]:
    return {k: a.count for k, a in r.anomalies.items()}


def keep_going(h: TH, next_outcome: str) -> None:
    """Process 4: transaction a's commit does not finish, the worker aborts it on the same
    producer (``info`` after the abort), then transaction b, with no new txn-init."""
    h.init(4, TID)
    h.begin(4, "4-0", TID, ("t", "4-0-0"))
    h.txn_end(4, "4-0", "commit")
    h.txn_end(4, "4-0", "abort")
    h.end(4, "4-0", "info")
    h.begin(4, "4-1", TID, ("t", "4-1-0"))
    if next_outcome == "ok":
        h.txn_end(4, "4-1", "commit")
        h.end(4, "4-1", "ok", ("t", 0, None, "4-1-0"))
    else:
        h.txn_end(4, "4-1", "abort")
        h.end(4, "4-1", "fail")


@pytest.mark.parametrize("first_committed", [False, True])
def test_an_unfinished_commit_then_the_next_transaction_ok_on_the_same_producer(
    tmp_path: Path, first_committed: bool
) -> None:
    """Either fate of the unfinished transaction is allowed (info: all or none)."""
    h = TH()
    keep_going(h, "ok")
    h.drain_tp("t", 0, [(0, "4-0-0"), (1, "4-1-0")] if first_committed else [(0, "4-1-0")], 2)
    r = h.check(tmp_path)
    assert r.valid is True, found(r)
    stats = r.stats["transactions"]
    assert (stats["ok"], stats["fail"], stats["info"], stats["inits"]) == (1, 0, 1, 1)


def test_the_next_transaction_lost_to_a_late_end_of_the_unfinished_one(tmp_path: Path) -> None:
    """KAFKA-17754's one side: b was acknowledged but its values are not in the log."""
    h = TH()
    keep_going(h, "ok")
    h.drain_tp("t", 0, [], 2)
    r = h.check(tmp_path)
    assert r.valid is False and "lost-write" in found(r)
    assert r.anomalies["lost-write"].examples[0]["value"] == "4-1-0"


def test_the_next_transaction_aborted_yet_committed_by_the_unfinished_ones_end(
    tmp_path: Path,
) -> None:
    """The other side: b was aborted, but its value is read committed."""
    h = TH()
    keep_going(h, "fail")
    h.drain_tp("t", 0, [(0, "4-1-0")], 1)
    r = h.check(tmp_path)
    assert r.valid is False and "aborted-read" in found(r)
