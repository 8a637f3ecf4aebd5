"""stable-offsets.jsonl: the monitor's last-stable-offset samples, written and read back."""

from __future__ import annotations

from pathlib import Path

import pytest

from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.names import STABLE_OFFSETS_JSONL
from kchaos.harness.rundir.rundir import RunDir
from kchaos.harness.rundir.stable_offsets import StableOffsetSample


def _sample(time: int, part: int, high: int, lso: int) -> StableOffsetSample:
    return StableOffsetSample(time, "t", part, high, lso, observe_ms=2.26)


def test_samples_written_are_read_back_in_order(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    writer = rd.stable_offsets_writer()
    writer.write([_sample(10, 0, 12, 9), _sample(10, 1, 5, 5)])
    writer.write([_sample(20, 0, 15, 15)])
    writer.close()
    writer.close()  # idempotent
    assert rd.stable_offsets == tmp_path / STABLE_OFFSETS_JSONL
    got = rd.read_stable_offsets()
    assert [(s.time, s.partition, s.high_watermark, s.last_stable_offset) for s in got] == [
        (10, 0, 12, 9),
        (10, 1, 5, 5),
        (20, 0, 15, 15),
    ]
    assert [s.lag for s in got] == [3, 0, 0]
    assert got[0].observe_ms == 2.3  # rounded to 0.1 ms
    assert [s.line for s in got] == [1, 2, 3]
    with pytest.raises(HistoryError, match="closed"):
        writer.write([_sample(30, 0, 1, 1)])


def test_a_run_without_the_file_has_no_samples(tmp_path: Path) -> None:
    assert RunDir(tmp_path).read_stable_offsets() == ()


def test_a_torn_last_line_is_ignored_and_reported(tmp_path: Path) -> None:
    path = tmp_path / STABLE_OFFSETS_JSONL
    path.write_text(
        '{"time":1,"topic":"t","partition":0,"high_watermark":4,"last_stable_offset":2}\n'
        '{"time":2,"topic":"t","parti'
    )
    torn: list[str] = []
    got = RunDir(tmp_path).read_stable_offsets(on_torn=torn.append)
    assert [s.lag for s in got] == [2]
    assert torn and "torn" in torn[0]


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"time":1,"topic":"t","partition":0,"high_watermark":4}', "last_stable_offset"),
        ('{"time":-1,"topic":"t","partition":0,"high_watermark":4,"last_stable_offset":2}',
         "time"),
        ('{"time":1,"topic":7,"partition":0,"high_watermark":4,"last_stable_offset":2}', "topic"),
        ('{"time":1,"topic":"t","partition":0,"high_watermark":"4","last_stable_offset":2}',
         "high_watermark"),
        ('{"time":1,"topic":"t","partition":0,"high_watermark":4,"last_stable_offset":2,'
         '"observe_ms":"slow"}', "observe_ms"),
    ],
)  # fmt: skip
def test_a_bad_line_names_file_line_and_field(tmp_path: Path, line: str, field: str) -> None:
    path = tmp_path / STABLE_OFFSETS_JSONL
    good = '{"time":0,"topic":"t","partition":0,"high_watermark":0,"last_stable_offset":0}'
    path.write_text(f"{good}\n{line}\n{good}\n")
    with pytest.raises(HistoryError) as caught:
        RunDir(tmp_path).read_stable_offsets()
    err = caught.value
    assert (err.file, err.line, err.field) == (str(path), 2, field)


def test_a_line_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    (tmp_path / STABLE_OFFSETS_JSONL).write_text("[1, 2]\n")
    with pytest.raises(HistoryError, match="JSON object") as caught:
        RunDir(tmp_path).read_stable_offsets()
    assert caught.value.line == 1
