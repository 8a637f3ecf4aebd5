"""The report plots the checker's series (results.json), never a recomputation: fault
windows, offline windows and the time to full ISR after each fault's actual stop."""

from __future__ import annotations

import json
from pathlib import Path

from kchaos.harness.checker import check_run
from kchaos.harness.histgen import generate_run
from kchaos.harness.rundir.history import F_FAULT, PHASE_START, PHASE_STOP, read_events
from kchaos.harness.rundir.rundir import RunDir
from kchaos.reports.build import write_run_reports


def _planned_shorter(run_dir: Path) -> list[dict]:
    """A schedule whose every fault was planned to end halfway through its actual window
    (a slow heal): recovery measured from the plan would differ from the checker's."""
    starts: dict[str, float] = {}
    schedule = []
    for e in read_events(run_dir / "history.jsonl"):
        if e.get("f") != F_FAULT:
            continue
        if e["phase"] == PHASE_START:
            starts[e["id"]] = e["time"] / 1e9
        elif e["phase"] == PHASE_STOP and e["id"] in starts:
            length = e["time"] / 1e9 - starts[e["id"]]
            schedule.append({"id": e["id"], "fault": e["fault"], "at": 0, "for": length / 2})
    return schedule


def test_report_recovery_times_equal_the_checkers_time_to_full_isr(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    generate_run(run_dir, events=6_000, seed=5, partitions=3)
    run_json = json.loads((run_dir / "run.json").read_text())
    run_json["schedule"] = _planned_shorter(run_dir)
    (run_dir / "run.json").write_text(json.dumps(run_json))
    check_run(run_dir)
    checker = json.loads((run_dir / "results.json").read_text())["stats"]["availability"]

    rep = write_run_reports(run_dir)

    expected = [(f["id"], f["stop_s"], f["seconds"]) for f in checker["full_isr_after_fault"]]
    assert any(secs for _, _, secs in expected), "the run must have a fault with a recovery"
    assert [(r.id, r.stop_s, r.seconds) for r in rep.data.recovery] == expected
    windows = [(w["id"], w["start_s"], w["stop_s"]) for w in checker["sends"]["per_fault"]]
    assert sorted((w.id, w.start_s, w.stop_s) for w in rep.data.faults) == sorted(windows)
    offline = [(w["topic"], w["partition"], w["start_s"]) for w in checker["offline_windows"]]
    assert [(o.topic, o.partition, o.start_s) for o in rep.data.offline] == offline
    # the page's fault table shows the checker's number for each fault
    html = (run_dir / "report.html").read_text()
    for _, _, secs in expected:
        if secs is not None:
            assert f"<td>{secs:.1f}</td>" in html


def test_fault_table_says_unknown_and_never_apart() -> None:
    from kchaos.harness.rundir.results import FullIsr
    from kchaos.reports.html import _to_full_isr

    assert _to_full_isr(FullIsr("f-1", "kill", 1.0, 2.25)) == "2.2"
    assert _to_full_isr(FullIsr("f-1", "kill", 1.0, None, unknown=True)) == "unknown"
    assert _to_full_isr(FullIsr("f-1", "kill", 1.0, None)) == "never"
    assert _to_full_isr(None) == ""


def test_timeline_shows_an_incomplete_partition_marked(tmp_path: Path) -> None:
    from kchaos.reports import timeline

    part = {
        "type": "partition",
        "topic": "t",
        "leader": 1,
        "isr": [1, 2],
        "replicas": [1, 2],
    }
    lines = [
        {"offset": 1, "time": 0, "partition": 0, **part},
        {"offset": 2, "time": 0, "partition": 1, **part},
        {
            "offset": 3,
            "time": 5,
            "type": "incomplete",
            "partitions": [{"topic": "t", "partition": 1}],
            "reason": "Error at 3, skipping.",
        },
        {"offset": 4, "time": 6, "partition": 1, **part, "isr": [1], "incomplete": True},
    ]
    rd = RunDir(tmp_path)
    rd.controller.write_text("".join(json.dumps(x) + "\n" for x in lines))
    html = timeline.render(rd, [])
    assert "<h3>t/0</h3>" in html and "<h3>t/1</h3>" in html
    assert html.count("Incomplete: a metadata record could not be decoded") == 1
    assert html.index("<h3>t/1</h3>") < html.index("Incomplete:")
