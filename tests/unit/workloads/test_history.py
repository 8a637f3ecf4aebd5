from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import orjson
import pytest

from harness.errors import HistoryError
from workloads.history import HistoryWriter, ListSink, NullSink, read_history


def test_append_adds_index_and_monotonic_time(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    with HistoryWriter(path) as writer:
        first = writer.append({"process": 1, "type": "invoke", "f": "send", "value": "1-0"})
        second = writer.append({"process": 1, "type": "ok", "f": "send", "value": "1-0"})
    assert (first["index"], second["index"]) == (0, 1)
    assert 0 <= first["time"] <= second["time"]
    lines = path.read_bytes().splitlines()
    assert [orjson.loads(line) for line in lines] == [first, second]
    assert list(orjson.loads(lines[0]))[:2] == ["index", "time"]


def test_event_fields_cannot_override_index_or_time(tmp_path: Path) -> None:
    with HistoryWriter(tmp_path / "h.jsonl") as writer:
        stored = writer.append({"index": 99, "time": -5, "process": "nemesis"})
    assert stored["index"] == 0 and stored["time"] >= 0


def test_many_threads_give_strictly_increasing_index_and_ordered_time(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    with HistoryWriter(path) as writer:

        def work(p: int) -> None:
            for i in range(2000):
                writer.append({"process": p, "type": "invoke", "f": "send", "value": f"{p}-{i}"})

        threads = [threading.Thread(target=work, args=(p,)) for p in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    events, torn = read_history(path)
    assert not torn
    assert [e["index"] for e in events] == list(range(16000))
    times = [e["time"] for e in events]
    assert times == sorted(times)
    assert len({e["value"] for e in events}) == 16000


def test_lines_reach_the_file_within_100ms_without_close(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    writer = HistoryWriter(path)
    try:
        writer.append({"process": 1, "type": "invoke", "f": "poll"})
        time.sleep(0.15)
        assert path.read_bytes().count(b"\n") == 1
    finally:
        writer.close()


def test_close_is_idempotent_and_append_after_close_is_an_error(tmp_path: Path) -> None:
    writer = HistoryWriter(tmp_path / "h.jsonl")
    writer.close()
    writer.close()
    with pytest.raises(HistoryError):
        writer.append({"process": 1})


def test_read_history_drops_a_torn_last_line_only(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(b'{"index":0,"time":1}\n{"index":1,"ti')
    events, torn = read_history(path)
    assert torn and events == [{"index": 0, "time": 1}]
    path.write_bytes(b'{"index":0,"time":1}\n{"index":1,"ti\n{"index":2,"time":3}\n')
    with pytest.raises(HistoryError) as err:
        read_history(path)
    assert ":2" in str(err.value)


def test_fake_sinks_number_like_the_writer() -> None:
    sink = ListSink()
    sink.append({"a": 1})
    sink.append({"a": 2})
    assert [e["index"] for e in sink.events] == [0, 1]
    null = NullSink()
    null.append({"a": 1})
    assert null.count == 1


WRITER_SCRIPT = textwrap.dedent(
    """
    import sys, threading
    from workloads.history import HistoryWriter
    w = HistoryWriter(sys.argv[1])
    def work(p):
        i = 0
        while True:
            w.append({"process": p, "type": "invoke", "f": "send", "value": f"{p}-{i}",
                      "pad": "x" * (i % 300)})
            i += 1
    for p in range(4):
        threading.Thread(target=work, args=(p,), daemon=True).start()
    print("started", flush=True)
    threading.Event().wait()
    """
)


def test_sigkill_leaves_every_complete_line_readable(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER_SCRIPT, str(path)],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[3],
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"started"
        time.sleep(1.0)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    events, _torn = read_history(path)
    assert len(events) > 1000
    assert [e["index"] for e in events] == list(range(len(events)))
    times = [e["time"] for e in events]
    assert times == sorted(times)


def test_an_existing_history_is_never_appended_to(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('{"index":0}\n')
    with pytest.raises(HistoryError, match="not empty"):
        HistoryWriter(path)
    assert path.read_text() == '{"index":0}\n'
