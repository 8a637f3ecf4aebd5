"""recovery-skipped: a start skipped the log recovery its directory needed (KAFKA-15375)."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import orjson
from checker_hist import H

from kchaos.harness.checker import check_run
from kchaos.harness.checker.startlog import classify
from kchaos.harness.rundir import RunDir, names
from kchaos.harness.rundir.expect import evaluate
from kchaos.harness.scenario.loader import load_scenario

S = 1_000_000_000
MS = 1_000_000
ORIGIN = 1_795_000_000_000_000_000
CONTAINER = "kchaos-test-broker-{}"
KIND = "recovery-skipped"
SCENARIO = (
    Path(__file__).resolve().parents[3]
    / "harness"
    / "scenarios"
    / "kafka-15375-failed-start-marker.yaml"
)
DIR = "/var/lib/kafka/data"
# the wording of 3.5.1 and 3.6.2 (LogManager.loadLogs, BrokerServer, kafka.Kafka)
RECOVERING = f"INFO Recovering 7 logs from {DIR} since no clean shutdown file was found"
SKIPPING = f"INFO Skipping recovery of 7 logs from {DIR} since clean shutdown file was found"
LOADED = "INFO Loaded 7 logs in 812ms (kafka.log.LogManager)"
LOADING = "INFO Loading logs from log dirs ArraySeq(/var/lib/kafka/data) (kafka.log.LogManager)"
FATAL = "ERROR [BrokerServer id=3] Fatal error during broker startup. Prepare to shutdown"
SHUTDOWN = "INFO [BrokerServer id=3] shut down completed (kafka.server.BrokerServer)"
EXITING = "ERROR Exiting Kafka due to fatal exception during startup. (kafka.Kafka$)"


def _stamp(seconds: float) -> str:
    unix_ms = (ORIGIN + int(seconds * S)) // MS
    when = datetime.fromtimestamp(unix_ms // 1000, UTC)
    return f"[{when:%Y-%m-%d %H:%M:%S},{unix_ms % 1000:03d}]"


def _log(*entries: tuple[float, str] | str) -> list[str]:
    """``(seconds, text)`` becomes a timestamped line; a bare string is a launcher start."""
    out = []
    for entry in entries:
        if isinstance(entry, str):
            out += [f"[kchaos] {entry}", "[kchaos]   node.id=3"]
        else:
            out.append(f"{_stamp(entry[0])} {entry[1]}")
    return out


def _run(tmp_path: Path, lines: list[str], crashes: list[tuple[str, str, float]]) -> Path:
    """A run directory: a valid history with the crash faults (id, fault, start s) on
    broker 3, and broker 3's server.log."""
    h = H()
    h.send("a", 0, 0)
    for fid, fault, at in sorted(crashes, key=lambda c: c[2]):
        h.wait(max(at - h.now() / S, 0))
        h.fault("start", fid, fault, ["broker-3"])
        h.fault("stop", fid, fault, ["broker-3"])
    h.wait(max(120 - h.now() / S, 0))
    h.drain_all(0, ["a"])
    h.write(tmp_path / names.HISTORY_JSONL)
    (tmp_path / names.RUN_JSON).write_bytes(orjson.dumps({"history_start_unix_ns": ORIGIN}))
    text = "".join(f"{line}\n" for line in lines)
    RunDir(tmp_path).write_node_logs(CONTAINER.format(3), {names.SERVER_LOG: text})
    return tmp_path


def _first_start() -> list[tuple[float, str] | str]:
    # a fresh directory (3.5.1, run k15375-351-s1): no Recovering or Skipping line at all
    return ["start 1", (2.0, LOADING), (2.1, "INFO Loaded 0 logs in 7ms (kafka.log.LogManager)")]


def test_lines_are_classified_by_their_wording() -> None:
    assert classify(f"[2026-11-26 06:00:00,000] {RECOVERING}") == ("recovering", 7, DIR)
    assert classify(f"[2026-11-26 06:00:00,000] {SKIPPING}") == ("skipping", 7, DIR)
    assert classify(LOADED) == ("loaded", 7, None)
    assert classify(FATAL)[0] == "fatal"  # type: ignore[index]
    assert classify(EXITING)[0] == "exit" and classify(SHUTDOWN)[0] == "exit"  # type: ignore[index]
    assert classify("[kchaos]   node.id=3") == ("start", None, None)
    assert classify(LOADING) == ("loading", None, None)
    assert classify("INFO [BrokerServer id=3] Waiting for the broker to be unfenced") is None


def test_the_3_5_1_pattern_is_flagged(tmp_path: Path) -> None:
    # hard reboot while running; start A fails before loading (cut off the controller)
    # and writes the marker; the no-op kill of the exited container; start B skips
    lines = _log(
        *_first_start(),
        "start A",
        (62.0, FATAL),
        (62.5, SHUTDOWN),
        (62.6, EXITING),
        "start B",
        (100.0, SKIPPING),
        (100.5, LOADED),
    )
    run = _run(tmp_path, lines, [("f-1", "hard-reboot", 30.0), ("f-3", "kill", 63.0)])
    r = check_run(run)
    assert r.anomalies[KIND].count == 1
    assert r.valid is True  # reported, never invalid
    (example,) = r.anomalies[KIND].examples
    assert example["broker"] == 3 and example["logs"] == 7 and example["directory"] == DIR
    assert example["log"] == f"{CONTAINER.format(3)}/server.log:12"
    why = example["needed_recovery_since"]
    assert (why["cause"], why["fault"], why["fault_name"]) == ("crash", "f-1", "hard-reboot")
    # start A's fatal error is named; the kill of the exited process is no crash
    assert example["failed_starts"] == [f"{CONTAINER.format(3)}/server.log:7"]
    stats = r.stats["startlog"]
    assert (stats["starts"], stats["crashes"], stats["skipping"], stats[KIND]) == (3, 1, 1, 1)


def test_the_3_6_2_pattern_is_not_flagged(tmp_path: Path) -> None:
    # the same schedule: the failed start writes no marker, start B recovers
    lines = _log(
        *_first_start(),
        "start A",
        (62.0, FATAL),
        (62.5, SHUTDOWN),
        (62.6, EXITING),
        "start B",
        (100.0, RECOVERING),
        (100.5, LOADED),
    )
    run = _run(tmp_path, lines, [("f-1", "hard-reboot", 30.0), ("f-3", "kill", 63.0)])
    r = check_run(run)
    assert KIND not in r.anomalies
    assert r.stats["startlog"]["recovering"] == 1


def test_a_clean_restart_and_a_start_after_a_completed_recovery_are_not_flagged(
    tmp_path: Path,
) -> None:
    lines = _log(
        *_first_start(),
        # a clean shutdown, then a start that finds the marker: as designed
        (20.0, SHUTDOWN),
        "start 2",
        (25.0, SKIPPING),
        (25.5, LOADED),
        # killed while running: the next start recovers, loads everything, shuts down
        "start 3",
        (50.0, RECOVERING),
        (50.5, LOADED),
        (60.0, SHUTDOWN),
        "start 4",
        (70.0, SKIPPING),
        (70.5, LOADED),
    )
    run = _run(tmp_path, lines, [("f-1", "kill", 40.0)])
    r = check_run(run)
    assert KIND not in r.anomalies
    assert r.stats["startlog"]["crashes"] == 1


def test_a_crash_before_loading_began_leaves_the_directory_as_it_was(tmp_path: Path) -> None:
    # start 2 is killed before it loads anything: its predecessor's marker is still
    # true, and start 3 rightly skips recovery
    lines = _log(
        *_first_start(),
        (20.0, SHUTDOWN),
        "start 2",
        "start 3",
        (40.0, SKIPPING),
        (40.5, LOADED),
    )
    r = check_run(_run(tmp_path, lines, [("f-1", "kill", 30.0)]))
    assert KIND not in r.anomalies


def test_a_skip_after_an_incomplete_recovery_is_flagged(tmp_path: Path) -> None:
    # start 2 began recovering, failed before "Loaded", and its shutdown wrote the marker
    lines = _log(
        *_first_start(),
        (20.0, SHUTDOWN),
        "start 2",
        (30.0, RECOVERING),
        (40.0, FATAL),
        (40.5, SHUTDOWN),
        "start 3",
        (50.0, SKIPPING),
    )
    r = check_run(_run(tmp_path, lines, []))
    (example,) = r.anomalies[KIND].examples
    assert example["needed_recovery_since"]["cause"] == "no clean shutdown file"
    assert example["needed_recovery_since"]["log"].endswith("server.log:8")
    assert example["failed_starts"] == [f"{CONTAINER.format(3)}/server.log:9"]


def test_a_process_that_ended_without_a_shutdown_line_counts_as_crashed(tmp_path: Path) -> None:
    # no crash fault in the history (killed by hand, or by the machine): the next start
    # comes with no shutdown line, so the loaded logs were never flushed
    lines = _log(*_first_start(), "start 2", (40.0, FATAL), (40.5, SHUTDOWN), "start 3")
    lines += _log((50.0, SKIPPING))
    r = check_run(_run(tmp_path, lines, []))
    (example,) = r.anomalies[KIND].examples
    assert example["needed_recovery_since"] == {
        "cause": "ended without a shutdown line",
        "log": f"{CONTAINER.format(3)}/server.log:5",
    }


def test_a_run_without_broker_logs_is_not_judged(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.drain_all(0, ["a"])
    h.write(tmp_path / names.HISTORY_JSONL)
    r = check_run(tmp_path)
    assert KIND not in r.anomalies and r.stats["startlog"]["source"] is None


def test_the_library_scenario_requires_it_before_the_fix_and_forbids_it_after() -> None:
    found = {"valid": True, "anomalies": {KIND: {"count": 1}}}
    clean = {"valid": True, "anomalies": {}}
    before = load_scenario(SCENARIO, kafka_version="3.5.1").to_dict()["expect"]
    after = load_scenario(SCENARIO, kafka_version="3.6.2").to_dict()["expect"]
    assert evaluate(before, found).expected and not evaluate(before, clean).expected
    assert evaluate(after, clean).expected and not evaluate(after, found).expected


FIXTURES = Path(__file__).parent / "fixtures"


def test_the_real_3_5_1_run_shows_the_skip(tmp_path: Path) -> None:
    # runs/k15375-351-s1 (2026-11-26), cut: start A failed at its deadline without ever
    # loading (its LogManager shut down right after "Fatal error"), start B skipped
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "k15375-351", run)
    r = check_run(run)
    (example,) = r.anomalies[KIND].examples
    log = "kchaos-20261126-062959-c8ec-broker-3/server.log"
    assert example["log"] == f"{log}:40" and example["logs"] == 19
    assert example["failed_starts"] == [f"{log}:30"]
    why = example["needed_recovery_since"]
    assert (why["cause"], why["fault"], why["fault_name"]) == ("crash", "f-1", "hard-reboot")
    assert r.valid is True
    expect = load_scenario(SCENARIO, kafka_version="3.5.1").to_dict()["expect"]
    assert evaluate(expect, r.to_json()).expected


def test_the_real_3_6_2_run_recovers(tmp_path: Path) -> None:
    # runs/k15375-362-s1 (2026-11-26), cut: the same failed start A left no marker, and
    # start B logged "Recovering 19 logs ... since no clean shutdown file was found"
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "k15375-362", run)
    r = check_run(run)
    assert KIND not in r.anomalies
    stats = r.stats["startlog"]
    assert (stats["recovering"], stats["skipping"], stats["crashes"]) == (1, 0, 1)
    expect = load_scenario(SCENARIO, kafka_version="3.6.2").to_dict()["expect"]
    assert evaluate(expect, r.to_json()).expected
    # judged by the affected release's expectation, the same run is not as expected
    before = load_scenario(SCENARIO, kafka_version="3.5.1").to_dict()["expect"]
    assert evaluate(before, r.to_json()).reasons == (f"expected anomalies not found: {KIND}",)
