"""Run directories: which ones to analyse, which history file each one has, and run.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.names import HISTORY_JSONL
from kchaos.harness.rundir.rundir import RunDir
from kchaos.harness.rundir.runjson import load_run


@dataclass(frozen=True)
class RunInput:
    """One run directory to analyse; ``key`` is its small integer id inside the job."""

    key: int
    rundir: RunDir
    fmt: str  # "jsonl" or "parquet"

    @property
    def path(self) -> Path:
        return self.rundir.path

    @property
    def history(self) -> Path:
        rd = self.rundir
        return rd.history if self.fmt == "jsonl" else rd.history_parquet

    @property
    def name(self) -> str:
        return self.path.name


def _is_run(rd: RunDir) -> bool:
    return rd.history.is_file() or rd.history_parquet.is_dir()


def _format_of(rd: RunDir, prefer: str) -> str:
    jsonl, parquet = rd.history, rd.history_parquet
    if prefer == "jsonl" or not parquet.is_dir():
        if not jsonl.is_file():
            raise HistoryError(f"no {HISTORY_JSONL} here", file=str(rd))
        return "jsonl"
    if prefer == "parquet" or not jsonl.is_file():
        return "parquet"
    # auto: the Parquet copy only when it is at least as new as the history it copies.
    return "parquet" if parquet.stat().st_mtime >= jsonl.stat().st_mtime else "jsonl"


def resolve_runs(args: list[Path], prefer: str = "auto") -> list[RunInput]:
    """Expand the arguments into run directories.

    An argument is a run directory (it holds history.jsonl or history.parquet) or a
    directory of run directories. Anything else is an error naming the argument.
    """
    if not args:
        raise HistoryError("no run directory given")
    found: list[RunDir] = []
    for arg in args:
        if not arg.exists():
            raise HistoryError("no such directory", file=str(arg))
        if not arg.is_dir():
            raise HistoryError("not a directory (give the run directory)", file=str(arg))
        # the argument first, then the folders in it
        given, *inside = (RunDir(d.resolve()) for d in [arg, *arg.iterdir()] if d.is_dir())
        if _is_run(given):
            found.append(given)
            continue
        children = sorted((rd for rd in inside if _is_run(rd)), key=lambda rd: rd.path)
        if not children:
            raise HistoryError(
                f"neither a run directory (no {HISTORY_JSONL}) nor a directory of runs",
                file=str(arg),
            )
        found.extend(children)
    unique = list(dict.fromkeys(found))
    return [RunInput(i, rd, _format_of(rd, prefer)) for i, rd in enumerate(unique)]


# Settings the cross-run table shows, by the names Kafka gives them.
KEY_CONFIGS: tuple[str, ...] = (
    "acks",
    "enable.idempotence",
    "min.insync.replicas",
    "replication.factor",
    "unclean.leader.election.enable",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "flush.messages",
    "flush.ms",
)


def _walk(node: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str, Any]]:
    out: list[tuple[tuple[str, ...], str, Any]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, dict | list):
                out.extend(_walk(value, (*path, str(key))))
            else:
                out.append((path, str(key), value))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out.extend(_walk(value, (*path, str(i))))
    return out


def _config_values(run: dict[str, Any], key: str) -> str | None:
    """Every distinct value ``key`` has anywhere in run.json, joined ("all", "1|all")."""
    names = {key, key.replace(".", "_")}  # "replication_factor" as scenario files spell it
    values = sorted({str(v).lower() for _, k, v in _walk(run) if k in names and v is not None})
    if not values:
        # Kafka env style (KAFKA_MIN_INSYNC_REPLICAS) as the images take them.
        env = "KAFKA_" + key.upper().replace(".", "_")
        values = sorted({str(v).lower() for _, k, v in _walk(run) if k == env})
    return "|".join(values) if values else None


def run_facts(path: Path) -> dict[str, Any]:
    """Scenario, Kafka version and key configs from run.json (None where not stated)."""
    run = load_run(path, missing_ok=True)
    facts: dict[str, Any] = {
        "run_id": run.run_id or path.name,
        "scenario": run.scenario_name,
        "kafka_version": run.kafka_version,
        "seed": run.seed,
        "started": run.start,
    }
    for key in KEY_CONFIGS:
        facts[key] = _config_values(dict(run.raw), key)
    for name in ("run_id", "scenario", "kafka_version", "seed", "started"):
        if facts[name] is not None:
            facts[name] = str(facts[name])
    return facts


def txn_timeout_ms(path: Path) -> int:
    """The transaction timeout the run's producers ran with: the checker's own setting
    (:func:`~kchaos.harness.rundir.runjson.run_settings` of run.json's typed scenario), so
    the job and ``kchaos check`` judge ``hanging-transaction`` by the same number; Kafka's
    default (60 s) where there is no run.json."""
    return load_run(path, missing_ok=True).settings.transaction_timeout_ms
