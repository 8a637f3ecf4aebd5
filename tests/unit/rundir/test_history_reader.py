"""The one history reader (kchaos.harness.rundir.history): blank lines, torn last lines,
bad lines, the same for the checker (strict) and the lenient readers."""

from __future__ import annotations

from pathlib import Path

import pytest

from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.history import numbered

A = b'{"index":0,"time":1,"process":1,"type":"invoke","f":"send","value":"1-0"}\n'
B = b'{"index":1,"time":2,"process":1,"type":"ok","f":"send","value":"1-0"}\n'


@pytest.mark.parametrize("strict", [True, False])
def test_blank_lines_are_skipped_and_numbers_stay_the_file_s(tmp_path: Path, strict: bool) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(A + b"\n   \n" + B)
    got = list(numbered(path, strict=strict))
    assert [(no, e["index"]) for no, e in got] == [(1, 0), (4, 1)]


@pytest.mark.parametrize("strict", [True, False])
def test_a_torn_last_line_ends_the_stream_and_is_reported(tmp_path: Path, strict: bool) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(A + B + b'{"index":2,"ti')
    torn: list[str] = []
    got = list(numbered(path, strict=strict, on_torn=torn.append))
    assert len(got) == 2 and len(torn) == 1 and ":3: torn last line" in torn[0]


def test_garbage_without_a_newline_is_not_torn(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(A + b"garbage")
    with pytest.raises(HistoryError) as err:
        list(numbered(path, strict=True))
    assert err.value.line == 2
    assert [e is None for _, e in numbered(path)] == [False, True]  # lenient: yielded as None
