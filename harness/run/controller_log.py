"""After a run, before teardown: ``RUN_DIR/controller.jsonl`` and ``RUN_DIR/logs/``.

* ``controller.jsonl`` (history format 1.1): ``kafka-dump-log.sh
  --cluster-metadata-decoder`` runs inside one running controller (or combined) node,
  through the cluster's ``exec``, on every segment of its ``__cluster_metadata-0``
  directory (and the newest snapshot where segments were cleaned);
  :mod:`kchaos.harness.run.metadata_records` turns the dump into whole-state lines.
* ``logs/<container-name>/``: each node's own log (the images log to stdout, so this is
  the container's log, from its first start to now, across restarts) as ``server.log``,
  and the lines of its controller and state-change loggers as ``controller.log`` and
  ``state-change.log``.

Neither step may lose the run: a failure is a warning on the console and an entry under
``after_run`` in run.json, and ``controller.jsonl`` is then absent.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any

from kchaos.harness.cluster.api import NodeAccess, NodeHandle, Topology
from kchaos.harness.cluster.config import DATA_DIR, given_properties
from kchaos.harness.errors import MetadataDumpError
from kchaos.harness.run.metadata_records import convert, parse_dump, snapshot_to_read
from kchaos.harness.run.record import RunRecord, record_step
from kchaos.harness.rundir.names import (
    CONTROLLER_JSONL,
    CONTROLLER_LOG,
    LOGS_DIR,
    METADATA_DUMP_TXT,
    SERVER_LOG,
    STATE_CHANGE_LOG,
)
from kchaos.harness.rundir.rundir import RunDir

log = logging.getLogger(__name__)

METADATA_DIR = "__cluster_metadata-0"
# Loggers whose lines go to controller.log: the KRaft controller and the old ZK one.
CONTROLLER_LOGGERS = ("org.apache.kafka.controller", "kafka.controller", "kafka.server.Controller")
STATE_CHANGE_LOGGER = "state.change.logger"
_DUMP = (
    "tool=$(command -v kafka-dump-log.sh || echo /opt/kafka/bin/kafka-dump-log.sh); "
    '"$tool" --cluster-metadata-decoder --files "$1" 2>/tmp/kchaos-dump-log.err; rc=$?; '
    'if [ $rc -ne 0 ]; then echo "exit code $rc"; tail -n 15 /tmp/kchaos-dump-log.err; fi; '
    "exit $rc"
)
_LOGGER = re.compile(r"\(([^()\s]+)\)\s*$")
_ENTRY_START = re.compile(r"^\[\d{4}-\d\d-\d\d")


def metadata_dir(cluster: Topology, node: NodeHandle) -> str:
    """The node's ``__cluster_metadata-0`` directory, from the properties the harness
    gives it: ``metadata.log.dir``, else the first of ``log.dirs`` (or ``log.dir``)."""
    props = given_properties(cluster, node)
    base = props.get("metadata.log.dir") or props.get("log.dirs") or props.get("log.dir")
    first = (base or DATA_DIR).split(",")[0].strip().rstrip("/")
    return f"{first}/{METADATA_DIR}"


def dump_files(directory: str, names: Iterable[str]) -> list[str]:
    """The files to hand to the tool: every segment in offset order, then the newest
    snapshot when the first segment does not start at offset 0."""
    names = [n.strip() for n in names if n.strip()]
    segments = sorted((n for n in names if re.fullmatch(r"\d+\.log", n)), key=lambda n: int(n[:-4]))
    snapshot = snapshot_to_read(names)
    chosen = ([snapshot] if snapshot else []) + segments
    return [f"{directory}/{n}" for n in chosen]


def read_metadata_log(cluster: NodeAccess) -> tuple[str, str]:
    """(node name, dump text) from the first running controller that can give it."""
    nodes = [n for n in cluster.nodes if n.is_controller]
    if not nodes:
        raise RuntimeError("the cluster has no controller node")
    problems = []
    for node in nodes:
        directory = metadata_dir(cluster, node)
        try:
            code, listing = cluster.exec(node, ["ls", "-1", directory])
            if code != 0:
                problems.append(f"{node.name}: ls {directory}: {listing.strip()[-300:]}")
                continue
            files = dump_files(directory, listing.splitlines())
            if not files:
                problems.append(f"{node.name}: no segment in {directory}")
                continue
            code, text = cluster.exec(node, ["bash", "-c", _DUMP, "kchaos-dump", ",".join(files)])
        except Exception as exc:  # noqa: BLE001 - a stopped or paused node: try the next
            problems.append(f"{node.name}: {type(exc).__name__}: {exc}")
            continue
        if code != 0:
            problems.append(f"{node.name}: kafka-dump-log.sh failed: {text.strip()[-600:]}")
            continue
        return node.name, text
    raise RuntimeError("cannot read the metadata log: " + "; ".join(problems))


def write_controller_log(
    cluster: NodeAccess, run_dir: RunDir, *, topics: Sequence[str], origin_unix_ns: int
) -> dict[str, Any]:
    """Write ``run_dir/controller.jsonl``; returns what run.json records about it.
    Raises on failure (the caller records it); never leaves a partial file."""
    node, text = read_metadata_log(cluster)
    run_dir.write_metadata_dump(text)
    source = f"kafka-dump-log.sh output on {node} ({LOGS_DIR}/{METADATA_DUMP_TXT})"
    result = convert(parse_dump(text, source=source), origin_unix_ns=origin_unix_ns, topics=topics)
    run_dir.write_controller(result.jsonl())
    return {
        "status": "written",
        "file": CONTROLLER_JSONL,
        "node": node,
        "lines": len(result.lines),
        "records": result.records,
        "first_offset": result.first_offset,
        "last_offset": result.last_offset,
        "origin_unix_ns": origin_unix_ns,
        "warnings": result.warnings[:20],
        # partitions an undecodable metadata record may have changed: the checker judges
        # them from the monitor's samples (docs/run-directory.md)
        "incomplete_partitions": [f"{t}/{p}" for t, p in sorted(result.incomplete)],
    }


def split_log(text: str) -> dict[str, str]:
    """A node's log as ``server.log`` (all of it), ``controller.log`` and
    ``state-change.log`` (the entries of those loggers; a stack trace or other
    continuation line goes with the entry above it)."""
    controller: list[str] = []
    state: list[str] = []
    target: list[str] | None = None
    for line in text.splitlines(keepends=True):
        if _ENTRY_START.match(line):
            match = _LOGGER.search(line)
            name = match.group(1) if match else ""
            if name == STATE_CHANGE_LOGGER:
                target = state
            elif name.startswith(CONTROLLER_LOGGERS):
                target = controller
            else:
                target = None
        elif line.startswith("["):  # the image's launcher ("[kchaos] ..."), not a log entry
            target = None
        if target is not None:
            target.append(line)
    return {
        SERVER_LOG: text,
        CONTROLLER_LOG: "".join(controller),
        STATE_CHANGE_LOG: "".join(state),
    }


def copy_logs(cluster: NodeAccess, run_dir: RunDir) -> dict[str, Any]:
    """Every node's log into ``run_dir/logs/<container-name>/``; per node what was
    written, or why not."""
    out: dict[str, Any] = {}
    for node in cluster.nodes:
        try:
            raw = cluster.full_log(node)
            text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
            logs = split_log(text)
            run_dir.write_node_logs(node.container_name, logs)
            sizes = {name: len(body) for name, body in logs.items()}
            out[node.container_name] = {"node": node.name, "files": sizes}
        except Exception as exc:  # noqa: BLE001 - one node's log must not stop the others
            out[node.container_name] = {"node": node.name, "error": f"{type(exc).__name__}: {exc}"}
            log.warning("logs of %s not copied: %s", node.name, exc)
    return out


def collect_after_run(
    cluster: NodeAccess, run_dir: RunDir, rec: RunRecord, topics: Sequence[str]
) -> dict[str, Any]:
    """Both steps, each on its own; the outcome goes to run.json's ``after_run``
    (through :func:`~kchaos.harness.run.record.record_step`, as every after-run step).
    Never raises an ordinary exception (a run is never lost to them)."""
    return record_step(
        rec,
        "after_run",
        "the after-run collection",
        lambda: _after_run(cluster, run_dir, rec, topics),
    )


def _after_run(
    cluster: NodeAccess, run_dir: RunDir, rec: RunRecord, topics: Sequence[str]
) -> dict[str, Any]:
    after: dict[str, Any] = {}
    try:
        after["logs"] = {"dir": LOGS_DIR, "nodes": copy_logs(cluster, run_dir)}
    except Exception as exc:  # noqa: BLE001
        after["logs"] = {"error": f"{type(exc).__name__}: {exc}"}
        log.warning("broker logs not copied: %s", exc)
    origin = rec.data.get("history_start_unix_ns")
    if not isinstance(origin, int):
        after["controller_log"] = {
            "status": "skipped",
            "reason": "no history time origin (history_start_unix_ns)",
        }
    else:
        try:
            after["controller_log"] = write_controller_log(
                cluster, run_dir, topics=topics, origin_unix_ns=origin
            )
        except MetadataDumpError as exc:
            after["controller_log"] = {"status": "failed", "error": str(exc)}
            log.warning("%s not written: %s", CONTROLLER_JSONL, exc)
        except Exception as exc:  # noqa: BLE001
            after["controller_log"] = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
            log.warning("%s not written: %s", CONTROLLER_JSONL, exc)
    return after


def describe(after: dict[str, Any]) -> str:
    """One line for the console."""
    ctl = after.get("controller_log", {})
    if ctl.get("status") == "written":
        text = (
            f"{CONTROLLER_JSONL}: {ctl['lines']} lines from {ctl['records']} records"
            f" on {ctl['node']}"
        )
    else:
        text = f"{CONTROLLER_JSONL}: not written ({ctl.get('reason') or ctl.get('error')})"
    nodes = after.get("logs", {}).get("nodes", {})
    copied = sum(1 for v in nodes.values() if "files" in v)
    return text + f"; logs of {copied} node(s) in {LOGS_DIR}/"


__all__ = [
    "collect_after_run",
    "copy_logs",
    "describe",
    "dump_files",
    "metadata_dir",
    "read_metadata_log",
    "split_log",
    "write_controller_log",
]
