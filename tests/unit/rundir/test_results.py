"""results.json through the run-directory model: the checker's series, typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kchaos.harness.checker import check_run
from kchaos.harness.errors import HistoryError
from kchaos.harness.histgen import generate_run
from kchaos.harness.rundir.results import load_results


def test_the_checkers_series_load_typed(tmp_path: Path) -> None:
    generate_run(tmp_path, events=3_000, seed=2, inject=("offline",))
    assert load_results(tmp_path) is None  # not checked yet
    check_run(tmp_path)
    raw = json.loads((tmp_path / "results.json").read_text())
    results = load_results(tmp_path)
    assert results is not None and results.valid == raw["valid"]
    avail = raw["stats"]["availability"]
    assert results.offline_windows is not None and results.full_isr is not None
    assert [(w.topic, w.partition, w.start_s, w.length_s) for w in results.offline_windows] == [
        (w["topic"], w["partition"], w["start_s"], w["length_s"]) for w in avail["offline_windows"]
    ]
    assert [(f.id, f.seconds) for f in results.full_isr] == [
        (f["id"], f["seconds"]) for f in avail["full_isr_after_fault"]
    ]
    assert results.fault_windows is not None
    assert [w.id for w in results.fault_windows] == [f["id"] for f in avail["sends"]["per_fault"]]


def test_a_hand_made_verdict_without_series(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text('{"valid": true, "anomalies": {}}')
    results = load_results(tmp_path)
    assert results is not None and results.full_isr is None and results.fault_windows is None


def test_a_malformed_series_names_file_and_field(tmp_path: Path) -> None:
    bad = {"stats": {"availability": {"full_isr_after_fault": [{"id": "f-0"}]}}}
    (tmp_path / "results.json").write_text(json.dumps(bad))
    with pytest.raises(HistoryError) as info:
        load_results(tmp_path)
    message = str(info.value)
    assert "results.json: stats.availability.full_isr_after_fault.0: an entry lacks" in message


def test_an_unmeasured_time_to_full_isr_loads_as_unknown(tmp_path: Path) -> None:
    entries = [
        {"id": "f-1", "fault": "kill", "stop_s": 3.0, "seconds": None, "unknown": True},
        {"id": "f-2", "fault": "kill", "stop_s": 9.0, "seconds": None, "source": "controller"},
        {"id": "f-3", "fault": "kill", "stop_s": 9.5, "seconds": 1.5},  # before issue 22
    ]
    data = {"stats": {"availability": {"full_isr_after_fault": entries}}}
    (tmp_path / "results.json").write_text(json.dumps(data))
    results = load_results(tmp_path)
    assert results is not None and results.full_isr is not None
    assert [(f.seconds, f.unknown, f.source) for f in results.full_isr] == [
        (None, True, None),
        (None, False, "controller"),
        (1.5, False, None),
    ]
