"""The report's Prometheus section, from a hand-written RUN_DIR/prometheus.json."""

from __future__ import annotations

from pathlib import Path

import orjson
from sample_runs import VALID, make_run

from kchaos.harness.rundir.names import PROMETHEUS_JSON
from kchaos.reports.build import write_run_reports


def _series(name: str, labels: dict[str, str], points: list[list[float]]) -> dict:
    return {"name": name, "title": f"{name} title", "unit": "u", "query": "q",
            "labels": labels, "points": points}  # fmt: skip


def test_the_report_plots_the_stored_series(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", results=VALID)
    doc = {
        "format": 1,
        "series": [
            _series("under_replicated", {"node": "1"}, [[0.0, 0.0], [5.0, 3.0]]),
            _series("under_replicated", {"node": "2"}, [[0.0, 0.0], [5.0, 1.0]]),
            _series("isr_shrinks", {"node": "1"}, [[4.0, 0.6]]),
        ],
        "errors": ["isr_expands: ClusterError: boom"],
    }
    (run / PROMETHEUS_JSON).write_bytes(orjson.dumps(doc))
    page = Path(write_run_reports(run).paths["html"]).read_text()
    assert "Prometheus (scraped during the run)" in page
    assert "prometheus-under_replicated" in page and "prometheus-isr_shrinks" in page
    assert "broker 2" in page
    assert "isr_expands: ClusterError: boom" in page


def test_no_file_no_section(valid_run: Path) -> None:
    page = Path(write_run_reports(valid_run).paths["html"]).read_text()
    assert "Prometheus (scraped" not in page


def test_an_unreadable_file_is_said_not_fatal(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", results=VALID)
    (run / PROMETHEUS_JSON).write_text("{not json")
    page = Path(write_run_reports(run).paths["html"]).read_text()
    assert "prometheus.json is not valid JSON" in page
