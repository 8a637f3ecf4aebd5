"""A run directory written by main before issues 22 and 23 still checks, reports and
replays as it did (tests/fixtures/README.md; ``kchaos analyze``: tests/unit/analysis/
test_analysis_old_run.py).

The expected values are the ones the old run wrote itself (its results.json, summary.json,
junit.xml, run.json's schedule and history's fault lines), read before today's code
rewrites any of them.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import duckdb
from click.testing import CliRunner

from kchaos.cli.check import check_cmd
from kchaos.cli.reports import report_cmd
from kchaos.faults.targets import resolve
from kchaos.harness.cluster.api import NodeHandle
from kchaos.harness.cluster.topology import plan_nodes
from kchaos.harness.run.replay import replay_scenario
from kchaos.harness.rundir.rundir import RunDir
from kchaos.harness.scenario.plan import plan_of


def _invoke(command: Any, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(command, list(args), standalone_mode=False)
    if result.exception is not None:
        raise result.exception
    return result.return_value, result.output


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _counts(anomalies: dict[str, Any]) -> dict[str, int]:
    return {kind: int(entry["count"]) for kind, entry in anomalies.items()}


def _testcases(junit: Path) -> set[str]:
    return {case.attrib["name"] for case in ET.parse(junit).getroot().iter("testcase")}


def test_check_gives_the_verdict_and_counts_the_old_run_recorded(old_run: Path) -> None:
    rd = RunDir(old_run)
    recorded = _read(rd.results)
    recorded_summary = _read(rd.summary_json)
    assert recorded["stats"]["durability"]["acknowledged"] > 0  # a run that did something

    code, out = _invoke(check_cmd, str(old_run))

    now = _read(rd.results)
    assert now["history"] != recorded["history"]  # rewritten, by today's checker
    assert code == recorded_summary["exit_code"], out
    assert now["valid"] == recorded["valid"]
    assert _counts(now["anomalies"]) == _counts(recorded["anomalies"])
    assert now["reasons"] == recorded["reasons"]
    for checker, outcome in recorded["checkers"].items():
        assert now["checkers"][checker]["valid"] == outcome["valid"], checker
    # the facts the verdict rests on, section by section as the old run counted them
    for section in ("history", "durability", "reads", "ordering", "independent_reader"):
        assert now["stats"][section] == recorded["stats"][section], section
    for key in ("offsets_compared", "disagreements", "brokers_dumped"):
        assert now["stats"]["replicas"][key] == recorded["stats"]["replicas"][key], key
    isr_then, isr_now = recorded["stats"]["isr"], now["stats"]["isr"]
    # the counts the old run had (from_elr, a count added 2026-12-06, aside)
    assert {k: v for k, v in isr_now["elections"].items() if k in isr_then["elections"]} == (
        isr_then["elections"]
    )
    assert isr_now["elections"]["from_elr"] == 0  # no ELR on that release
    assert isr_now["shrinks"]["count"] == isr_then["shrinks"]["count"]


def test_report_writes_the_summary_the_old_run_wrote(old_run: Path) -> None:
    rd = RunDir(old_run)
    recorded = _read(rd.summary_json)
    recorded_cases = _testcases(rd.junit_xml)
    assert recorded["verdict"] and recorded_cases
    rd.summary_json.unlink()
    rd.junit_xml.unlink()

    # from the results.json the old run wrote, then from the one today's checker writes
    for step in ("as recorded", "checked again"):
        if step == "checked again":
            _invoke(check_cmd, str(old_run))
            for path in (rd.summary_json, rd.junit_xml, rd.report_html):
                path.unlink()
        code, out = _invoke(report_cmd, str(old_run))
        assert code == recorded["exit_code"], (step, out)
        summary = _read(rd.summary_json)
        for key, value in recorded.items():
            assert summary[key] == value, (step, key)
        assert recorded["run_id"] in rd.report_html.read_text(encoding="utf-8")
        suite = ET.parse(rd.junit_xml).getroot()
        assert suite.attrib["failures"] == "0" and suite.attrib["errors"] == "0", step
        assert recorded_cases <= _testcases(rd.junit_xml), step


def test_replay_plans_the_schedule_and_targets_the_old_run_ran(old_run: Path) -> None:
    rd = RunDir(old_run)
    stored = _read(rd.run_json)
    assert stored["schedule"], "the old run has no schedule to replay"

    sc, run = replay_scenario(old_run)
    plan = plan_of(sc)

    assert (sc.name, sc.seed) == (stored["scenario"]["name"], stored["seed"])
    assert sc.cluster.kafka_version == stored["kafka_version"]
    assert plan.schedule is not None
    assert plan.schedule.to_list() == stored["schedule"]  # ids, at, for, targets, params
    # Each fault's target spec resolves, with the fault's own seeded draw, to the nodes the
    # old run's history says it hit (Docker-free: the nodes are planned, not started).
    nodes = plan_nodes(plan.cluster, str(run.run_id), "10.213.0.0/24")
    hit = {
        event["id"]: event["targets"]
        for _, event in rd.history_lines()
        if event.get("f") == "fault" and event.get("phase") == "start"
    }
    planned = {
        f.id: [n.name for n in resolve(_Nodes(nodes), f.spec.target, f.spec.rng())]
        for f in plan.schedule.faults
    }
    assert planned == {fid: hit[fid] for fid in planned}


class _Nodes:
    """The nodes a target spec resolves among (no leader or controller is asked here)."""

    def __init__(self, nodes: list[NodeHandle]) -> None:
        self.nodes = nodes

    def node(self, key: int | str) -> NodeHandle:
        return next(n for n in self.nodes if key in (n.node_id, n.name))


def test_the_run_end_parquet_copy_of_the_old_history_is_made(old_run: Path) -> None:
    # its consumer's offset commits (offsets: a list) do not stop DuckDB's strict read
    rd = RunDir(old_run)
    assert rd.write_history_parquet()
    lines = sum(1 for _ in rd.history_lines())
    rows = duckdb.sql(f"SELECT count(*), count(offsets) FROM '{rd.history_parquet}/*.parquet'")
    assert rows.fetchall() == [(lines, 0)]  # every line, and no commit's offsets
