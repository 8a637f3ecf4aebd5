"""Unreadable histories: a clear ``file:line: field: what`` error; a torn last line is
ignored and reported."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from checker_hist import H, good

from kchaos.harness.checker import check_history
from kchaos.harness.errors import HistoryError


def _lines(h: H) -> list[bytes]:
    return [orjson.dumps(e) for e in h.events]


def _fails(tmp_path: Path, data: bytes) -> HistoryError:
    path = tmp_path / "history.jsonl"
    path.write_bytes(data)
    with pytest.raises(HistoryError) as info:
        check_history(path)
    assert info.value.exit_code == 3
    assert str(info.value).startswith(f"{path}:")
    return info.value


def test_a_line_that_is_not_json(tmp_path: Path) -> None:
    lines = _lines(good())
    lines[1] = b'{"index": 1, "time": '
    err = _fails(tmp_path, b"\n".join(lines) + b"\n")
    assert err.line == 2 and "not JSON" in str(err)


def test_a_json_value_that_is_not_an_object(tmp_path: Path) -> None:
    err = _fails(tmp_path, b"[1, 2]\n")
    assert err.line == 1 and "object" in str(err)


@pytest.mark.parametrize(
    ("line", "field", "words"),
    [
        (1, "index", "missing"),
        (1, "time", "missing"),
        (3, "value", "missing"),
        (2, "offset", "missing"),
        (4, "partition", "expected an integer"),
        (5, "process", "expected an integer or a string"),
        (6, "high_watermark", "expected an integer"),
    ],
)
def test_missing_or_mistyped_fields(tmp_path: Path, line: int, field: str, words: str) -> None:
    h = good()
    if words == "missing":
        del h.events[line - 1][field]
    elif field == "process":
        h.events[line - 1][field] = [1]
    else:
        h.events[line - 1][field] = "3"
    err = _fails(tmp_path, b"\n".join(_lines(h)) + b"\n")
    assert (err.line, err.field) == (line, field)
    assert words in str(err)
    assert f":{line}: {field}: " in str(err)


def test_a_bad_record_inside_a_poll(tmp_path: Path) -> None:
    h = good()
    h.poll(5, (0, 0, "a"))
    h.events[-1]["records"][0]["offset"] = "0"
    err = _fails(tmp_path, b"\n".join(_lines(h)) + b"\n")
    assert err.field == "records.offset" and err.line == len(h.events)


def test_a_completion_without_an_invoke(tmp_path: Path) -> None:
    h = H()
    h.ok("ghost", 0, 0)
    err = _fails(tmp_path, b"\n".join(_lines(h)) + b"\n")
    assert err.line == 1 and "without an invoke" in str(err)


def test_a_poll_completion_without_an_invoke(tmp_path: Path) -> None:
    h = H()
    h.add(process=4, type="ok", f="poll", records=[])
    err = _fails(tmp_path, b"\n".join(_lines(h)) + b"\n")
    assert "without an invoke" in str(err)


def test_a_value_sent_twice(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.invoke("a")
    err = _fails(tmp_path, b"\n".join(_lines(h)) + b"\n")
    assert err.line == 3 and "sent twice" in str(err)


def test_index_and_time_must_move_forward(tmp_path: Path) -> None:
    h = good()
    h.events[2]["index"] = 1
    assert "not greater" in str(_fails(tmp_path, b"\n".join(_lines(h)) + b"\n"))
    h = good()
    h.events[2]["time"] = 1
    assert "earlier" in str(_fails(tmp_path, b"\n".join(_lines(h)) + b"\n"))


def test_unknown_type_and_bad_metadata(tmp_path: Path) -> None:
    h = good()
    h.events[0]["type"] = "maybe"
    assert "unknown type" in str(_fails(tmp_path, b"\n".join(_lines(h)) + b"\n"))
    h = good()
    h.meta(0, 1, [1, 2])
    h.events[-1]["isr"] = [1, "2"]
    err = _fails(tmp_path, b"\n".join(_lines(h)) + b"\n")
    assert err.field == "isr"


def test_a_torn_last_line_is_ignored_and_reported(tmp_path: Path) -> None:
    lines = _lines(good())
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n" + lines[-1][:17])
    r = check_history(path)
    assert r.valid is True
    assert len(r.warnings) == 1 and "torn last line" in r.warnings[0]
    assert f":{len(lines) + 1}:" in r.warnings[0]


def test_a_complete_last_line_without_newline_counts(tmp_path: Path) -> None:
    h = good()
    h.send("c", 0, 2)  # acknowledged, never drained: lost, on the unterminated last line
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"\n".join(_lines(h)))
    r = check_history(path)
    assert r.count("lost-write") == 1 and r.warnings == []


def test_a_missing_file_and_an_empty_one(tmp_path: Path) -> None:
    with pytest.raises(HistoryError):
        check_history(tmp_path / "nope.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    r = check_history(empty)  # nothing recorded is no evidence of anything (issue 16)
    assert r.valid == "unknown"
    assert r.reasons == ["no sends recorded", "nothing drained"]


def test_unknown_event_kinds_and_fields_are_ignored(tmp_path: Path) -> None:
    h = good()
    h.add(process="monitor", type="ok", f="broker-metrics", under_replicated=0)
    h.events[0]["extra"] = {"anything": 1}
    assert h.check(tmp_path).valid is True


def test_numbers_out_of_range(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 1)
    h.poll(3, (0, 2**62, "a"))  # a valid 64-bit integer, beyond what positions can hold
    err = _fails(tmp_path, b"\n".join(_lines(h)) + b"\n")
    assert err.line == 4 and "out of range" in str(err)
    huge = b"\n".join(_lines(h)).replace(b"4611686018427387904", b"1" * 30)
    err = _fails(tmp_path, huge + b"\n")  # beyond 64 bits: not an integer any more
    assert err.field == "records.offset"
