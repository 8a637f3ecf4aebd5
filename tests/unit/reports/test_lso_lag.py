"""The run page's last-stable-offset lag: per partition, over time, over the fault windows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from kchaos.harness.checker import check_run
from kchaos.harness.rundir.names import HISTORY_JSONL, STABLE_OFFSETS_JSONL
from kchaos.harness.rundir.rundir import RunDir
from kchaos.harness.rundir.stable_offsets import StableOffsetSample
from kchaos.reports import plots
from kchaos.reports.build import write_run_reports
from kchaos.reports.rundata import load_run_data

FIXTURES = Path(__file__).parents[1] / "fixtures" / "txn"
MS = 1_000_000

# (ms, partition, high watermark, last stable offset)
SAMPLES = [
    (10, ("t", 0), 2, 2),
    (10, ("u", 0), 1, 1),
    (30, ("t", 0), 6, 3),
    (30, ("u", 0), 4, 1),
    (50, ("t", 0), 9, 9),
    (50, ("u", 0), 4, 4),
]
FAULT = (20, 40)  # ms: a pause while transactions were open


def _history(run_dir: Path) -> None:
    """The format 1.2 fixture with one fault window added (lines renumbered)."""
    events = [orjson.loads(line) for line in (FIXTURES / "many.jsonl").read_bytes().splitlines()]
    fault: dict[str, Any] = {"process": "nemesis", "type": "info", "f": "fault", "id": "f-1",
                             "fault": "pause", "targets": ["broker-2"]}  # fmt: skip
    events.append({**fault, "time": FAULT[0] * MS, "phase": "start", "params": {}})
    events.append({**fault, "time": FAULT[1] * MS, "phase": "stop"})
    events.sort(key=lambda e: e["time"])  # stable: the fault lines follow their equals
    lines = [orjson.dumps({**e, "index": i}) for i, e in enumerate(events)]
    (run_dir / HISTORY_JSONL).write_bytes(b"\n".join(lines) + b"\n")


def _samples(run_dir: Path) -> None:
    writer = RunDir(run_dir).stable_offsets_writer()
    for ms, (topic, part), high, lso in SAMPLES:
        writer.write([StableOffsetSample(ms * MS, topic, part, high, lso, observe_ms=1.0)])
    writer.close()


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    _history(tmp_path)
    _samples(tmp_path)
    check_run(tmp_path)
    return tmp_path


def test_the_lag_per_partition_is_high_watermark_minus_lso(run_dir: Path) -> None:
    data = load_run_data(run_dir)
    assert data.lso_lag == {
        "t/0": [(0.01, 0), (0.03, 3), (0.05, 0)],
        "u/0": [(0.01, 0), (0.03, 3), (0.05, 0)],
    }
    assert data.lso_note == ""


def test_the_figure_has_a_line_per_partition_over_the_fault_windows(run_dir: Path) -> None:
    data = load_run_data(run_dir)
    assert [(w.fault, w.start_s, w.stop_s) for w in data.faults] == [("pause", 0.02, 0.04)]
    fig = plots.stable_offset_lag(data)
    lines = {trace.name: (list(trace.x), list(trace.y)) for trace in fig.data}
    assert lines == {
        "t/0": ([0.01, 0.03, 0.05], [0, 3, 0]),
        "u/0": ([0.01, 0.03, 0.05], [0, 3, 0]),
    }
    bands = [(s.x0, s.x1) for s in fig.layout.shapes if s.fillcolor == plots.FAULT_FILL]
    # the pause is shaded from its start (widened to stay visible on a 61 s axis)
    assert len(bands) == 1 and bands[0][0] == 0.02 and bands[0][1] >= 0.04
    assert any("pause" in note.text for note in fig.layout.annotations)


def test_the_page_shows_the_lag_in_the_transactions_section(run_dir: Path) -> None:
    page = Path(write_run_reports(run_dir).paths["html"]).read_text()
    section = page[page.index("<h2>Transactions</h2>") :]
    assert 'id="lso-lag"' in section
    assert page.index('id="txns"') < page.index('id="lso-lag"')


def test_an_old_run_without_samples_renders_as_before(tmp_path: Path) -> None:
    _history(tmp_path)
    check_run(tmp_path)
    assert not (tmp_path / STABLE_OFFSETS_JSONL).exists()
    data = load_run_data(tmp_path)
    assert data.lso_lag == {} and data.lso_note == ""
    page = Path(write_run_reports(tmp_path).paths["html"]).read_text()
    assert "<h2>Transactions</h2>" in page and 'id="txns"' in page
    assert 'id="lso-lag"' not in page and "stable-offset samples" not in page


def test_unreadable_samples_are_named_on_the_page_instead_of_failing_it(run_dir: Path) -> None:
    path = run_dir / STABLE_OFFSETS_JSONL
    path.write_text(path.read_text() + '{"time":1,"topic":"t"}\n{"time":2}\n')
    data = load_run_data(run_dir)
    assert data.lso_lag == {}
    assert f"{path}:7" in data.lso_note and "partition" in data.lso_note
    page = Path(write_run_reports(run_dir).paths["html"]).read_text()
    assert 'id="lso-lag"' not in page
    assert "Last-stable-offset samples not shown" in page and ":7: partition" in page
