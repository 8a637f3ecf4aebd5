"""The transactional workers' lines (format 1.2, and 1.3's ``txn-end`` and
``transaction_version``) for each way a transaction can end, with a scripted fake client:
commit, planned abort, abortable / retriable / fatal errors, fencing, a refused begin,
and the copier's consumed offsets and rewind."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from workload_fakes import FakeConsumer

from kchaos.harness.checker import check_history
from kchaos.harness.errors import ConfigError, TxnError
from kchaos.harness.rundir.history_writer import ListSink
from kchaos.workloads.clients import SendCallback, SendResult
from kchaos.workloads.spec import KEEP_GOING, REINIT, AfterUnfinishedCommit, CopierSpec, TxnSpec
from kchaos.workloads.txn import TxnCopier, TxnProducer
from kchaos.workloads.values import payload

TID = "kchaos-t-7"


class FakeTxnClient:
    """Delivers every send at once (partition 0, offsets counting up); ``script`` maps a
    method name to the errors its next calls raise (None: succeed)."""

    transaction_version = 1

    def __init__(self, on_done: SendCallback, script: dict[str, list[TxnError | None]],
                 pid: tuple[int | None, int | None]) -> None:  # fmt: skip
        self.on_done = on_done
        self.script = script
        self.pid = pid
        self.calls: list[str] = []
        self.offset = 100
        self.offsets_sent: list[Sequence[tuple[str, int, int]]] = []
        self.closed = False
        self.events: list[dict[str, Any]] | None = None  # the sink's lines, to look back at
        self.last_line_at_call: list[tuple[str, dict[str, Any]]] = []

    def _step(self, name: str) -> None:
        self.calls.append(name)
        if self.events is not None and name in ("commit", "abort"):
            self.last_line_at_call.append((name, dict(self.events[-1])))
        queue = self.script.get(name)
        if queue:
            error = queue.pop(0)
            if error is not None:
                raise error

    def init(self, timeout: float) -> tuple[int | None, int | None]:
        self._step("init")
        return self.pid

    def begin(self) -> None:
        self._step("begin")

    def send(self, topic: str, key: bytes | None, data: bytes, value: str) -> None:
        self._step("send")
        self.on_done(value, SendResult(partition=0, offset=self.offset))
        self.offset += 1

    def flush(self, timeout: float) -> int:
        self._step("flush")
        return 0

    def send_offsets(
        self, offsets: Sequence[tuple[str, int, int]], group_metadata: object, timeout: float
    ) -> None:
        self._step("send_offsets")
        self.offsets_sent.append(list(offsets))

    def commit(self, timeout: float) -> None:
        time.sleep(0.005)  # a real commit takes a while, even when it fails
        self._step("commit")

    def abort(self, timeout: float) -> None:
        self._step("abort")

    def close(self) -> None:
        self.closed = True


class Harness:
    """A producer worker that stops after ``txns`` transactions."""

    def __init__(self, txns: int, script: dict[str, list[TxnError | None]] | None = None,
                 *, abort_ratio: float = 0.0, pid: tuple[int | None, int | None] = (42, 3),
                 max_sends: int = 3, mode: AfterUnfinishedCommit = REINIT,
                 send_interval: float = 0.0) -> None:  # fmt: skip
        self.sink = ListSink()
        self.clients: list[FakeTxnClient] = []
        self.stop = threading.Event()
        self.script = script or {}
        self.pid = pid
        spec = TxnSpec(max_sends=max_sends, abort_ratio=abort_ratio, rate=0, timeout=1.0,
                       after_unfinished_commit=mode, send_interval=send_interval)  # fmt: skip
        self.worker = TxnProducer(
            7, TID, spec, self.sink, self._factory, topics=("a", "b"), stop=self.stop
        )
        self.txns = txns
        original = self.worker.step

        def step() -> bool:
            if self.worker.counts["invoke"] >= self.txns:
                self.stop.set()
                return False
            return original()

        self.worker.step = step  # type: ignore[method-assign]

    def _factory(self, on_done: SendCallback) -> FakeTxnClient:
        client = FakeTxnClient(on_done, self.script, self.pid)
        client.events = self.sink.events
        self.clients.append(client)
        return client

    def run(self) -> list[dict[str, Any]]:
        self.worker.run()
        return self.sink.events


def lines(events: list[dict[str, Any]], f: str, kind: str | None = None) -> list[dict[str, Any]]:
    return [e for e in events if e["f"] == f and (kind is None or e["type"] == kind)]


def test_committed_transactions_record_init_sends_and_offsets() -> None:
    h = Harness(5)
    events = h.run()
    init = lines(events, "txn-init")
    assert [e["type"] for e in init] == ["invoke", "ok"]
    assert init[1] == {**init[1], "process": 7, "transactional_id": TID, "producer_id": 42,
                       "producer_epoch": 3}  # fmt: skip
    invokes, oks = lines(events, "txn", "invoke"), lines(events, "txn", "ok")
    assert [e["txn"] for e in invokes] == [f"7-{n}" for n in range(5)]
    assert [e["txn"] for e in oks] == [e["txn"] for e in invokes]
    values = [s["value"] for e in invokes for s in e["sends"]]
    assert len(values) == len(set(values))  # unique in the run
    for inv, ok in zip(invokes, oks, strict=True):
        assert inv["transactional_id"] == TID and 1 <= len(inv["sends"]) <= 3
        assert all(s["topic"] in ("a", "b") and s["key"].startswith("k") for s in inv["sends"])
        assert [s["value"] for s in ok["sends"]] == [s["value"] for s in inv["sends"]]
        assert all(s["partition"] == 0 and s["offset"] >= 100 for s in ok["sends"])
    assert h.worker.counts == {"invoke": 5, "ok": 5, "fail": 0, "info": 0}
    assert h.clients[0].closed


def test_init_without_a_reported_producer_id_omits_it() -> None:
    h = Harness(1)
    h.pid = (None, None)
    ok = lines(h.run(), "txn-init", "ok")[0]
    assert "producer_id" not in ok and "producer_epoch" not in ok


def test_planned_aborts_are_fail_after_abort_returned() -> None:
    h = Harness(4, abort_ratio=1.0)
    events = h.run()
    fails = lines(events, "txn", "fail")
    assert len(fails) == 4 and all(e["aborted"] == "planned" for e in fails)
    assert not lines(events, "txn", "ok")
    assert h.clients[0].calls.count("abort") == 4 and "commit" not in h.clients[0].calls


def test_an_abortable_commit_error_aborts_and_is_fail() -> None:
    h = Harness(2, {"commit": [TxnError("NOT_ENOUGH_REPLICAS", abortable=True)]})
    events = h.run()
    first, second = [e for e in lines(events, "txn") if e["type"] != "invoke"]
    assert first["type"] == "fail" and first["aborted"] == "error"
    assert first["error"] == "NOT_ENOUGH_REPLICAS"
    assert second["type"] == "ok"


def test_a_retriable_commit_error_is_retried_then_ok() -> None:
    h = Harness(1, {"commit": [TxnError("COORDINATOR_LOAD_IN_PROGRESS", retriable=True)]})
    events = h.run()
    assert [e["type"] for e in lines(events, "txn")] == ["invoke", "ok"]
    assert h.clients[0].calls.count("commit") == 2


def test_a_commit_that_stays_timed_out_is_info_and_the_same_id_is_initialised_again() -> None:
    timed_out = [TxnError("TIMED_OUT", retriable=True) for _ in range(100_000)]
    h = Harness(1, {"commit": timed_out})
    events = h.run()
    first = [e for e in lines(events, "txn") if e["txn"] == "7-0"]
    assert [e["type"] for e in first] == ["invoke", "info"] and first[1]["error"] == "TIMED_OUT"
    inits = lines(events, "txn-init", "ok")
    assert len(inits) == 2 and {e["transactional_id"] for e in inits} == {TID}
    assert len(h.clients) == 2 and h.clients[0].closed
    assert h.clients[0].calls.count("commit") > 1  # retried within its budget first


def test_a_fatal_send_error_is_info_and_restarts_the_client() -> None:
    h = Harness(2, {"send": [TxnError("FATAL", fatal=True)]})
    events = h.run()
    first_end = [e for e in lines(events, "txn") if e["type"] != "invoke"][0]
    assert first_end["type"] == "info" and first_end["error"] == "FATAL"
    assert len(lines(events, "txn-init", "ok")) == 2
    # the new client goes on numbering: no value is ever sent twice
    assert [e["txn"] for e in lines(events, "txn", "invoke")] == ["7-0", "7-1"]
    assert lines(events, "txn", "ok")[0]["txn"] == "7-1"


def test_a_fenced_producer_records_info_and_stops_for_good() -> None:
    h = Harness(5, {"commit": [None, TxnError("PRODUCER_FENCED", fatal=True)]})
    events = h.run()
    ends = [e for e in lines(events, "txn") if e["type"] != "invoke"]
    assert [e["type"] for e in ends] == ["ok", "info"] and ends[1]["error"] == "PRODUCER_FENCED"
    assert h.worker.fenced
    assert len(lines(events, "txn-init")) == 2  # one invoke, one ok: never initialised again
    assert len(lines(events, "txn", "invoke")) == 2


@pytest.mark.parametrize(
    "script",
    [
        {"flush": [TxnError("PRODUCER_FENCED", fatal=True)]},  # fenced while sending
        {"flush": [TxnError("INVALID_PRODUCER_EPOCH", abortable=True)]},
        # a send error to abort for, and the abort refused (librdkafka's _FENCED)
        {"flush": [TxnError("NOT_ENOUGH_REPLICAS", abortable=True)],
         "abort": [TxnError("FENCED", fatal=True)]},
    ],
)  # fmt: skip
def test_fenced_before_its_commit_the_transaction_is_fail_and_the_worker_stops(
    script: dict[str, list[TxnError | None]],
) -> None:
    h = Harness(3, script)
    events = h.run()
    ends = [e for e in lines(events, "txn") if e["type"] != "invoke"]
    assert len(ends) == 1 and ends[0]["type"] == "fail"  # never asked to commit: aborted
    assert ends[0]["aborted"] == "fenced" and ends[0]["error"] in {
        "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "FENCED"
    }  # fmt: skip
    assert h.worker.fenced and "commit" not in h.clients[0].calls
    assert h.worker.counts["fail"] == 1 and h.worker.counts["info"] == 0


def test_a_fatal_error_while_sending_stays_info() -> None:
    h = Harness(1, {"flush": [TxnError("FATAL", fatal=True)]})
    ends = [e for e in lines(h.run(), "txn") if e["type"] != "invoke"]
    assert [(e["type"], e["error"]) for e in ends] == [("info", "FATAL")]


def test_a_refused_begin_is_fail_without_sends() -> None:
    h = Harness(2, {"begin": [TxnError("STATE", "not ready")]})
    events = h.run()
    first_end = [e for e in lines(events, "txn") if e["type"] != "invoke"][0]
    assert first_end["type"] == "fail" and first_end["error"] == "STATE"
    assert h.clients[0].calls[:3] == ["init", "begin", "begin"]  # nothing sent for it


def test_a_failed_abort_is_info() -> None:
    h = Harness(1, {"abort": [TxnError("TIMED_OUT", retriable=True)]}, abort_ratio=1.0)
    events = h.run()
    end = [e for e in lines(events, "txn") if e["type"] != "invoke"][0]
    assert end["type"] == "info" and end["error"] == "TIMED_OUT"


def test_init_failures_are_info_and_retried() -> None:
    h = Harness(1, {"init": [TxnError("COORDINATOR_NOT_AVAILABLE", retriable=True)]})
    events = h.run()
    assert [e["type"] for e in lines(events, "txn-init")] == ["invoke", "info", "invoke", "ok"]
    assert lines(events, "txn-init", "info")[0]["error"] == "COORDINATOR_NOT_AVAILABLE"


# ------------------------------------------------------------------------------ copier
def _copier(script: dict[str, list[TxnError | None]], abort_ratio: float) -> tuple[
    TxnCopier, FakeConsumer, ListSink, list[FakeTxnClient]
]:  # fmt: skip
    logs = {("in", 0): [(i, payload(f"1-{i}", 8)) for i in range(5)],
            ("in", 1): [(i, payload(f"2-{i}", 8)) for i in range(3)]}  # fmt: skip
    consumer = FakeConsumer(logs)
    consumer.group_metadata = lambda: "meta"  # type: ignore[attr-defined]
    sink, clients = ListSink(), []

    def factory(on_done: SendCallback) -> FakeTxnClient:
        clients.append(FakeTxnClient(on_done, script, (5, 0)))
        return clients[-1]

    spec = TxnSpec(abort_ratio=abort_ratio, timeout=1.0,
                   copier=CopierSpec("in", "out", group="cg", max_batch=4))  # fmt: skip
    copier = TxnCopier(9, "kchaos-t-9", spec, sink, factory, consumer_factory=lambda: consumer)
    return copier, consumer, sink, clients


def test_the_copier_sends_copies_and_commits_the_consumed_offsets() -> None:
    copier, consumer, sink, clients = _copier({}, 0.0)
    copier._client = copier._connect()
    while copier.step() and len(lines(sink.events, "txn", "ok")) < 2:
        pass
    first = lines(sink.events, "txn", "invoke")[0]
    assert [c["value"] for c in first["consumed"]] == ["1-0", "1-1", "1-2", "1-3"]
    assert first["offsets"] == {"group": "cg", "positions": [["in", 0, 4]]}
    assert [s["copy_of"] for s in first["sends"]] == ["1-0", "1-1", "1-2", "1-3"]
    assert all(s["topic"] == "out" for s in first["sends"])
    assert clients[0].offsets_sent[0] == [("in", 0, 4)]
    copies = [s["copy_of"] for e in lines(sink.events, "txn", "invoke") for s in e["sends"]]
    assert copies == ["1-0", "1-1", "1-2", "1-3", "1-4", "2-0", "2-1", "2-2"]


def test_an_aborted_copy_is_read_again() -> None:
    copier, consumer, sink, _ = _copier({"commit": [TxnError("X", abortable=True)]}, 0.0)
    copier._client = copier._connect()
    copier.step()
    copier.step()
    inv = lines(sink.events, "txn", "invoke")
    assert lines(sink.events, "txn", "fail")[0]["txn"] == inv[0]["txn"]
    assert [c["offset"] for c in inv[1]["consumed"]] == [0, 1, 2, 3]  # the same input again
    assert lines(sink.events, "txn", "ok")[0]["txn"] == inv[1]["txn"]


def test_a_copier_needs_its_spec() -> None:
    with pytest.raises(ValueError, match="copier"):
        TxnCopier(1, "t", TxnSpec(), ListSink(), lambda d: None,  # type: ignore[arg-type,return-value]
                  consumer_factory=lambda: None)  # type: ignore[arg-type,return-value]  # fmt: skip


# ------------------------------------------------------------- format 1.3: txn-end, version
def _ends_of(events: list[dict[str, Any]], txn: str) -> list[str]:
    """The ``action`` of each txn-end line of ``txn``, in order."""
    return [e["action"] for e in lines(events, "txn-end") if e["txn"] == txn]


def test_a_txn_end_commit_line_comes_right_before_the_commit_call() -> None:
    h = Harness(3)
    events = h.run()
    for inv in lines(events, "txn", "invoke"):
        mine = [e for e in events if e.get("txn") == inv["txn"]]
        assert [(e["type"], e["f"]) for e in mine] == [
            ("invoke", "txn"), ("invoke", "txn-end"), ("ok", "txn")
        ]  # fmt: skip
        assert mine[1]["action"] == "commit" and mine[1]["process"] == 7
        assert set(mine[1]) == {"index", "time", "process", "type", "f", "txn", "action"}
    at_call = h.clients[0].last_line_at_call
    assert [name for name, _ in at_call] == ["commit"] * 3
    assert all(line["f"] == "txn-end" and line["action"] == "commit" for _, line in at_call)


def test_a_planned_abort_is_announced_by_a_txn_end_abort_line() -> None:
    h = Harness(2, abort_ratio=1.0)
    events = h.run()
    assert [_ends_of(events, e["txn"]) for e in lines(events, "txn", "invoke")] == [
        ["abort"], ["abort"]
    ]  # fmt: skip
    at_call = h.clients[0].last_line_at_call
    assert [(n, line["f"], line["action"]) for n, line in at_call] == [
        ("abort", "txn-end", "abort")
    ] * 2


def test_an_abortable_commit_error_gives_a_commit_then_an_abort_txn_end() -> None:
    h = Harness(1, {"commit": [TxnError("NOT_ENOUGH_REPLICAS", abortable=True)]})
    events = h.run()
    assert _ends_of(events, "7-0") == ["commit", "abort"]
    ends = [e for e in events if e.get("txn") == "7-0" and e["type"] != "invoke"]
    assert [e["type"] for e in ends] == ["fail"]  # txn-end has no completion of its own


def test_a_retried_commit_is_one_txn_end_before_the_first_call() -> None:
    h = Harness(1, {"commit": [TxnError("COORDINATOR_LOAD_IN_PROGRESS", retriable=True)]})
    events = h.run()
    assert h.clients[0].calls.count("commit") == 2
    assert _ends_of(events, "7-0") == ["commit"]


@pytest.mark.parametrize(
    "script",
    [
        {"begin": [TxnError("STATE", "not ready")]},  # never begun
        {"flush": [TxnError("PRODUCER_FENCED", fatal=True)]},  # fenced: neither called
        {"flush": [TxnError("FATAL", fatal=True)]},
    ],
)  # fmt: skip
def test_no_txn_end_where_neither_commit_nor_abort_is_called(
    script: dict[str, list[TxnError | None]],
) -> None:
    h = Harness(1, script)
    events = h.run()
    assert "commit" not in h.clients[0].calls and "abort" not in h.clients[0].calls
    assert lines(events, "txn-end") == []


def test_an_ok_init_states_transaction_version_1_and_a_failed_one_none() -> None:
    h = Harness(1, {"init": [TxnError("COORDINATOR_NOT_AVAILABLE", retriable=True)]})
    events = h.run()
    assert [e["transaction_version"] for e in lines(events, "txn-init", "ok")] == [1]
    assert all("transaction_version" not in e for e in lines(events, "txn-init", "info"))


def test_librdkafka_speaks_transaction_version_1() -> None:
    from kchaos.workloads.confluent_txn import ConfluentTxnProducer

    assert ConfluentTxnProducer.transaction_version == 1


def test_the_copier_announces_its_commits_and_aborts_too() -> None:
    copier, _, sink, clients = _copier({"commit": [TxnError("X", abortable=True)]}, 0.0)
    copier._client = copier._connect()
    clients[0].events = sink.events
    copier.step()
    copier.step()
    first, second = [e["txn"] for e in lines(sink.events, "txn", "invoke")]
    assert _ends_of(sink.events, first) == ["commit", "abort"]
    assert _ends_of(sink.events, second) == ["commit"]
    assert [n for n, line in clients[0].last_line_at_call if line["f"] == "txn-end"] == [
        "commit", "abort", "commit"
    ]  # fmt: skip


def test_the_workers_lines_are_read_by_the_checker(tmp_path: Path) -> None:
    """A worker's history (commits, aborts, a fenced restart) is format 1.3 the checker
    reads: no bad input, no zombie-commit for a producer's own commits."""
    h = Harness(6, {"commit": [None, TxnError("X", abortable=True), None,
                               TxnError("TIMED_OUT", retriable=False)]},
                abort_ratio=0.3)  # fmt: skip
    events = h.run()
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    results = check_history(path)
    assert "zombie-commit" not in results.anomalies
    assert results.stats["transactions"]["inits"] == len(lines(events, "txn-init", "ok"))


# ------------------------------------------- after an unfinished commit: reinit, keep-going
def unfinished(**more: list[TxnError | None]) -> dict[str, list[TxnError | None]]:
    """A script whose first commit does not finish (TIMED_OUT, neither retriable nor
    abortable: ``info`` at once); a new one each time, as the fake uses its lists up."""
    return {"commit": [TxnError("TIMED_OUT")], **more}


def _mine(events: list[dict[str, Any]], txn: str) -> list[tuple[str, str, str | None]]:
    """(type, f, action) of every line of ``txn``, in order."""
    return [(e["type"], e["f"], e.get("action")) for e in events if e.get("txn") == txn]


def test_keep_going_aborts_on_the_same_client_and_begins_the_next_transaction() -> None:
    h = Harness(2, unfinished(), mode=KEEP_GOING)
    events = h.run()
    assert len(h.clients) == 1  # never a second client, never a second init_transactions
    calls = [c for c in h.clients[0].calls if c not in ("send", "flush")]
    assert calls == ["init", "begin", "commit", "abort", "begin", "commit"]
    assert [e["type"] for e in lines(events, "txn-init")] == ["invoke", "ok"]
    # one completion, info with the commit's error, after the abort's txn-end
    assert _mine(events, "7-0") == [
        ("invoke", "txn", None), ("invoke", "txn-end", "commit"),
        ("invoke", "txn-end", "abort"), ("info", "txn", None),
    ]  # fmt: skip
    assert lines(events, "txn", "info")[0]["error"] == "TIMED_OUT"
    assert [e["type"] for e in lines(events, "txn") if e["txn"] == "7-1"] == ["invoke", "ok"]
    assert h.worker.counts == {"invoke": 2, "ok": 1, "fail": 0, "info": 1}


def test_keep_going_writes_each_txn_end_right_before_its_call() -> None:
    h = Harness(2, unfinished(), mode=KEEP_GOING)
    h.run()
    assert [(n, line["f"], line["txn"], line["action"])
            for n, line in h.clients[0].last_line_at_call] == [
        ("commit", "txn-end", "7-0", "commit"), ("abort", "txn-end", "7-0", "abort"),
        ("commit", "txn-end", "7-1", "commit"),
    ]  # fmt: skip


def test_reinit_makes_a_new_client_after_the_same_unfinished_commit() -> None:
    h = Harness(2, unfinished(), mode=REINIT)
    events = h.run()
    assert len(h.clients) == 2 and h.clients[0].closed
    assert "abort" not in h.clients[0].calls
    assert h.clients[1].calls[0] == "init"
    assert len(lines(events, "txn-init", "ok")) == 2
    assert _mine(events, "7-0")[-1] == ("info", "txn", None)
    assert _ends_of(events, "7-0") == ["commit"]


def test_a_spec_without_the_field_reinits() -> None:
    assert TxnSpec().after_unfinished_commit == REINIT


def test_keep_going_a_retried_commit_that_runs_out_of_time_is_aborted_too() -> None:
    """The retriable path (TIMED_OUT retried until the commit's budget is spent)."""
    h = Harness(1, {"commit": [TxnError("TIMED_OUT", retriable=True) for _ in range(100_000)]},
                mode=KEEP_GOING)  # fmt: skip
    events = h.run()
    assert h.clients[0].calls.count("commit") > 1 and h.clients[0].calls[-1] == "abort"
    assert len(h.clients) == 1 and _ends_of(events, "7-0") == ["commit", "abort"]
    assert [e["type"] for e in lines(events, "txn") if e["txn"] == "7-0"] == ["invoke", "info"]


def test_keep_going_still_reinits_after_a_fatal_commit_error() -> None:
    h = Harness(2, {"commit": [TxnError("FATAL", fatal=True)]}, mode=KEEP_GOING)
    events = h.run()
    assert len(h.clients) == 2 and h.clients[0].closed
    assert "abort" not in h.clients[0].calls  # a fatal client is not asked for anything
    assert len(lines(events, "txn-init", "ok")) == 2
    assert _mine(events, "7-0")[-1] == ("info", "txn", None)


@pytest.mark.parametrize(
    "refusal",
    [
        TxnError("FATAL", fatal=True),
        # librdkafka refuses an abort while a timed-out commit is still its current
        # (resumable) call: a retriable error, and the transaction still not ended
        TxnError("_CONFLICT", "commit_transaction still under way", retriable=True),
    ],
)
def test_keep_going_falls_back_to_reinit_when_the_abort_fails(refusal: TxnError) -> None:
    h = Harness(2, unfinished(abort=[refusal]), mode=KEEP_GOING)
    events = h.run()
    assert [c for c in h.clients[0].calls if c in ("commit", "abort")] == ["commit", "abort"]
    assert len(h.clients) == 2 and h.clients[0].closed
    assert len(lines(events, "txn-init", "ok")) == 2
    ends = [e for e in lines(events, "txn") if e["txn"] == "7-0" and e["type"] != "invoke"]
    assert [(e["type"], e["error"]) for e in ends] == [("info", "TIMED_OUT")]  # one completion
    assert lines(events, "txn", "ok")[0]["txn"] == "7-1"


def test_keep_going_stops_when_the_abort_finds_the_producer_fenced() -> None:
    h = Harness(3, unfinished(abort=[TxnError("PRODUCER_FENCED", fatal=True)]),
                mode=KEEP_GOING)  # fmt: skip
    events = h.run()
    assert h.worker.fenced and len(h.clients) == 1
    # its commit was called: the outcome stays unknown, not "aborted: fenced"
    assert [e["type"] for e in lines(events, "txn") if e["txn"] == "7-0"] == ["invoke", "info"]
    assert len(lines(events, "txn", "invoke")) == 1


def test_a_keep_going_history_is_read_by_the_checker(tmp_path: Path) -> None:
    h = Harness(4, {"commit": [None, TxnError("TIMED_OUT"), None]}, mode=KEEP_GOING)
    events = h.run()
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    results = check_history(path)
    stats = results.stats["transactions"]
    assert stats["inits"] == 1 and "zombie-commit" not in results.anomalies


def test_send_interval_spaces_a_transactions_sends() -> None:
    h = Harness(3, max_sends=3, send_interval=0.05)
    h.worker.rng.randint = lambda a, b: 3  # type: ignore[method-assign]  # three sends each
    sent_at: list[float] = []
    original = FakeTxnClient.send

    def timed(self: FakeTxnClient, *args: Any) -> None:
        sent_at.append(time.monotonic())
        original(self, *args)

    FakeTxnClient.send = timed  # type: ignore[method-assign]
    try:
        events = h.run()
    finally:
        FakeTxnClient.send = original  # type: ignore[method-assign]
    assert len(lines(events, "txn", "ok")) == 3
    gaps = [b - a for a, b in zip(sent_at, sent_at[1:], strict=False)]
    within = [gaps[0], gaps[1], gaps[3], gaps[4], gaps[6], gaps[7]]  # not across transactions
    assert all(g >= 0.045 for g in within), gaps


def test_a_stop_between_spaced_sends_aborts_the_transaction() -> None:
    h = Harness(1, max_sends=2, send_interval=5.0)
    h.worker.rng.randint = lambda a, b: 2  # type: ignore[method-assign]
    threading.Timer(0.2, h.stop.set).start()
    started = time.monotonic()
    events = h.run()
    assert time.monotonic() - started < 3
    (ended,) = lines(events, "txn", "fail")
    assert ended["error"] == "STOPPING"
    assert h.clients[0].calls.count("send") == 1 and "abort" in h.clients[0].calls


@pytest.mark.parametrize("interval", [-1.0, 0.3])
def test_send_interval_is_refused_when_negative_or_eating_the_commits_time(
    interval: float,
) -> None:
    spec = TxnSpec(max_sends=4, send_interval=interval, timeout=1.0, topics=("a",))
    with pytest.raises(ConfigError, match="send_interval"):
        spec.validate(("a",))
