"""Run directories holding brokers' own ``server.log``, for the checker tests that read
them (the leaders' ``Shrinking ISR`` and ``ISR updated`` lines, a broker's start): the
synthetic runs' time origin, a log4j timestamp for a time of the history, and the writer
of run.json with each broker's log.

(A module of its own, not conftest.py: test modules import from it by a unique name.)"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import orjson

from kchaos.harness.rundir import RunDir, names

S = 1_000_000_000
MS = 1_000_000
ORIGIN = 1_795_000_000_000_000_000  # history_start_unix_ns of the synthetic runs
CONTAINER = "kchaos-test-broker-{}"  # a broker's container, by its id


def stamp(time_ns: int) -> str:
    """The log4j timestamp (UTC, to the millisecond) of ``time_ns`` on the synthetic
    runs' time base, as a broker prints it."""
    unix_ms = (ORIGIN + time_ns) // MS
    when = datetime.fromtimestamp(unix_ms // 1000, UTC)
    return f"[{when:%Y-%m-%d %H:%M:%S},{unix_ms % 1000:03d}]"


def log_run(
    path: Path,
    logs: Mapping[int, Sequence[str]] | None,
    *,
    header: Sequence[str] = (),
    origin: int = ORIGIN,
    container: str = CONTAINER,
) -> Path:
    """``path`` (made if missing) with a run.json giving the time origin and, unless
    ``logs`` is None, each broker's server.log: ``header`` (the launcher's own lines, say),
    then the broker's lines. ``container`` names a broker's container from its id."""
    path.mkdir(parents=True, exist_ok=True)
    (path / names.RUN_JSON).write_bytes(orjson.dumps({"history_start_unix_ns": origin}))
    for broker, lines in (logs or {}).items():
        text = "".join(f"{line}\n" for line in [*header, *lines])
        RunDir(path).write_node_logs(container.format(broker), {names.SERVER_LOG: text})
    return path
