"""``recovery-skipped``: a broker start skipped log recovery that its logs still needed.

Kafka decides at each start whether to recover a log directory from one file:
``.kafka_cleanshutdown``. ``LogManager.loadLogs`` logs, per directory, either

    Recovering 6 logs from /var/lib/kafka/data since no clean shutdown file was found
    Skipping recovery of 6 logs from /var/lib/kafka/data since clean shutdown file was found

(the wording of 3.5 and later), deletes the file, loads every log and logs ``Loaded N
logs in Xms``. ``LogManager.shutdown`` writes the file again. KAFKA-15375 (fixed in 3.5.2
and 3.6.0, commit 703e1d9f): a KRaft start that fails before its logs are loaded still
runs ``LogManager.shutdown``, which writes the file into a directory that was never
recovered; the next start then skips the recovery the unclean stop before required.

Judged from each broker's own log (``logs/<container>/server.log``, every start of the
container in one file) and the history's crash faults, in time order. A directory *needs
recovery* from

- a ``Recovering ... since no clean shutdown file was found`` line (Kafka says so), or
- a crash fault (``kill``, ``hard-reboot``, ``power-loss``) on the broker while its
  process was running and had begun loading its logs in that start (a ``Loading logs
  from log dirs``, ``Recovering``, ``Skipping`` or ``Loaded`` line since the start's
  first launcher line): the file was deleted then, and what was appended since is not
  all on disk. A
  crash of a process that never reached loading leaves the directory as it was, and one
  of a process that had already exited (its last line ``Exiting Kafka``, ``Halting
  Kafka`` or ``shut down completed``) is no crash. A process that began loading and
  ended with none of these lines and no crash fault (the next launcher line comes first)
  counts as crashed too, unless a ``term`` fault stopped it and its start line's
  ``exit_codes`` gives the container's exit as 143 or 0: the JVM ran its shutdown (which
  writes the file) and only the last lines were lost (seen on 4.4.0: Log4j gave up its
  own shutdown hook and the lines after 2 s of shutting down never reached the log).
  The same holds for a ``rolling-restart`` whose stop line's ``exit_codes`` gives 143 or
  0 for the broker, when the process's last timed line and the next start's first one
  fit the fault's window (each such fault excuses one restart of each of its brokers);

until a ``Loaded N logs`` line (every log was loaded, and recovered where needed). A
``Skipping recovery`` line while the directory needs recovery is one ``recovery-skipped``.
The failed starts in between (``Fatal error during broker startup``) are named in the
example: they are what wrote the file.

Reported, never invalid on its own: what the unrecovered logs hold decides whether data
went wrong, and the other checkers judge that. Without the brokers' logs the kind is
unjudged (results.json's ``unjudged``) where a fault stopped or restarted a broker
(:data:`RESTARTS`, a ``disk-full`` that restarted one), and judged absent where none did.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kchaos.harness.checker.facts import Facts, Fault
from kchaos.harness.checker.model import CheckOutcome
from kchaos.harness.checker.recovery import node_ids, target_brokers
from kchaos.harness.checker.sources import BROKER_LOGS, Source
from kchaos.harness.rundir.names import LOGS_DIR, RUN_JSON, SERVER_LOG
from kchaos.harness.rundir.nodelogs import (
    NodeLog,
    entry_unix_ms,
    history_time_ns,
    timed_node_logs,
)
from kchaos.harness.rundir.rundir import RunDir
from kchaos.harness.rundir.runjson import RunSettings

KIND = "recovery-skipped"
#: Faults that stop a broker's process without a shutdown.
CRASHES = frozenset({"kill", "hard-reboot", "power-loss"})
#: The fault that stops a broker with SIGTERM, and the container exit codes of a JVM
#: that ran its shutdown hooks after it (128 + SIGTERM, or Kafka's own exit 0); 137
#: means Docker's stop timed out and it sent SIGKILL.
TERM = "term"
CLEAN_EXITS = frozenset({0, 143})
#: The fault that restarts brokers one by one; its stop line has their exit codes.
ROLLING = "rolling-restart"
#: The first lines of every container start: the image's launcher prints the properties
#: it was given (``[kchaos]   name=value``) before the JVM starts.
LAUNCHER = "[kchaos]"
#: A process that logged one of these has ended (a failed start, a halt, a shutdown).
EXITS = ("Exiting Kafka", "Halting Kafka", "shut down completed")
_RECOVERING = re.compile(r"Recovering (\d+) logs from (\S+) since no clean shutdown file was found")
_SKIPPING = re.compile(r"Skipping recovery of (\d+) logs from (\S+) since clean shutdown file")
_LOADED = re.compile(r"Loaded (\d+) logs in (\d+)ms")
_LOADING = "Loading logs from log dirs"
_FATAL = "Fatal error during broker startup"
_NS = 1e9
SOURCES = (Source(BROKER_LOGS, (KIND,)),)
#: The faults that stop a broker's process (a crash, a clean stop or a restart): the
#: starts after them are what the kind is about. ``disk-full`` restarts a broker that
#: Kafka halted (its stop line's ``restarted``).
RESTARTS = CRASHES | {TERM, ROLLING}
DISK_FULL = "disk-full"


@dataclass(frozen=True)
class LogEvent:
    """One line of a broker's log that the judgement reads."""

    kind: str  # start, loading, recovering, skipping, loaded, fatal, exit
    where: str  # <container>/server.log:<line>
    time: int | None  # history time base (ns); None: the line has no timestamp
    text: str
    logs: int | None = None
    directory: str | None = None
    # a start's: the time of the last timestamped line before it (of any kind, else of
    # the last judged line that has one): the latest moment the previous process is
    # known to have run; None when nothing before it has a time
    before: int | None = None


@dataclass
class StartLog:
    """The start-related lines of every broker log the run kept, per broker."""

    brokers: dict[int, list[LogEvent]] = field(default_factory=dict)


def classify(line: str) -> tuple[str, int | None, str | None] | None:
    """(kind, logs, directory) of a line the judgement reads, None for any other line."""
    if line.startswith(LAUNCHER):
        return "start", None, None
    m = _RECOVERING.search(line)
    if m:
        return "recovering", int(m.group(1)), m.group(2)
    m = _SKIPPING.search(line)
    if m:
        return "skipping", int(m.group(1)), m.group(2)
    m = _LOADED.search(line)
    if m:
        return "loaded", int(m.group(1)), None
    if _LOADING in line:
        return "loading", None, None
    if _FATAL in line:
        return "fatal", None, None
    if any(mark in line for mark in EXITS):
        return "exit", None, None
    return None


def read_start_log(node: NodeLog, origin_unix_ns: int) -> list[LogEvent]:
    """The lines of one node's log that the judgement reads, in order; consecutive
    launcher lines are one start."""
    events: list[LogEvent] = []
    latest: str | None = None  # the latest line that can begin with a timestamp
    for number, text in node.lines():
        found = classify(text)
        if found is None:
            if text.startswith("["):
                latest = text
            continue
        kind, logs, directory = found
        before = None
        if kind == "start":
            if events and events[-1].kind == "start":
                continue
            # parsed here only, not for every line: logs run to millions of lines
            before_ms = None if latest is None else entry_unix_ms(latest)
            if before_ms is not None:
                before = history_time_ns(before_ms, origin_unix_ns)
            else:
                before = next((e.time for e in reversed(events) if e.time is not None), None)
        else:
            latest = text
        unix_ms = entry_unix_ms(text)
        time = None if unix_ms is None else history_time_ns(unix_ms, origin_unix_ns)
        where = node.where(number)
        events.append(LogEvent(kind, where, time, text.strip(), logs, directory, before))
    return events


def load_start_log(rd: RunDir, origin_unix_ns: int | None = None) -> StartLog | None:
    """Every broker log the run kept; None when it kept none or run.json has no
    ``history_start_unix_ns`` (the lines cannot be put on the history's time base)."""
    found = timed_node_logs(rd, origin_unix_ns, role="broker")
    if found is None:
        return None
    out = StartLog()
    for node in found.nodes:
        assert node.node_id is not None  # a broker's log: node_of named the node
        out.brokers[node.node_id] = read_start_log(node, found.origin_unix_ns)
    return out


@dataclass
class _Dir:
    """What one broker's log says about its log directory, line by line."""

    needs: dict[str, Any] | None = None  # why it needs recovery, or None
    running: bool = False
    loading_began: bool = False
    failed_starts: list[str] = field(default_factory=list)

    def need(self, why: dict[str, Any]) -> None:
        if self.needs is None:
            self.needs = why
            self.failed_starts = []


def check_start_log(facts: Facts, config: RunSettings) -> CheckOutcome:
    out = CheckOutcome("startlog")
    log = facts.start_log
    if log is None:
        absent = (
            f"no broker log on the history's time base ({LOGS_DIR}/<broker>/{SERVER_LOG}"
            f" and {RUN_JSON}'s history_start_unix_ns)"
        )
        restarted = restarting_faults(facts)
        if restarted:
            out.not_read(BROKER_LOGS, f"{absent}; brokers restarted by {', '.join(restarted)}")
        else:
            out.not_read(BROKER_LOGS, f"{absent}; no fault restarted a broker", needed=False)
        out.stats = {"source": None, "note": "no broker logs kept: recovery not judged"}
        return out.settle()
    out.read(BROKER_LOGS)
    counts = {"starts": 0, "recovering": 0, "skipping": 0, "crashes": 0, "clean_stops": 0, KIND: 0}
    for broker, events in sorted(log.brokers.items()):
        stops = sorted(
            (
                f
                for f in facts.faults
                if f.error is None
                and broker in target_brokers(f)
                and (f.fault in CRASHES or _clean_term(f, broker))
            ),
            key=lambda f: (f.start_time, f.start_index),
        )
        restarts = [
            f
            for f in facts.faults
            if f.error is None and f.fault == ROLLING and _clean_exit(f.stop_detail, broker)
        ]
        state = _Dir()
        pending = [(fault.start_time, fault) for fault in stops]
        # a launcher line has no timestamp: it is placed before the next line that has one
        upper: list[int | None] = [None] * len(events)
        following: int | None = None
        for i in range(len(events) - 1, -1, -1):
            if events[i].time is not None:
                following = events[i].time
            upper[i] = following
        for i, event in enumerate(events):
            bound = upper[i]
            while pending and (bound is None or pending[0][0] <= bound):
                if event.kind != "start" and event.time is None:
                    break
                _stopped(state, pending.pop(0)[1], counts)
            if event.kind == "start" and i:
                # a clean rolling restart accounts for one start of the broker in its
                # window, whether or not the shutdown's lines reached the log
                restart = _restart_between(restarts, event.before, bound)
                if restart is not None:
                    restarts.remove(restart)
                if state.running:
                    # the previous process ended with no shutdown line and no crash fault
                    if restart is not None:
                        counts["clean_stops"] += 1
                        state.running = False
                    else:
                        why = {"cause": "ended without a shutdown line", "log": event.where}
                        _ended(state, why)
            _apply(state, broker, event, counts, out)
        for _, fault in pending:
            _stopped(state, fault, counts)
    out.stats = {"source": f"{LOGS_DIR}/<broker>/{SERVER_LOG}", **counts}
    return out.settle()


def restarting_faults(facts: Facts) -> list[str]:
    """The faults of the run that stopped or restarted a broker's process (``id
    (fault)``): without them no start can have skipped a recovery it needed, and a run
    without broker logs has nothing to judge."""
    out = []
    for f in facts.faults:
        if f.error is not None or not target_brokers(f):
            continue
        if f.fault in RESTARTS or (f.fault == DISK_FULL and f.stop_detail.get("restarted")):
            out.append(f"{f.id} ({f.fault})")
    return out


def _clean_term(fault: Fault, broker: int) -> bool:
    """A ``term`` fault whose start line says the broker's container exited cleanly."""
    return fault.fault == TERM and _clean_exit(fault.detail, broker)


def _clean_exit(detail: dict[str, Any], broker: int) -> bool:
    """The ``exit_codes`` of a fault's line give a clean exit for the broker."""
    codes = detail.get("exit_codes")
    if not isinstance(codes, dict):
        return False
    return broker in node_ids(name for name, code in codes.items() if code in CLEAN_EXITS)


def _restart_between(restarts: list[Fault], last: int | None, first: int | None) -> Fault | None:
    """The first clean rolling restart that can have stopped the process between its last
    timed line (``last``) and the next start's first timed line (``first``): the stop
    came after the fault's start and before its stop. None when no such fault is left."""
    for fault in restarts:
        began_in_time = first is None or fault.start_time <= first
        ended_after = last is None or fault.stop_time is None or last <= fault.stop_time
        if began_in_time and ended_after:
            return fault
    return None


def _stopped(state: _Dir, fault: Fault, counts: dict[str, int]) -> None:
    """A crash fault, or a clean ``term``, stopped the broker's process (if it ran)."""
    if not state.running:
        return
    if fault.fault == TERM:
        counts["clean_stops"] += 1
        state.running = False
        return
    counts["crashes"] += 1
    _ended(
        state,
        {
            "cause": "crash",
            "fault": fault.id,
            "fault_name": fault.fault,
            "time_s": round(fault.start_time / _NS, 6),
            "index": fault.start_index,
        },
    )


def _ended(state: _Dir, why: dict[str, Any]) -> None:
    """The running process stopped without a shutdown: what it loaded is unflushed."""
    state.running = False
    if state.loading_began:
        state.need(why)


def _apply(
    state: _Dir, broker: int, event: LogEvent, counts: dict[str, int], out: CheckOutcome
) -> None:
    if event.kind == "start":
        counts["starts"] += 1
        state.running, state.loading_began = True, False
    elif event.kind == "exit":
        state.running = False
    elif event.kind == "fatal":
        if state.needs is not None:
            state.failed_starts.append(event.where)
    elif event.kind == "loading":
        state.loading_began = True
    elif event.kind == "loaded":
        state.loading_began = True
        state.needs = None
    elif event.kind == "recovering":
        counts["recovering"] += 1
        state.loading_began = True
        state.need({"cause": "no clean shutdown file", "log": event.where, "line": event.text})
    elif event.kind == "skipping":
        counts["skipping"] += 1
        state.loading_began = True
        if state.needs is not None:
            counts[KIND] += 1
            out.anomaly(KIND).add(
                {
                    "broker": broker,
                    "directory": event.directory,
                    "logs": event.logs,
                    "log": event.where,
                    "line": event.text,
                    "time_s": None if event.time is None else round(event.time / _NS, 6),
                    "needed_recovery_since": state.needs,
                    "failed_starts": list(state.failed_starts),
                }
            )
