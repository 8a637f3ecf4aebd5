"""A transactional worker in a child process: its lines reach the history through the
pipe, a crash leaves its open transaction ``info`` and a new child goes on with the same
process id and the next transaction number; stop asks the child to finish."""

from __future__ import annotations

import sys
import textwrap
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from kchaos.harness.rundir.history_writer import ListSink
from kchaos.harness.rundir.rundir import RunDir
from kchaos.workloads.spec import CopierSpec, ReadersConfig, TxnSpec
from kchaos.workloads.txn_process import (
    PROCESS_EXITED,
    TxnProcessWorker,
    TxnWorkerConfig,
    make_worker,
)

# A stand-in for the child: the first run commits one transaction, invokes a second,
# writes half a line and dies; the next runs commit one and wait for "stop".
CHILD = textwrap.dedent(
    """
    import json, os, sys
    first, marker = int(sys.argv[1]), sys.argv[2]
    sys.stderr.write(f"child from {first}\\n"); sys.stderr.flush()
    def line(**e):
        sys.stdout.write(json.dumps({"process": 7, **e}) + "\\n"); sys.stdout.flush()
    line(type="invoke", f="txn-init", transactional_id="t-7")
    line(type="ok", f="txn-init", transactional_id="t-7")
    line(type="invoke", f="txn", txn=f"7-{first}", sends=[{"topic": "a", "value": f"7-{first}-0"}])
    line(type="ok", f="txn", txn=f"7-{first}", sends=[{"topic": "a", "value": f"7-{first}-0"}])
    if not os.path.exists(marker):
        open(marker, "w").close()
        line(type="invoke", f="txn", txn=f"7-{first + 1}", sends=[])
        sys.stdout.write('{"process": 7, "type": "ok", "f": "tx'); sys.stdout.flush()
        os._exit(9)
    sys.stdin.readline()
    """
)


def config() -> TxnWorkerConfig:
    spec = TxnSpec(
        producers=1,
        copier=CopierSpec("a", "b", max_batch=3),
        readers=ReadersConfig(subscribe=1, group="g"),
        configs={"x": "1"},
    )
    return TxnWorkerConfig(7, "producer", "t-7", "host:9092", spec, ("a",), first=0)


def test_config_crosses_to_the_child_unchanged() -> None:
    c = config()
    assert TxnWorkerConfig.from_json(c.to_json()) == c
    kept = replace(c, spec=replace(c.spec, after_unfinished_commit="keep-going"))
    again = TxnWorkerConfig.from_json(kept.to_json())
    assert again == kept and again.spec.after_unfinished_commit == "keep-going"


def test_the_child_worker_runs_in_the_configured_mode() -> None:
    c = config()
    kept = replace(c, spec=replace(c.spec, after_unfinished_commit="keep-going"))
    assert make_worker(kept, ListSink(), threading.Event())._keep_going
    assert not make_worker(c, ListSink(), threading.Event())._keep_going


def test_a_crashed_child_leaves_info_and_is_restarted_with_the_next_number(
    tmp_path: Path,
) -> None:
    sink = ListSink()
    marker = tmp_path / "crashed"
    worker = TxnProcessWorker(
        config(),
        sink,
        log_file=RunDir(tmp_path).txn_log(7),
        command=lambda c: [sys.executable, "-c", CHILD, str(c.first), str(marker)],
    )
    worker.start()
    end = time.monotonic() + 20
    while time.monotonic() < end and len([e for e in sink.events if e["type"] == "ok"]) < 4:
        time.sleep(0.05)
    worker.stop(10)
    events = sink.events
    txns = [(e["type"], e["txn"]) for e in events if e["f"] == "txn"]
    assert txns == [
        ("invoke", "7-0"), ("ok", "7-0"),
        ("invoke", "7-1"), ("info", "7-1"),  # the dead child's open transaction
        ("invoke", "7-2"), ("ok", "7-2"),  # the new child numbers on
    ]  # fmt: skip
    info = [e for e in events if e["type"] == "info"][0]
    assert info["error"] == PROCESS_EXITED and info["process"] == 7
    assert worker.restarts == 1
    assert [e["type"] for e in events if e["f"] == "txn-init"] == ["invoke", "ok"] * 2
    assert [e["index"] for e in events] == list(range(len(events)))
    assert worker.counts == {"invoke": 3, "ok": 2, "fail": 0, "info": 1}
    assert worker.error is None
    # both children's stderr went to the one file of process 7, where it always was
    log = (tmp_path / "logs" / "txn-7.log").read_text()
    assert log == "child from 0\nchild from 2\n"
    assert (tmp_path / "logs" / "txn-7.log").exists()


def _txn_line(typ: str) -> str:
    """Python source that prints the child's line of type ``typ`` for its transaction 7-0."""
    line = {"process": 7, "type": typ, "f": "txn", "txn": "7-0", "sends": []}
    return f"print(json.dumps({line!r}), flush=True)\n"


StartChild = Callable[[ListSink, str], TxnProcessWorker]


@pytest.fixture
def started_child(eventually: Callable[..., None]) -> StartChild:
    """``started_child(sink, rest)``: a started worker whose child invokes transaction 7-0
    and then runs ``rest`` (Python source), returned once the invoke is in ``sink``."""

    def start(sink: ListSink, rest: str) -> TxnProcessWorker:
        script = "import json, sys, time\n" + _txn_line("invoke") + rest
        worker = TxnProcessWorker(config(), sink, command=lambda c: [sys.executable, "-c", script])
        worker.start()
        eventually(lambda: bool(sink.events), "the child's first line", timeout=20)
        return worker

    return start


def test_stop_kills_a_child_that_does_not_finish(started_child: StartChild) -> None:
    sink = ListSink()
    # the child would sleep past the test's own timeout: a stop() that waited for it to
    # end rather than killing it after its 1 s fails the test by pytest-timeout
    worker = started_child(sink, "time.sleep(600)")
    worker.stop(1.0)
    assert [(e["type"], e.get("error")) for e in sink.events] == [
        ("invoke", None),
        ("info", PROCESS_EXITED),
    ]
    assert worker.restarts == 0


def test_stop_continues_a_child_a_fault_stopped(started_child: StartChild) -> None:
    import os
    import signal

    sink = ListSink()
    worker = started_child(sink, "sys.stdin.readline()\n" + _txn_line("ok"))
    assert worker.open_transactions() == ["7-0"]
    assert worker.pid is not None
    os.kill(worker.pid, signal.SIGSTOP)
    worker.stop(15.0)
    # not killed: it read "stop" once continued and finished its transaction
    assert [(e["type"], e.get("error")) for e in sink.events] == [("invoke", None), ("ok", None)]
    assert worker.open_transactions() == []


def test_a_superseded_worker_is_not_restarted(tmp_path: Path) -> None:
    sink = ListSink()
    worker = TxnProcessWorker(
        config(),
        sink,
        command=lambda c: [sys.executable, "-c", CHILD, str(c.first), str(tmp_path / "m")],
    )
    worker.supersede()  # a replacement holds "t-7": a restart would fence it
    worker.start()
    assert worker._supervisor is not None
    worker._supervisor.join(20)
    assert not worker._supervisor.is_alive() and worker.restarts == 0
    assert [e["type"] for e in sink.events if e["f"] == "txn-init"] == ["invoke", "ok"]
    assert ("info", PROCESS_EXITED) in [(e["type"], e.get("error")) for e in sink.events]
    worker.stop(5)
