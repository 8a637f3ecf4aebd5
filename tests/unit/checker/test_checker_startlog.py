"""recovery-skipped: a start skipped the log recovery its directory needed (KAFKA-15375)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from broker_logs import CONTAINER, S, log_run, stamp
from checker_hist import H
from ticket_hist import (
    FORBIDDEN,
    MISSING,
    assert_tells_apart,
    crash_history,
    judged,
    library_scenario,
)

from kchaos.harness.checker import check_run
from kchaos.harness.checker.model import Results
from kchaos.harness.checker.startlog import classify
from kchaos.harness.rundir import names

LOG_3 = f"{CONTAINER.format(3)}/{names.SERVER_LOG}"
KIND = "recovery-skipped"
SCENARIO = library_scenario("kafka-15375-failed-start-marker.yaml")
DIR = "/var/lib/kafka/data"
# the wording of 3.5.1 and 3.6.2 (LogManager.loadLogs, BrokerServer, kafka.Kafka)
RECOVERING = f"INFO Recovering 7 logs from {DIR} since no clean shutdown file was found"
SKIPPING = f"INFO Skipping recovery of 7 logs from {DIR} since clean shutdown file was found"
LOADED = "INFO Loaded 7 logs in 812ms (kafka.log.LogManager)"
LOADING = "INFO Loading logs from log dirs ArraySeq(/var/lib/kafka/data) (kafka.log.LogManager)"
FATAL = "ERROR [BrokerServer id=3] Fatal error during broker startup. Prepare to shutdown"
SHUTDOWN = "INFO [BrokerServer id=3] shut down completed (kafka.server.BrokerServer)"
EXITING = "ERROR Exiting Kafka due to fatal exception during startup. (kafka.Kafka$)"
# the first line of a SIGTERM'd broker's shutdown, which 4.4.0 logged when the rest was lost
TERMINATING = "INFO Terminating process due to signal SIGTERM"


def _log(*entries: tuple[float, str] | str) -> list[str]:
    """``(seconds, text)`` becomes a timestamped line; a bare string is a launcher start."""
    out = []
    for entry in entries:
        if isinstance(entry, str):
            out += [f"[kchaos] {entry}", "[kchaos]   node.id=3"]
        else:
            out.append(f"{stamp(int(entry[0] * S))} {entry[1]}")
    return out


def _run(tmp_path: Path, lines: list[str], crashes: list[tuple[str, str, float]]) -> Path:
    """A run directory: a valid history with the crash faults (id, fault, start s) on
    broker 3, and broker 3's server.log."""
    crash_history(crashes, "broker-3", until=120).write(tmp_path / names.HISTORY_JSONL)
    return log_run(tmp_path, {3: lines})


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


@dataclass(frozen=True)
class Skip:
    """The one ``recovery-skipped`` a run shows: broker 3 skipped recovery of ``DIR``."""

    log: str  # where the Skipping line is
    logs: int
    failed_starts: list[str]
    why: tuple[str, str, str] = ("crash", "f-1", "hard-reboot")  # cause, fault, fault_name


def _assert_skip(r: Results, skip: Skip | None) -> None:
    """``r`` shows ``skip`` and nothing else of its kind; None: no recovery-skipped."""
    if skip is None:
        assert KIND not in r.anomalies
        return
    assert r.anomalies[KIND].count == 1
    (example,) = r.anomalies[KIND].examples
    assert (example["broker"], example["directory"]) == (3, DIR)
    assert (example["log"], example["logs"]) == (skip.log, skip.logs)
    assert example["failed_starts"] == skip.failed_starts
    why = example["needed_recovery_since"]
    assert (why["cause"], why["fault"], why["fault_name"]) == skip.why


# the hard reboot while running; start A fails before loading (cut off the controller);
# the no-op kill of the exited container; then start B. On 3.5.1 start A's shutdown
# wrote the marker and B skips; on 3.6.2 it did not and B recovers. The kill of the
# exited process is no crash; start A's fatal error is named.
@pytest.mark.parametrize(
    ("start_b", "stats", "skip"),
    [
        pytest.param(
            SKIPPING,
            (3, 1, 0, 1, 1),
            Skip(f"{LOG_3}:12", 7, [f"{LOG_3}:7"]),
            id="3.5.1-flagged",
        ),
        pytest.param(RECOVERING, (3, 1, 1, 0, 0), None, id="3.6.2-not-flagged"),
    ],
)
def test_the_pattern_of_each_release(
    tmp_path: Path, start_b: str, stats: tuple[int, ...], skip: Skip | None
) -> None:
    lines = _log(
        *_first_start(),
        "start A",
        (62.0, FATAL),
        (62.5, SHUTDOWN),
        (62.6, EXITING),
        "start B",
        (100.0, start_b),
        (100.5, LOADED),
    )
    run = _run(tmp_path, lines, [("f-1", "hard-reboot", 30.0), ("f-3", "kill", 63.0)])
    r = check_run(run)
    _assert_skip(r, skip)
    assert r.valid is True  # reported, never invalid
    found = r.stats["startlog"]
    keys = ("starts", "crashes", "recovering", "skipping", KIND)
    assert tuple(found[k] for k in keys) == stats


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


@pytest.mark.parametrize(
    ("exit_codes", "flagged"),
    [
        ({"broker-3": 143}, False),  # the JVM ran its shutdown after SIGTERM
        ({"broker-3": 0}, False),
        ({"broker-3": 137}, True),  # Docker's stop timed out: SIGKILL
        ({"broker-2": 143}, True),  # another broker's exit says nothing of broker 3
        (None, True),  # a history from before term recorded exit codes
    ],
)
def test_a_term_with_a_clean_exit_is_a_clean_stop_when_the_last_lines_were_lost(
    tmp_path: Path, exit_codes: dict[str, int] | None, flagged: bool
) -> None:
    # soak seed 51 on 4.4.0: SIGTERM at 30 s, the shutdown's last lines (with "shut down
    # completed") never reached the log, and the next start found the clean shutdown file
    lines = _log(*_first_start(), (29.0, TERMINATING))
    lines += _log("start 2", (50.0, SKIPPING), (50.5, LOADED))
    detail = None if exit_codes is None else {"exit_codes": exit_codes}
    crash_history([("f-1", "term", 30.0)], "broker-3", detail=detail, until=120).write(
        tmp_path / names.HISTORY_JSONL
    )
    r = check_run(log_run(tmp_path, {3: lines}))
    assert (KIND in r.anomalies) is flagged
    assert r.stats["startlog"]["clean_stops"] == (0 if flagged else 1)
    assert r.stats["startlog"]["crashes"] == 0
    if flagged:
        (example,) = r.anomalies[KIND].examples
        assert example["needed_recovery_since"]["cause"] == "ended without a shutdown line"


@pytest.mark.parametrize(
    ("exit_codes", "window", "flagged"),
    [
        ({"broker-3": 143}, (25.0, 20.0), False),  # SIGTERM, the JVM ran its shutdown
        ({"broker-3": 137}, (25.0, 20.0), True),  # Docker's stop timed out: SIGKILL
        ({"broker-2": 143}, (25.0, 20.0), True),  # another broker's exit
        (None, (25.0, 20.0), True),  # a history from before the codes were recorded
        ({"broker-3": 143}, (55.0, 20.0), True),  # the fault began after the restart
        ({"broker-3": 143}, (5.0, 10.0), True),  # it ended before the last lines
    ],
)
def test_a_rolling_restart_with_a_clean_exit_is_a_clean_stop_when_the_last_lines_were_lost(
    tmp_path: Path,
    exit_codes: dict[str, int] | None,
    window: tuple[float, float],
    flagged: bool,
) -> None:
    # a soft rolling restart stops each broker with SIGTERM in its own thread, after the
    # start line; its stop line holds the exit codes. Broker 3's last line is at 29 s and
    # the next start's first timed line at 50 s: only a fault that began before 50 s and
    # ended after 29 s can have restarted it.
    lines = _log(*_first_start(), (29.0, TERMINATING))
    lines += _log("start 2", (50.0, SKIPPING), (50.5, LOADED))
    start, lasting = window
    stop_detail = None if exit_codes is None else {"exit_codes": exit_codes}
    crash_history(
        [("f-1", "rolling-restart", start)],
        "broker-3",
        lasting=lasting,
        stop_detail=stop_detail,
        until=120,
    ).write(tmp_path / names.HISTORY_JSONL)
    r = check_run(log_run(tmp_path, {3: lines}))
    assert (KIND in r.anomalies) is flagged
    assert r.stats["startlog"]["clean_stops"] == (0 if flagged else 1)
    if flagged:
        (example,) = r.anomalies[KIND].examples
        assert example["needed_recovery_since"]["cause"] == "ended without a shutdown line"


@pytest.mark.parametrize("shutdown_logged", [False, True])
def test_one_rolling_restart_excuses_one_restart_of_each_broker(
    tmp_path: Path, shutdown_logged: bool
) -> None:
    # two restarts inside one clean rolling restart: the fault restarted the broker once
    # (whether or not that shutdown's last line reached the log); the second ending,
    # with no shutdown line, is unexplained
    last = SHUTDOWN if shutdown_logged else TERMINATING
    lines = _log(*_first_start(), (29.0, last))
    lines += _log("start 2", (40.0, LOADING), (40.5, LOADED), "start 3")
    lines += _log((50.0, SKIPPING), (50.5, LOADED))
    crash_history(
        [("f-1", "rolling-restart", 25.0)],
        "broker-3",
        lasting=30.0,
        stop_detail={"exit_codes": {"broker-3": 143}},
        until=120,
    ).write(tmp_path / names.HISTORY_JSONL)
    r = check_run(log_run(tmp_path, {3: lines}))
    assert r.stats["startlog"]["clean_stops"] == (0 if shutdown_logged else 1)
    (example,) = r.anomalies[KIND].examples
    assert example["needed_recovery_since"]["cause"] == "ended without a shutdown line"
    assert example["needed_recovery_since"]["log"].endswith("server.log:10")


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
    assert_tells_apart(SCENARIO, KIND, ("3.5.1", found), ("3.6.2", clean))


FIXTURES = Path(__file__).parent / "fixtures"
REAL_351 = f"kchaos-20261126-062959-c8ec-broker-3/{names.SERVER_LOG}"


# runs/k15375-351-s1 and k15375-362-s1 (2026-11-26), cut. On both, start A failed at its
# deadline without ever loading (its LogManager shut down right after "Fatal error");
# on 3.5.1 start B skipped, on 3.6.2 it logged "Recovering 19 logs ... since no clean
# shutdown file was found". Each run is as its own release's expectation says, and not
# as the other's.
@pytest.mark.parametrize(
    ("release", "stats", "skip", "other", "reason"),
    [
        pytest.param(
            "3.5.1",
            (0, 1, 1),
            Skip(f"{REAL_351}:40", 19, [f"{REAL_351}:30"]),
            "3.6.2",
            FORBIDDEN,
            id="3.5.1-shows-the-skip",
        ),
        pytest.param("3.6.2", (1, 0, 1), None, "3.5.1", MISSING, id="3.6.2-recovers"),
    ],
)
def test_the_real_run_of_each_release(
    tmp_path: Path,
    release: str,
    stats: tuple[int, int, int],
    skip: Skip | None,
    other: str,
    reason: str,
) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / f"k15375-{release.replace('.', '')}", run)
    r = check_run(run)
    _assert_skip(r, skip)
    assert r.valid is True
    found = r.stats["startlog"]
    assert (found["recovering"], found["skipping"], found["crashes"]) == stats
    assert judged(SCENARIO, release, r.to_json()).expected
    assert judged(SCENARIO, other, r.to_json()).reasons == (reason.format(KIND),)
