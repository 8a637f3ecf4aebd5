import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from click.testing import CliRunner
from sample_runs import LOST, make_run

from kchaos.cli.reports import report_cmd
from kchaos.harness.checker import check_run
from kchaos.reports.build import write_run_reports
from kchaos.reports.rundata import load_run_data, series
from kchaos.reports.suite import SuiteFailure, write_suite_reports


def test_rundata_reads_the_history(lost_run: Path):
    data = load_run_data(lost_run)
    assert data.totals == {"ok": 240, "fail": 10, "info": 50}
    # fault windows, offline windows and recovery: the checker's, from results.json
    assert [(w.fault, w.start_s, w.stop_s) for w in data.faults] == [("pause", 10.0, 18.0)]
    assert [(o.name, o.start_s, o.length_s) for o in data.offline] == [("t/1", 12.0, 2.0)]
    assert [(r.id, r.stop_s, r.seconds) for r in data.recovery] == [("f-0", 18.0, 2.0)]
    assert {(m.kind, m.value) for m in data.markers} == {
        ("lost-write", "0-42"),
        ("duplicate", "0-77"),
    }
    assert {m.time for m in data.markers} == {4.2, 7.7}
    assert set(data.isr) == {"t/0", "t/1"}
    s = series(data)
    assert abs(sum(s.ok) * s.width - 240) < 1e-6
    assert abs(sum(s.info) * s.width - 50) < 1e-6
    assert all(p is None or 9.9 <= p <= 16.1 for p in s.p50)


def test_torn_last_line_is_counted_not_fatal(tmp_path: Path):
    run = make_run(tmp_path / "torn", results=LOST, torn=True)
    data = load_run_data(run)
    assert data.torn_lines == 1 and data.totals["ok"] == 240


def test_reports_of_a_run(lost_run: Path):
    rep = write_run_reports(lost_run)
    assert rep.outcome.exit_code == 1
    summary = json.loads((lost_run / "summary.json").read_text())
    assert summary["verdict"] == "invalid" and summary["expected"] is False
    assert summary["anomalies"] == {"duplicate": 1, "lost-write": 1, "offline": 1}
    page = (lost_run / "report.html").read_text()
    # Self-contained: plotly.js inlined, no script or stylesheet from the network.
    assert "Plotly" in page and len(page) > 1_000_000
    assert not re.search(r"<script[^>]+src=", page)
    assert not re.search(r"<link[^>]+href=['\"]https?:", page)
    for div in ("throughput", "latency", "isr", "offline", "recovery"):
        assert f'id="{div}"' in page
    assert "lost-write written" in page
    root = ET.parse(lost_run / "junit.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["anomaly lost-write"].find("failure") is not None
    assert cases["anomaly aborted-read"].find("failure") is None
    assert cases["slo max_offline_seconds"].find("failure") is not None
    assert cases["expectation"].find("failure") is not None
    assert root.get("failures") == "4"


def test_negative_control_junit_passes_when_loss_found(tmp_path: Path):
    run = make_run(
        tmp_path / "neg",
        results={"valid": False, "anomalies": {"lost-write": {"count": 5, "examples": []}}},
        expect={"valid": False, "anomalies": ["lost-write"], "allowed": []},
    )
    rep = write_run_reports(run)
    assert rep.outcome.expected and rep.outcome.exit_code == 0
    root = ET.parse(run / "junit.xml").getroot()
    assert root.get("failures") == "0"
    run2 = make_run(
        tmp_path / "neg2",
        results={"valid": True, "anomalies": {}},
        expect={"valid": False, "anomalies": ["lost-write"]},
    )
    write_run_reports(run2)
    cases = {c.get("name"): c for c in ET.parse(run2 / "junit.xml").getroot().iter("testcase")}
    failure = cases["anomaly lost-write"].find("failure")
    assert failure is not None and "negative control" in failure.get("message", "")


def test_report_command_exit_codes(lost_run: Path, valid_run: Path, tmp_path: Path):
    runner = CliRunner()
    result = runner.invoke(report_cmd, [str(valid_run)], standalone_mode=False)
    assert result.exception is None, result.output
    assert result.return_value == 0
    assert "as expected" in result.output
    result = runner.invoke(
        report_cmd,
        [str(valid_run), str(lost_run), "--out", str(tmp_path / "all")],
        standalone_mode=False,
    )
    assert result.return_value == 1
    assert (tmp_path / "all" / "report.html").is_file()
    assert "NOT as expected" in result.output
    # the combined page ends like every batch: its page and its junit.xml (Rich may wrap
    # the long paths, so compared without whitespace)
    flat = "".join(result.output.split())
    assert f"combinedreport:{tmp_path / 'all' / 'report.html'}" in flat
    assert f"junit:{tmp_path / 'all' / 'junit.xml'}" in flat


def test_report_command_rejects_a_missing_dir(tmp_path: Path):
    from kchaos.harness.errors import HistoryError

    result = CliRunner().invoke(report_cmd, [str(tmp_path / "nope")], standalone_mode=False)
    assert isinstance(result.exception, HistoryError)


def test_suite_matrix(lost_run: Path, valid_run: Path, tmp_path: Path):
    reps = [write_run_reports(valid_run), write_run_reports(lost_run)]
    out = tmp_path / "suite"
    paths = write_suite_reports(
        out,
        reps,
        [SuiteFailure("broken", "cluster did not start")],
        title="nightly",
        broker_config="prod.properties",
    )
    page = Path(paths["html"]).read_text()
    assert "1/3 scenarios ended as expected" in page
    assert "prod.properties" in page
    assert "../run-lost/report.html" in page
    summary = json.loads(Path(paths["summary"]).read_text())
    assert summary["passed"] == 1 and summary["total"] == 3
    root = ET.parse(paths["junit"]).getroot()
    assert len(root.findall("testsuite")) == 3
    assert root.get("errors") == "1"


def test_a_fault_that_did_not_start_fails_the_run(tmp_path: Path):
    from sample_runs import VALID

    run = make_run(tmp_path / "r", results=VALID)
    history = run / "history.jsonl"
    lines = history.read_text().splitlines()
    broken = (
        '{"index": 0, "time": 0, "process": "nemesis", "type": "info", "f": "fault", '
        '"phase": "start", "id": "f-9", "fault": "kill", "targets": [], "error": "no node"}\n'
        '{"index": 1, "time": 0, "process": "nemesis", "type": "info", "f": "fault", '
        '"phase": "stop", "id": "f-9", "fault": "kill", "targets": []}'
    )
    events = [json.loads(x) for x in broken.splitlines() + lines]
    for i, e in enumerate(events):
        e["index"] = i
    history.write_text("".join(json.dumps(e) + "\n" for e in events))
    check_run(run)  # the report shows the checker's fault windows
    rep = write_run_reports(run)
    assert rep.outcome.exit_code == 1 and not rep.outcome.expected
    assert any("f-9 (kill) did not start: no node" in r for r in rep.outcome.reasons)
    assert "did not start: no node" in (run / "report.html").read_text()


def test_report_of_a_generated_history_with_the_real_checker(tmp_path: Path):
    from kchaos.harness.checker import check_run
    from kchaos.harness.histgen import generate_run

    gen = generate_run(
        tmp_path / "gen",
        events=5_000,
        seed=3,
        inject=["lost-write", "duplicate"],
        run_json={
            "scenario": {
                "name": "generated",
                "expect": {"valid": False, "anomalies": ["lost-write"], "allowed": ["duplicate"]},
            }
        },
    )
    check_run(gen.path.parent)
    rep = write_run_reports(gen.path.parent)
    assert rep.outcome.expected, rep.outcome.reasons
    assert rep.summary["anomalies"] == {"duplicate": 1, "lost-write": 1}
    lost = [inj for inj in gen.injected if inj.kind == "lost-write"][0]
    assert ("lost-write", lost.value) in {(m.kind, m.value) for m in rep.data.markers}
    assert rep.data.totals["ok"] > 200 and rep.data.faults


def test_report_timeline_from_the_controller_record(tmp_path: Path):
    """The report tells the KIP-903 story from controller.jsonl: a broker's new epoch,
    its ISR join, then its election, with the nemesis's faults in between; offline
    windows come from the checker (hence the controller), not from the samples."""
    from kchaos.harness.checker import check_run

    run = make_run(tmp_path / "ctl", results=None)
    lines = [
        {
            "offset": 5,
            "time": 0,
            "type": "broker",
            "broker": 2,
            "broker_epoch": 10,
            "fenced": False,
            "shutting_down": False,
        },
        {
            "offset": 6,
            "time": 1_000_000_000,
            "type": "partition",
            "topic": "t",
            "partition": 0,
            "leader": 1,
            "leader_epoch": 0,
            "partition_epoch": 0,
            "isr": [1, 2],
            "elr": [],
            "last_known_elr": [],
            "replicas": [1, 2],
            "recovering": False,
        },
        {
            "offset": 7,
            "time": 11_000_000_000,
            "type": "broker",
            "broker": 2,
            "broker_epoch": 31,
            "fenced": False,
            "shutting_down": False,
        },
        {
            "offset": 8,
            "time": 11_500_000_000,
            "type": "partition",
            "topic": "t",
            "partition": 0,
            "leader": -1,
            "leader_epoch": 1,
            "partition_epoch": 1,
            "isr": [2],
            "elr": [],
            "last_known_elr": [],
            "replicas": [1, 2],
            "recovering": False,
        },
        {
            "offset": 9,
            "time": 14_000_000_000,
            "type": "partition",
            "topic": "t",
            "partition": 0,
            "leader": 2,
            "leader_epoch": 2,
            "partition_epoch": 2,
            "isr": [2],
            "elr": [],
            "last_known_elr": [],
            "replicas": [1, 2],
            "recovering": False,
        },
    ]
    (run / "controller.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    check_run(run)
    rep = write_run_reports(run)
    page = (run / "report.html").read_text()
    assert "Controller timeline" in page
    assert "broker 2 registered" in page and "broker epoch 31" in page
    assert "clean election" in page and "fault f-0 start" in page
    starts = {(o.name, o.start_s) for o in rep.data.offline}
    assert ("t/0", 11.5) in starts
    assert ("t/1", 12.0) in starts  # a partition the record lacks keeps its samples


def test_report_marks_a_forbidden_reported_only_kind(tmp_path: Path):
    import shutil

    fixture = Path(__file__).parents[1] / "checker" / "fixtures" / "k15489-362"
    statuses = {}
    for name, expect in (
        ("required", {"valid": True, "anomalies": ["live-broker-fenced"]}),
        ("forbidden", {"valid": True, "forbid": ["live-broker-fenced"]}),
        ("silent", {"valid": True}),
    ):
        run = tmp_path / name
        shutil.copytree(fixture, run)
        data = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**data, "expect": expect}))
        check_run(run)
        rep = write_run_reports(run)
        html = (run / "report.html").read_text()
        row = re.search(r"<td>live-broker-fenced</td><td>2</td><td>([^<]*)</td>", html)
        assert row is not None
        statuses[name] = (rep.outcome.expected, row.group(1))
    assert statuses == {
        "required": (True, "expected, found"),
        "forbidden": (False, "forbidden, found"),
        "silent": (True, "allowed"),  # reported-only: never unexpected on its own
    }


def test_junit_fails_a_kind_exactly_when_the_expectation_does(tmp_path: Path):
    """A reported-only kind (broker-stalled), an unclean election the run's settings
    permit and a duplicate whose every occurrence has an excused cause do not fail their
    case in a run that ended as expected; a forbidden kind fails its case even when the
    kind is reported-only."""
    anomalies = {
        "broker-stalled": {"count": 1, "examples": []},
        "unclean-election": {"count": 2, "allowed": 2, "examples": []},
        "duplicate": {"count": 1, "causes": {"producer-epoch-bump": 1}, "examples": []},
    }
    run = make_run(
        tmp_path / "ok",
        results={"valid": False, "anomalies": anomalies},
        expect={"valid": True, "allowed_causes": ["producer-epoch-bump"]},
    )
    rep = write_run_reports(run)
    assert rep.outcome.expected, rep.outcome.reasons
    root = ET.parse(run / "junit.xml").getroot()
    assert root.get("failures") == "0"
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["anomaly broker-stalled"].find("system-out").text == "1 found"
    # the same run with broker-stalled forbidden: that case and the expectation fail
    run2 = make_run(
        tmp_path / "forbidden",
        results={"valid": False, "anomalies": anomalies},
        expect={
            "valid": True,
            "allowed_causes": ["producer-epoch-bump"],
            "forbid": ["broker-stalled"],
        },
    )
    assert not write_run_reports(run2).outcome.expected
    cases = {c.get("name"): c for c in ET.parse(run2 / "junit.xml").getroot().iter("testcase")}
    failure = cases["anomaly broker-stalled"].find("failure")
    assert failure is not None and "forbidden" in failure.get("message", "")
    assert cases["anomaly duplicate"].find("failure") is None
    assert cases["expectation"].find("failure") is not None
