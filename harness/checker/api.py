"""Run every checker over one history and combine their verdicts.

``check_run(run_dir)`` reads ``run_dir/history.jsonl`` (and ``run.json``), writes
``run_dir/results.json`` and returns :class:`Results`; ``check_history(path, config)``
does the checking without writing anything.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from kchaos.harness.checker import (
    availability,
    crashfiles,
    durability,
    fencing,
    isr,
    ordering,
    reads,
    stall,
    startlog,
    transactions,
)
from kchaos.harness.checker.availability import check_availability
from kchaos.harness.checker.controller import load_controller, read_controller
from kchaos.harness.checker.crashfiles import check_crash_files
from kchaos.harness.checker.durability import check_durability
from kchaos.harness.checker.effects import fault_effects
from kchaos.harness.checker.examples import add_line_indexes
from kchaos.harness.checker.facts import Facts
from kchaos.harness.checker.fencing import check_fencing
from kchaos.harness.checker.isr import check_isr
from kchaos.harness.checker.leaderlog import LeaderLog, load_leader_log
from kchaos.harness.checker.model import MAX_EXAMPLES, Anomaly, CheckOutcome, Results, combine
from kchaos.harness.checker.nogc import paused_gc
from kchaos.harness.checker.ordering import check_ordering
from kchaos.harness.checker.parse import read_history
from kchaos.harness.checker.reads import check_reads
from kchaos.harness.checker.replicas import KIND as REPLICAS_KIND
from kchaos.harness.checker.replicas import attach_causes, attach_stories, compare_replicas
from kchaos.harness.checker.reread import KIND as REREAD_KIND
from kchaos.harness.checker.reread import compare_reread
from kchaos.harness.checker.sources import (
    CONTROLLER,
    REPLICAS,
    REREAD,
    Reading,
    Source,
    sources_json,
    unjudged_of,
)
from kchaos.harness.checker.stall import check_stall
from kchaos.harness.checker.startlog import check_start_log, load_start_log
from kchaos.harness.checker.transactions import check_transactions
from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.anomalies import KINDS
from kchaos.harness.rundir.loglines import line_evidence
from kchaos.harness.rundir.names import CONTROLLER_JSONL, HISTORY_JSONL, REPLICAS_JSONL, RUN_JSON
from kchaos.harness.rundir.rundir import RunDir
from kchaos.harness.rundir.runjson import RunSettings

Checker = Callable[[Facts, RunSettings], CheckOutcome]
LOG_WARNINGS = 20  # unreadable node-log lines named in the warnings; the rest counted

CHECKERS: dict[str, Checker] = {
    "durability": check_durability,
    "reads": check_reads,
    "ordering": check_ordering,
    "isr": check_isr,
    "availability": check_availability,
    # controller.jsonl's broker lines: brokers fenced while no fault touched them
    "fencing": check_fencing,
    # the sends, the leaders and controller.jsonl: a broker registered but serving
    # nothing for longer than its session (KAFKA-15046)
    "stall": check_stall,
    # the brokers' own logs: a start that skipped the recovery its logs needed
    "startlog": check_start_log,
    # the crash faults' start lines: leader-epoch checkpoints a crash emptied (KAFKA-16541)
    "crash-files": check_crash_files,
    # history format 1.2; also the transaction values' share of lost-write, unseen and
    # aborted-read (merged with the other checkers' counts of those kinds below)
    "transactions": check_transactions,
}
#: The sources each checker reads and the kinds resting on each (docs/checker.md,
#: "Evidence"); the two comparisons made beside the checkers have theirs too.
SOURCES: dict[str, tuple[Source, ...]] = {
    "durability": durability.SOURCES,
    "reads": reads.SOURCES,
    "ordering": ordering.SOURCES,
    "isr": isr.SOURCES,
    "availability": availability.SOURCES,
    "fencing": fencing.SOURCES,
    "stall": stall.SOURCES,
    "startlog": startlog.SOURCES,
    "crash-files": crashfiles.SOURCES,
    "transactions": transactions.SOURCES,
    # divergence among the replicas of the final ISR: the dumps, and controller.jsonl
    # for that ISR (without it a disagreement is evidence only)
    "replicas": (Source(REPLICAS, (REPLICAS_KIND,)), Source(CONTROLLER, (REPLICAS_KIND,))),
    # the independent reader: a check of the harness (harness_errors), no kind
    "reread": (Source(REREAD, ()),),
}


def run_checker(name: str, checker: Checker, facts: Facts, config: RunSettings) -> CheckOutcome:
    """One checker; a crash becomes an ``unknown`` outcome carrying the error."""
    try:
        return checker(facts, config)
    except Exception as exc:  # noqa: BLE001 - any checker bug must not hide the others
        return CheckOutcome(name, valid="unknown", error=f"{type(exc).__name__}: {exc}")


def check_facts(
    facts: Facts, config: RunSettings | None = None, checkers: Sequence[str] | None = None
) -> Results:
    config = config or RunSettings()
    names = list(checkers) if checkers is not None else list(CHECKERS)
    started = time.perf_counter()
    outcomes = {n: run_checker(n, CHECKERS[n], facts, config) for n in names}
    anomalies: dict[str, Anomaly] = {}
    stats: dict = {
        "history": {
            "lines": facts.lines,
            "partitions": len(facts.tps),
            "values": len(facts.value_list),
            **facts.counts,
        }
    }
    if facts.controller is not None:
        stats["controller"] = {
            "file": facts.controller.path,
            "lines": facts.controller.lines,
            "partitions": len(facts.controller.partitions),
            "brokers": len(facts.controller.brokers),
        }
        if facts.controller.incomplete:
            # a metadata record could not be decoded: these partitions' leaders, ISRs and
            # ELRs are judged from the monitor's samples instead (docs/run-directory.md)
            gaps = sorted(facts.controller.incomplete)
            stats["controller"]["incomplete_partitions"] = [f"{t}/{p}" for t, p in gaps]
            stats["controller"]["note"] = (
                "the controller's record is incomplete for these partitions (a metadata"
                " record could not be decoded): judged from the monitor's samples instead"
            )
    for name, out in outcomes.items():
        for kind, found in out.anomalies.items():
            merge(anomalies, kind, found)
        stats[name] = out.stats
        settle_unjudged(name, out)
    try:
        add_line_indexes(facts.path, anomalies)
    except Exception as exc:  # noqa: BLE001 - examples are a courtesy, the verdict stands
        facts.warnings.append(f"could not look up example lines: {type(exc).__name__}: {exc}")
    stats["check_seconds"] = round(time.perf_counter() - started, 3)
    valid = combine([o.valid for o in outcomes.values()])
    reasons = missing_evidence(facts) if valid is not False else []
    results = Results(
        valid="unknown" if reasons else valid,
        anomalies=anomalies,
        stats=stats,
        checkers=outcomes,
        warnings=list(facts.warnings),
        history=facts.path,
        reasons=reasons,
    )
    settle_evidence(results)
    return results


def settle_unjudged(name: str, out: CheckOutcome) -> None:
    """The kinds ``out`` could not judge (a needed source not read, or its own reason),
    leaving out those it found; a checker that judged none of its kinds takes no part
    in the verdict (``valid`` None). A checker that crashed is ``unknown`` already."""
    if out.error is not None:
        return
    declared = SOURCES.get(name, ())
    unjudged = unjudged_of(declared, out.sources, out.unjudged)
    out.unjudged = {k: why for k, why in unjudged.items() if k not in out.anomalies}
    kinds = {k for src in declared for k in src.kinds}
    if kinds and kinds <= set(out.unjudged) and out.valid is True:
        out.valid = None


def settle_evidence(results: Results, extra: Sequence[tuple[str, dict[str, Reading]]] = ()) -> None:
    """results.json's ``evidence.sources`` and ``unjudged`` from every checker's readings
    (``extra``: the comparisons that are not checkers, by name, with theirs)."""
    uses = [(SOURCES.get(n, ()), o.sources) for n, o in results.checkers.items()]
    uses += [(SOURCES[n], readings) for n, readings in extra]
    results.evidence["sources"] = sources_json(uses)
    reasons = [out.unjudged for out in results.checkers.values()]
    reasons += [unjudged_of(SOURCES[n], readings, {}) for n, readings in extra]
    unjudged: dict[str, str] = {}
    for found in reasons:
        for kind, why in found.items():
            if results.count(kind) == 0:
                unjudged[kind] = f"{unjudged[kind]}; {why}" if kind in unjudged else why
    results.unjudged = dict(sorted(unjudged.items(), key=lambda kv: KINDS.index(kv[0])))


def merge(anomalies: dict[str, Anomaly], kind: str, found: Anomaly) -> None:
    """Add one checker's count of ``kind`` to what others found of it (each checker
    counts disjoint occurrences: a transaction's values, or plain sends)."""
    have = anomalies.get(kind)
    if have is None:
        anomalies[kind] = found
        return
    merged = Anomaly(
        have.count + found.count,
        (have.examples + found.examples)[:MAX_EXAMPLES],
        have.allowed + found.allowed,
        dict(Counter(have.causes) + Counter(found.causes)),
    )
    anomalies[kind] = merged


def missing_evidence(facts: Facts) -> list[str]:
    """Why a run in which no checker found anything still cannot be called valid.

    Valid needs evidence: sends to judge, and a drain that completed for at least one
    partition. A run that recorded nothing (an empty or torn history) or never got to
    its drain is ``unknown``, with these reasons in results.json and on the console.
    """
    reasons = []
    if not facts.counts.get("send") and not facts.counts.get("txn"):
        reasons.append("no sends recorded")
    if not facts.drain_ends:
        reasons.append("nothing drained")
    return reasons


def check_history(
    path: str | Path,
    run_config: RunSettings | None = None,
    checkers: Sequence[str] | None = None,
    controller: str | Path | None = None,
) -> Results:
    """Check one history file (raises HistoryError when it or the controller's record
    cannot be read). ``controller`` is a controller.jsonl; by default the one beside the
    history, where there is one. The cyclic garbage collector is paused meanwhile (see
    :mod:`.nogc`)."""
    with paused_gc():
        return _check_history(path, RunDir(Path(path).parent), run_config, checkers, controller)


def _check_history(
    path: str | Path,
    rd: RunDir,  # the run directory the history is in: its other files are read from it
    run_config: RunSettings | None,
    checkers: Sequence[str] | None,
    controller: str | Path | None,
) -> Results:
    started = time.perf_counter()
    facts = read_history(path)
    if controller is None:
        facts.controller = load_controller(rd)
    else:
        facts.controller = read_controller(controller)
    if facts.controller is not None:
        facts.warnings.extend(facts.controller.warnings)
    facts.leader_log = leader_log(rd, facts.warnings)
    facts.start_log = load_start_log(rd)
    parsed = time.perf_counter() - started
    results = check_facts(facts, run_config, checkers)
    results.stats["read_seconds"] = round(parsed, 3)
    disagreement = compare_reread(facts, rd.reread)
    absent = Reading(False, f"no {REREAD} beside the history")
    reread = {REREAD: absent if disagreement is None else Reading(True)}
    if disagreement is not None:
        results.stats["independent_reader"] = {"disagreements": disagreement.count}
        if disagreement.count:
            results.harness_errors[REREAD_KIND] = disagreement
            results.reasons.append(
                f"the independent reader disagrees with the drain at {disagreement.count}"
                " position(s): the harness's evidence is in doubt"
            )
            if results.valid is True:
                results.valid = "unknown"
    replicas = judge_replicas(results, facts, rd.replicas)
    extra = [("reread", reread)]
    if replicas is not None:
        extra.append(("replicas", replicas))
    settle_evidence(results, extra)
    results.evidence["faults"] = [e.to_json() for e in fault_effects(facts, rd)]
    if run_config is not None and run_config.log_lines:
        # Kafka's own log of its defence, where the scenario names one (expect.log_lines)
        results.evidence["lines"] = line_evidence(run_config.log_lines, rd.node_logs())
    return results


def leader_log(rd: RunDir, warnings: list[str]) -> LeaderLog | None:
    """The leaders' ``Shrinking ISR`` and ``ISR updated`` lines of the nodes' logs beside
    the history, where the run kept them; what could not be read goes to ``warnings``."""
    log = load_leader_log(rd)
    if log is None:
        if rd.node_logs():
            warnings.append(
                f"the nodes' logs are kept but {RUN_JSON} has no history_start_unix_ns:"
                " ISR shrink causes are by elimination, and acked-below-min-isr does not"
                " wait for the leaders' 'ISR updated' lines"
            )
        return None
    warnings.extend(log.warnings[:LOG_WARNINGS])
    if len(log.warnings) > LOG_WARNINGS:
        warnings.append(f"... and {len(log.warnings) - LOG_WARNINGS} more unreadable log lines")
    return log


def judge_replicas(results: Results, facts: Facts, path: Path) -> dict[str, Reading] | None:
    """The replica-by-replica comparison (replicas.jsonl beside the history), where the
    run has one: its stats, its anomaly, the replica story of each duplicate and lost
    write. A divergence among in-sync replicas makes the run invalid. Returns the
    readings of its sources where the run has no file (no checker entry then)."""
    check = compare_replicas(facts, path)
    if check is None:
        return {
            REPLICAS: Reading(False, f"no {REPLICAS_JSONL} beside the history"),
            CONTROLLER: controller_reading(facts),
        }
    results.stats["replicas"] = check.stats
    outcome = CheckOutcome("replicas", stats={"disagreements_in_sync": check.divergence.count})
    outcome.read(REPLICAS)
    outcome.sources[CONTROLLER] = controller_reading(facts)
    if check.divergence.count:
        outcome.anomalies[REPLICAS_KIND] = check.divergence
        results.anomalies[REPLICAS_KIND] = check.divergence
        outcome.valid = False
        results.valid = False
    settle_unjudged("replicas", outcome)
    results.checkers["replicas"] = outcome
    attach_stories(check.logs, results.anomalies)
    attach_causes(facts, check.logs, results.anomalies)
    return None


def controller_reading(facts: Facts) -> Reading:
    if facts.controller is None:
        return Reading(False, f"no {CONTROLLER_JSONL} beside the history: no final ISR")
    return Reading(True)


def check_run(run_dir: RunDir | str | Path, *, write: bool = True) -> Results:
    """Check ``run_dir/history.jsonl`` with ``run_dir/run.json``; write results.json."""
    rd = RunDir.of(run_dir)
    if not rd.path.is_dir():
        what = "not a directory" if rd.path.exists() else "no such run directory"
        raise HistoryError(what, file=str(rd))
    history = rd.history
    if not history.exists():
        raise HistoryError(f"no {HISTORY_JSONL} in the run directory", file=str(rd))
    if not history.is_file():
        raise HistoryError("is not a regular file", file=str(history))
    if write and rd.results.is_dir():
        raise HistoryError("is in the way: not a regular file", file=str(rd.results))
    settings = RunSettings.load(rd.path)
    with paused_gc():  # as check_history, with the run's own RunDir
        results = _check_history(history, rd, settings, None, None)
    if write:
        write_results(rd, results)
    return results


def write_results(rd: RunDir, results: Results) -> None:
    """Write results.json whole or not at all (no ``.tmp`` left behind on failure):
    :meth:`RunDir.write_results`, with a failure to write as bad input (exit 3)."""
    try:
        rd.write_results(results.to_json())
    except OSError as exc:
        raise HistoryError(f"cannot write: {exc.strerror or exc}", file=str(rd.results)) from None
