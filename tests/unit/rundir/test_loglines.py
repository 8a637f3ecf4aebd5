"""expect.log_lines: Kafka's own line of its defence, looked for in the nodes' logs.

The lines are checked against what real brokers wrote (the checker fixtures cut from the
KAFKA-15375 runs on 3.5.1 and 3.6.2, and the KIP-501 run on 4.4.0), through the library
scenarios' own expectations, so a scenario cannot name a line Kafka does not write.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kchaos.cli.check import check_cmd
from kchaos.harness.checker.api import check_run
from kchaos.harness.errors import ConfigError, HistoryError
from kchaos.harness.rundir.expect import EXIT_EXPECTED, EXIT_NOT_EXERCISED, evaluate
from kchaos.harness.rundir.loglines import (
    LogLine,
    line_evidence,
    parse_log_lines,
    unseen_lines,
)
from kchaos.harness.rundir.nodelogs import NodeLog, node_logs
from kchaos.harness.rundir.runjson import RunSettings
from kchaos.harness.scenario import library
from kchaos.harness.scenario.loader import load_scenario

FIXTURES = Path(__file__).parents[1] / "checker" / "fixtures"
K15375 = "kafka-15375-failed-start-marker"


def error(path: tuple[str | int, ...], message: str) -> Exception:
    return ValueError(f"{path}: {message}")


def logs_of(fixture: str) -> list[NodeLog]:
    found = node_logs(FIXTURES / fixture / "logs")
    assert found, f"fixture {fixture} keeps no node logs"
    return found


def effects(entries: list[dict[str, Any]]) -> list[str]:
    return [e["effect"] for e in entries]


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ("text", "()"),
        ([{"node": 1}], "(0, 'contains')"),
        ([{"contains": "ab"}], "(0, 'contains')"),
        ([{"contains": "Shrinking ISR", "node": True}], "(0, 'node')"),
        ([{"contains": "Shrinking ISR", "node": -1}], "(0, 'node')"),
        ([{"contains": "Shrinking ISR", "broker": 1}], "(0, 'broker')"),
        ([{"contains": "Shrinking ISR", "regex": "yes"}], "(0, 'regex')"),
        ([{"contains": "Recovering [0-9 logs", "regex": True}], "(0, 'contains')"),
    ],
)
def test_a_bad_entry_is_refused_naming_its_field(raw: Any, where: str) -> None:
    with pytest.raises(ValueError, match=f"^{where.replace('(', '[(]').replace(')', '[)]')}"):
        parse_log_lines(raw, error)


def test_fixed_release_lines_of_kafka_15375_are_in_the_3_6_2_logs() -> None:
    wanted = library.load(K15375, kafka_version="3.6.2").expect.log_lines
    assert len(wanted) == 2
    found = line_evidence(wanted, logs_of("k15375-362"))
    assert effects(found) == ["seen", "seen"], found
    assert found[1]["count"] == 1  # start B's recovery, one line
    assert "Recovering 19 logs" in found[1]["observed"]
    assert found[1]["observed"].startswith("kchaos-20261126-064002-3135-broker-3/server.log:")


def test_fixed_release_lines_are_not_in_the_affected_run() -> None:
    # the near miss: the same failed start on 3.5.1, where start B skipped recovery
    wanted = library.load(K15375, kafka_version="3.6.2").expect.log_lines
    found = line_evidence(wanted, logs_of("k15375-351"))
    assert effects(found) == ["seen", "not-seen"], found
    assert "kchaos-20261126-062959-c8ec-broker-3" in found[1]["observed"]


def test_affected_release_lines_are_in_the_3_5_1_logs_only() -> None:
    wanted = library.load(K15375, kafka_version="3.5.1").expect.log_lines
    assert effects(line_evidence(wanted, logs_of("k15375-351"))) == ["seen", "seen"]
    assert effects(line_evidence(wanted, logs_of("k15375-362"))) == ["seen", "not-seen"]


def test_a_fresh_nodes_recovery_of_no_log_does_not_count(tmp_path: Path) -> None:
    folder = tmp_path / "kchaos-20261206-000000-abcd-broker-3"
    folder.mkdir()
    (folder / "server.log").write_text(
        "[2026-12-06 10:00:00,000] INFO Recovering 0 logs from /var/lib/kafka/data since no"
        " clean shutdown file was found (kafka.log.LogManager)\n"
    )
    wanted = library.load(K15375, kafka_version="3.6.2").expect.log_lines[1:]
    found = line_evidence(wanted, node_logs(tmp_path))
    assert effects(found) == ["not-seen"]


def test_kip_501_leader_line_is_in_broker_1s_log_only() -> None:
    wanted = library.load("kip-501-slow-leader", kafka_version="4.4.0").expect.log_lines
    assert effects(line_evidence(wanted, logs_of("busy-440-b"))) == ["seen"]
    # broker 2 wrote the same line for its own partition: not the leader the scenario names
    elsewhere = [LogLine("[Partition slow-0 broker=1] Shrinking ISR from", node=2)]
    assert effects(line_evidence(elsewhere, logs_of("busy-440-b"))) == ["not-seen"]


def test_a_node_whose_log_was_not_kept_is_not_measured() -> None:
    found = line_evidence([LogLine("Shrinking ISR from", node=7)], logs_of("busy-440-b"))
    assert effects(found) == ["not-measured"]
    assert found[0]["observed"] == "the run kept no log of node 7"
    assert effects(line_evidence([LogLine("Shrinking ISR from")], [])) == ["not-measured"]


def results_with(lines: list[dict[str, Any]]) -> dict[str, Any]:
    return {"valid": True, "anomalies": {}, "evidence": {"faults": [], "lines": lines}}


def test_a_missing_line_makes_the_run_not_exercised() -> None:
    line = LogLine("Did not receive fetch request from the majority of the voters within")
    expect = {"valid": True, "log_lines": [line.to_json()]}
    seen = line_evidence([line], [])  # not-measured: no log kept
    outcome = evaluate(expect, results_with(seen))
    assert outcome.exit_code == EXIT_NOT_EXERCISED
    assert outcome.label == "not exercised"
    assert "log line" in outcome.reasons[0] and "not-measured" in outcome.reasons[0]
    # results.json checked before lines existed: not shown either
    outcome = evaluate(expect, {"valid": True, "anomalies": {}})
    assert outcome.exit_code == EXIT_NOT_EXERCISED
    # the same line, seen: as expected
    entry = {**line.to_json(), "effect": "seen", "count": 1, "observed": "x"}
    assert evaluate(expect, results_with([entry])).exit_code == EXIT_EXPECTED
    # an entry for another node is not this line's
    other = {**entry, "node": 102}
    assert unseen_lines(expect["log_lines"], results_with([other]))


def test_run_json_lines_reach_the_checker_and_results(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "k15375-362", run)
    data = json.loads((run / "run.json").read_text())
    wanted = library.load(K15375, kafka_version="3.6.2").expect.log_lines
    data["scenario"] = {"expect": {"valid": True, "log_lines": [w.to_json() for w in wanted]}}
    (run / "run.json").write_text(json.dumps(data))
    assert RunSettings.load(run).log_lines == wanted
    results = check_run(run).to_json()
    assert effects(results["evidence"]["lines"]) == ["seen", "seen"]
    written = json.loads((run / "results.json").read_text())
    assert written["evidence"]["lines"] == results["evidence"]["lines"]
    # kchaos check says it, one line each
    said = CliRunner().invoke(check_cmd, [str(run)]).output
    assert "log line 'Recovering [1-9][0-9]* logs from .* since no clean shutdown" in said
    assert "(node 3): seen - kchaos-20261126-064002-3135-broker-3/server.log:" in said


def test_a_bad_line_in_run_json_names_the_field(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(
        json.dumps({"format": 1, "scenario": {"expect": {"log_lines": [{"node": 1}]}}})
    )
    with pytest.raises(HistoryError) as info:
        RunSettings.load(tmp_path)
    assert info.value.field == "scenario.expect.log_lines.0.contains"


def test_a_bad_line_in_a_scenario_file_names_its_line(tmp_path: Path) -> None:
    text = library.resolve("smoke").read_text()
    text = text.replace(
        "expect:\n",
        "expect:\n  log_lines:\n    - {node: 1, contains: 'Recovering [', regex: true}\n",
        1,
    )
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    message = str(info.value)
    assert "bad.yaml" in message and "log_lines" in message and "regular expression" in message
