from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.history_writer import (
    HistoryWriter,
    ListSink,
    NullSink,
    json_text,
    line_template,
    read_history,
    wait_for_writer,
)
from kchaos.harness.rundir.scribe import Renderer


def test_append_adds_index_and_monotonic_time(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    with HistoryWriter(path) as writer:
        writer.append({"process": 1, "type": "invoke", "f": "send", "value": "1-0"})
        writer.append({"process": 1, "type": "ok", "f": "send", "value": "1-0"})
        writer.append({})
    first, second, empty = (orjson.loads(line) for line in path.read_bytes().splitlines())
    assert (first["index"], second["index"], empty["index"]) == (0, 1, 2)
    assert 0 <= first["time"] <= second["time"] <= empty["time"]
    assert list(first) == ["index", "time", "process", "type", "f", "value"]
    assert second["type"] == "ok" and set(empty) == {"index", "time"}


def test_event_fields_cannot_override_index_or_time(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    with HistoryWriter(path) as writer:
        writer.append({"index": 99, "time": -5, "process": "nemesis"})
    stored = orjson.loads(path.read_bytes())
    assert stored["index"] == 0 and stored["time"] >= 0 and stored["process"] == "nemesis"


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


def test_lines_reach_the_file_without_close_or_flush(
    tmp_path: Path, eventually: Callable[..., None]
) -> None:
    """The flusher hands lines over by itself. How soon (100 ms) is a timing claim, checked
    with a loaded machine's tolerance in the docker phase (tests/integration/test_timing.py)."""
    path = tmp_path / "h.jsonl"
    writer = HistoryWriter(path)
    try:
        writer.append({"process": 1, "type": "invoke", "f": "poll"})
        eventually(lambda: path.read_bytes().count(b"\n") == 1, "the line is in the file")
        assert read_history(path)[0][0]["f"] == "poll"
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
    null.record(INVOKE, 0)
    assert null.count == 2


INVOKE = line_template(
    f'"process":1,"type":"invoke","f":"send","topic":{json_text("t-1")},"value":"1-%d"'
)
OK = line_template('"process":1,"type":"ok","f":"send","partition":%d,"offset":%d,"value":"1-%d"')


def test_record_writes_the_same_lines_as_append(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    with HistoryWriter(path) as writer:
        writer.record(INVOKE, 0)
        writer.append({"process": "nemesis", "type": "info", "f": "fault", "params": {"%d": "%s"}})
        writer.record(OK, 2, 17, 0)
    events, torn = read_history(path)
    assert not torn
    assert events[0] == {"index": 0, "time": events[0]["time"], "process": 1, "type": "invoke",
                         "f": "send", "topic": "t-1", "value": "1-0"}  # fmt: skip
    assert events[1]["params"] == {"%d": "%s"}
    assert (events[2]["index"], events[2]["partition"], events[2]["offset"]) == (2, 2, 17)
    assert events[0]["time"] <= events[1]["time"] <= events[2]["time"]


def test_recorders_of_every_arity_write_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    four = line_template('"a":%d,"b":%d,"c":%d,"d":"x%d"')
    with HistoryWriter(path) as writer:
        now = time.monotonic_ns
        writer.recorder(line_template(""))(now())
        writer.recorder(INVOKE)(now(), 0)
        writer.recorder(line_template('"a":%d,"b":%d'))(now(), 1, 2)
        writer.recorder(OK)(now(), 0, 5, 0)
        writer.recorder(four)(now(), 1, 2, 3, 9)
        with pytest.raises(TypeError, match="4 fields expected"):
            writer.recorder(four)(now(), 1, 2)
        with pytest.raises(TypeError, match="3 fields expected"):
            writer.record(OK, 1)
    events, _ = read_history(path)
    assert [len(e) for e in events] == [2, 7, 4, 8, 6]
    assert events[4] == {"index": 4, "time": events[4]["time"], "a": 1, "b": 2, "c": 3, "d": "x9"}
    with pytest.raises(HistoryError, match="closed"):
        writer.recorder(INVOKE)(time.monotonic_ns(), 1)


def test_list_sink_parses_recorded_lines_like_the_file() -> None:
    sink = ListSink()
    sink.record(INVOKE, 5)
    sink.append({"process": 2})
    sink.recorder(OK)(time.monotonic_ns(), 0, 1, 5)
    assert sink.events[0]["value"] == "1-5" and sink.events[0]["topic"] == "t-1"
    assert [e["index"] for e in sink.events] == [0, 1, 2]
    assert sink.events[2]["offset"] == 1


def test_line_template_rejects_a_body_that_is_not_json() -> None:
    with pytest.raises(ValueError, match="not a history line template"):
        line_template('"process":1,"value":%d%d')  # two ints side by side: not JSON
    with pytest.raises(ValueError, match="fields are %d only"):
        line_template('"process":1,"value":"%s"')  # a string field
    assert json_text("50%") == '"50%%"'
    assert line_template(f'"topic":{json_text("50%")}').fill(0, 0, ()).endswith('"50%"}\n')
    assert (INVOKE.arity, OK.arity) == (1, 3)


def test_a_clock_reading_overtaken_by_another_thread_is_raised(tmp_path: Path) -> None:
    """A recorder that read the clock, then lost the GIL before queueing its line."""
    path = tmp_path / "h.jsonl"
    writer = HistoryWriter(path, flush_interval=3600)
    try:
        stale = time.monotonic_ns()
        writer.record(INVOKE, 0)
        writer._queue((INVOKE.text, stale - 10**6, 1, b"", b""))  # noqa: SLF001
        writer.flush()
        writer._queue((INVOKE.text, stale - 10**6, 2, b"", b""))  # noqa: SLF001
        writer.record(INVOKE, 3)
    finally:
        writer.close()
    events, _ = read_history(path)
    assert [e["value"] for e in events] == ["1-0", "1-1", "1-2", "1-3"]
    assert [e["index"] for e in events] == [0, 1, 2, 3]
    times = [e["time"] for e in events]
    assert times[0] == times[1] == times[2] <= times[3]


def test_renderer_numbers_lines_raises_stale_times_and_reports_bad_ones() -> None:
    renderer = Renderer(t0=100)
    a, b = line_template('"a":%d'), line_template('"b":%d,"c":"x%d"')
    flat = [a.text, 150, 1, b"", b"", b.text, 140, 2, 7, b""]
    assert renderer.render(flat) == (
        b'{"index":0,"time":50,"a":1}\n{"index":1,"time":50,"b":2,"c":"x7"}\n'
    )
    flat = [a.text, 160, "one", b"", b"", a.text, 170, 3, b"", b""]  # %d given a str
    assert renderer.render(flat) == b'{"index":3,"time":70,"a":3}\n'
    assert len(renderer.bad) == 1 and "index 2" in renderer.bad[0]
    assert renderer.render([a.text, 180]) == b"" and "not whole lines" in renderer.bad[1]


def test_wide_templates_and_events_travel_pre_rendered(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    wide = line_template('"a":%d,"b":%d,"c":%d,"d":%d')
    sink = ListSink()
    with HistoryWriter(path) as writer:
        for out in (writer, sink):
            out.record(wide, 1, 2, 3, 4)
            out.recorder(wide)(time.monotonic_ns(), 5, 6, 7, 8)
    events, _ = read_history(path)
    assert [e["d"] for e in events] == [4, 8] == [e["d"] for e in sink.events]


def test_unplain_fields_are_reported_at_close(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    writer = HistoryWriter(path)
    writer.record(OK, 0, 1, 0)
    writer.record(OK, 0, 2, object())
    with pytest.raises(HistoryError, match="not a plain value"):
        writer.close()
    assert read_history(path)[0][0]["value"] == "1-0"


def test_a_line_with_bad_fields_is_reported_and_the_others_kept(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    writer = HistoryWriter(path)
    writer.record(OK, 0, 1, 0)
    writer.record(OK, "zero", 1, 1)  # a %d given a string
    writer.record(OK, 0, 2, 2)
    with pytest.raises(HistoryError, match="could not be written"):
        writer.close()
    events, _ = read_history(path)
    assert [e["value"] for e in events] == ["1-0", "1-2"]


def test_record_after_close_is_an_error(tmp_path: Path) -> None:
    writer = HistoryWriter(tmp_path / "h.jsonl")
    writer.close()
    with pytest.raises(HistoryError):
        writer.record(INVOKE, 0)


WRITER_SCRIPT = textwrap.dedent(
    """
    import sys, threading
    from kchaos.harness.rundir.history_writer import HistoryWriter
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
    assert wait_for_writer(path, timeout=30)  # the orphaned scribe writes what it got
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


def test_a_scribe_that_died_makes_close_fail_loudly(tmp_path: Path) -> None:
    writer = HistoryWriter(tmp_path / "h.jsonl", flush_interval=3600)
    writer.record(INVOKE, 0)
    writer._scribe.kill()  # noqa: SLF001
    writer._scribe.wait()  # noqa: SLF001
    with pytest.raises(HistoryError, match="scribe"):
        writer.close()


def test_the_scribe_ignores_ctrl_c_and_holds_the_file_lock(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    writer = HistoryWriter(path)
    try:
        os.kill(writer._scribe.pid, signal.SIGINT)  # noqa: SLF001
        writer.record(INVOKE, 0)
        writer.flush()
        assert not wait_for_writer(path, timeout=0.2)  # still running, still locking
    finally:
        writer.close()
    assert wait_for_writer(path, timeout=1)
    assert read_history(path)[0][0]["value"] == "1-0"
