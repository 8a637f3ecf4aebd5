"""Run every checker over one history and combine their verdicts.

``check_run(run_dir)`` reads ``run_dir/history.jsonl`` (and ``run.json``), writes
``run_dir/results.json`` and returns :class:`Results`; ``check_history(path, config)``
does the checking without writing anything.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson

from harness.checker.availability import check_availability
from harness.checker.config import RunConfig
from harness.checker.durability import check_durability
from harness.checker.examples import add_line_indexes
from harness.checker.facts import Facts
from harness.checker.isr import check_isr
from harness.checker.model import Anomaly, CheckOutcome, Results, combine
from harness.checker.ordering import check_ordering
from harness.checker.parse import read_history
from harness.checker.reads import check_reads
from harness.errors import HistoryError

Checker = Callable[[Facts, RunConfig], CheckOutcome]

CHECKERS: dict[str, Checker] = {
    "durability": check_durability,
    "reads": check_reads,
    "ordering": check_ordering,
    "isr": check_isr,
    "availability": check_availability,
}


def run_checker(name: str, checker: Checker, facts: Facts, config: RunConfig) -> CheckOutcome:
    """One checker; a crash becomes an ``unknown`` outcome carrying the error."""
    try:
        return checker(facts, config)
    except Exception as exc:  # noqa: BLE001 - any checker bug must not hide the others
        return CheckOutcome(name, valid="unknown", error=f"{type(exc).__name__}: {exc}")


def check_facts(
    facts: Facts, config: RunConfig | None = None, checkers: Sequence[str] | None = None
) -> Results:
    config = config or RunConfig()
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
    for name, out in outcomes.items():
        anomalies.update(out.anomalies)
        stats[name] = out.stats
    try:
        add_line_indexes(facts.path, anomalies)
    except Exception as exc:  # noqa: BLE001 - examples are a courtesy, the verdict stands
        facts.warnings.append(f"could not look up example lines: {type(exc).__name__}: {exc}")
    stats["check_seconds"] = round(time.perf_counter() - started, 3)
    return Results(
        valid=combine([o.valid for o in outcomes.values()]),
        anomalies=anomalies,
        stats=stats,
        checkers=outcomes,
        warnings=list(facts.warnings),
        history=facts.path,
    )


def check_history(
    path: str | Path, run_config: RunConfig | None = None, checkers: Sequence[str] | None = None
) -> Results:
    """Check one history file (raises HistoryError when it cannot be read)."""
    started = time.perf_counter()
    facts = read_history(path)
    parsed = time.perf_counter() - started
    results = check_facts(facts, run_config, checkers)
    results.stats["read_seconds"] = round(parsed, 3)
    return results


def check_run(run_dir: str | Path, *, write: bool = True) -> Results:
    """Check ``run_dir/history.jsonl`` with ``run_dir/run.json``; write results.json."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise HistoryError("no such run directory", file=str(run_dir))
    history = run_dir / "history.jsonl"
    if not history.exists():
        raise HistoryError("no history.jsonl in the run directory", file=str(run_dir))
    results = check_history(history, RunConfig.load(run_dir))
    if write:
        out = run_dir / "results.json"
        tmp = out.with_suffix(".json.tmp")
        tmp.write_bytes(orjson.dumps(results.to_json(), option=orjson.OPT_INDENT_2))
        tmp.replace(out)
    return results
