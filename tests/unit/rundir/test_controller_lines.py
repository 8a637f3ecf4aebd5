"""controller.jsonl: the writer's lines read back by the one reader are the same lines."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import orjson
import pytest

from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.controller import BrokerLine, PartitionLine, read_controller_lines


def test_written_lines_read_back_equal(tmp_path: Path) -> None:
    written = [
        BrokerLine(10, 1_000, 1, 31, False, False, snapshot=True),
        PartitionLine(11, 2_000, "t", 0, 1, 4, 9, (1, 2), (), (), (1, 2, 3), False),
        PartitionLine(12, 2_000, "t", 0, -1, 5, 10, (), (2,), (1,), (1, 2, 3), True),
    ]
    path = tmp_path / "controller.jsonl"
    path.write_bytes(b"".join(orjson.dumps(x.to_json()) + b"\n" for x in written))
    read = read_controller_lines(path)
    assert [dataclasses.replace(x, line=0) for x in read.lines] == written
    assert [x.line for x in read.lines] == [1, 2, 3] and read.count == 3


def test_a_bad_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "controller.jsonl"
    path.write_text('{"offset": 1, "time": 0, "type": "partition", "topic": "t"}\n')
    with pytest.raises(HistoryError, match=r"controller.jsonl:1: partition: missing field"):
        read_controller_lines(path)
