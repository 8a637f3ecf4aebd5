"""After a run, before teardown: every replica's log of every run topic, ``RUN_DIR/replicas.jsonl``.

Inside each broker container, through the cluster's ``exec``, ``kafka-dump-log.sh
--deep-iteration --print-data-log`` reads the segment files (``*.log``) of every
partition directory of the run topics in the broker's log dirs, one JVM per broker; the
payload is cut at the workloads' ``|`` inside the container so only the values travel.
:mod:`kchaos.harness.run.replica_dump` turns the text into batches. The broker's
``replication-offset-checkpoint`` (the high watermarks it last wrote to disk) goes along.

The file (documented in docs/checker.md, "Replica logs"): one JSON object per line,
``type`` says which:

* ``reader``: the first line, the tool and the format version;
* ``broker``: one per broker, ``status`` ``dumped`` (with ``replicas``: per partition
  directory found, its segments, batches, records, first and next offset and the
  checkpointed high watermark) or ``unavailable`` (``error`` says why: a stopped
  container, a failed tool);
* ``batch``: one per record batch of one replica: ``broker``, ``topic``, ``partition``,
  ``base_offset``, ``last_offset``, ``leader_epoch``, ``producer_id``,
  ``producer_epoch``, ``base_sequence``, ``transactional``, ``control``, ``segment``
  and ``records`` as ``[offset, sequence, value]``.

The checker (:mod:`kchaos.harness.checker.replicas`) compares the replicas. A failure
never loses the run: a broker that cannot be read is an ``unavailable`` line; a failure
of the whole step is recorded in run.json (``replicas.error``) and the file is absent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from kchaos.harness.cluster.api import NodeAccess, NodeHandle, Topology
from kchaos.harness.cluster.config import DATA_DIR, given_properties
from kchaos.harness.run.record import RunRecord, record_step
from kchaos.harness.run.replica_dump import parse_segments, partition_of
from kchaos.harness.rundir.names import REPLICAS_JSONL
from kchaos.harness.rundir.rundir import RunDir

log = logging.getLogger(__name__)

FORMAT = 1
CHECKPOINT = "replication-offset-checkpoint"
TOOL = "kafka-dump-log.sh --deep-iteration --print-data-log"
# $1: the files, comma-separated. The payload is cut after the first "|" (the value and
# its separator stay, the padding goes); stderr is kept apart and shown on failure.
_DUMP = (
    "set -o pipefail; "
    "tool=$(command -v kafka-dump-log.sh || echo /opt/kafka/bin/kafka-dump-log.sh); "
    '"$tool" --deep-iteration --print-data-log --files "$1" 2>/tmp/kchaos-replicas.err '
    "| sed -E 's/( payload: [^|]*[|]).*/\\1/'; rc=$?; "
    'if [ $rc -ne 0 ]; then echo "exit code $rc"; tail -n 15 /tmp/kchaos-replicas.err; fi; '
    "exit $rc"
)


def log_dirs(cluster: Topology, node: NodeHandle) -> list[str]:
    """The broker's log dirs, from the properties the harness gives it."""
    props = given_properties(cluster, node)
    raw = props.get("log.dirs") or props.get("log.dir") or DATA_DIR
    return [d.strip().rstrip("/") for d in raw.split(",") if d.strip()]


def segment_files(listing: Sequence[str], topics: Sequence[str]) -> list[str]:
    """The run topics' segment files out of ``find`` output, by partition then offset."""
    wanted = set(topics)
    chosen = []
    for path in (p.strip() for p in listing):
        if not path.endswith(".log"):
            continue
        try:
            topic, part = partition_of(path)
            base = int(Path(path).name[: -len(".log")])
        except ValueError:
            continue
        if topic in wanted:
            chosen.append((topic, part, base, path))
    return [c[3] for c in sorted(chosen)]


def parse_checkpoint(text: str) -> dict[tuple[str, int], int]:
    """``replication-offset-checkpoint``: version, count, then ``topic partition offset``."""
    out: dict[tuple[str, int], int] = {}
    for line in text.splitlines()[2:]:
        fields = line.split()
        if len(fields) == 3 and fields[1].isdigit() and fields[2].lstrip("-").isdigit():
            out[(fields[0], int(fields[1]))] = int(fields[2])
    return out


def dump_broker(
    cluster: NodeAccess, node: NodeHandle, topics: Sequence[str]
) -> tuple[list[str], str, list[str]]:
    """(segment files, dump text, checkpoint texts) of one broker; raises when it cannot."""
    dirs = log_dirs(cluster, node)
    code, listing = cluster.exec(
        node, ["find", *dirs, "-mindepth", "2", "-maxdepth", "2", "-name", "*.log"]
    )
    if code != 0:
        raise RuntimeError(f"find in {','.join(dirs)}: {listing.strip()[-300:]}")
    files = segment_files(listing.splitlines(), topics)
    checkpoints = []
    for d in dirs:
        code, text = cluster.exec(node, ["cat", f"{d}/{CHECKPOINT}"])
        if code == 0:
            checkpoints.append(text)
    if not files:
        return [], "", checkpoints
    code, text = cluster.exec(node, ["bash", "-c", _DUMP, "kchaos-replicas", ",".join(files)])
    if code != 0:
        raise RuntimeError(f"kafka-dump-log.sh failed: {text.strip()[-600:]}")
    return files, text, checkpoints


def _broker_lines(
    node: NodeHandle, files: list[str], text: str, checkpoints: list[str], out: list[bytes]
) -> dict[str, Any]:
    """The broker's batch lines appended to ``out``; its ``broker`` line."""
    hws: dict[tuple[str, int], int] = {}
    for checkpoint in checkpoints:
        hws.update(parse_checkpoint(checkpoint))
    replicas: dict[tuple[str, int], dict[str, Any]] = {}
    for path in files:
        tp = partition_of(path)
        rep = replicas.setdefault(
            tp,
            {
                "topic": tp[0],
                "partition": tp[1],
                "segments": 0,
                "batches": 0,
                "records": 0,
                "first_offset": None,
                "next_offset": None,
                "checkpoint_high_watermark": hws.get(tp),
            },
        )
        rep["segments"] += 1
    for batch in parse_segments(text, source=f"kafka-dump-log.sh on {node.name}"):
        rep = replicas[(batch.topic, batch.partition)]
        rep["batches"] += 1
        rep["records"] += len(batch.records)
        if rep["first_offset"] is None:
            rep["first_offset"] = batch.base_offset
        rep["next_offset"] = batch.last_offset + 1
        out.append(orjson.dumps({"type": "batch", **batch.to_json(node.node_id)}))
    return {
        "type": "broker",
        "broker": node.node_id,
        "node": node.name,
        "status": "dumped",
        "replicas": [replicas[k] for k in sorted(replicas)],
    }


def write_replicas(cluster: NodeAccess, run_dir: RunDir, topics: Sequence[str]) -> dict[str, Any]:
    """Write ``run_dir/replicas.jsonl``; returns what run.json records about it."""
    started = time.monotonic()
    summary: dict[str, Any] = {"file": REPLICAS_JSONL, "brokers": {}}
    with run_dir.write_replicas() as put:
        put({"type": "reader", "reader": TOOL, "format": FORMAT})
        for node in cluster.brokers:
            began = time.monotonic()
            lines: list[bytes] = []
            try:
                files, text, checkpoints = dump_broker(cluster, node, topics)
                head = _broker_lines(node, files, text, checkpoints, lines)
            except Exception as exc:  # noqa: BLE001 - a stopped broker: say so
                head = {
                    "type": "broker",
                    "broker": node.node_id,
                    "node": node.name,
                    "status": "unavailable",
                    "error": f"{type(exc).__name__}: {exc}"[:1000],
                }
                lines = []
                log.warning("replica logs of %s not read: %s", node.name, exc)
            head["seconds"] = round(time.monotonic() - began, 2)
            put(head)
            for line in lines:
                put(line)
            summary["brokers"][node.name] = {
                "status": head["status"],
                "replicas": len(head.get("replicas", [])),
                "batches": len(lines),
                **({"error": head["error"]} if "error" in head else {}),
            }
    summary["seconds"] = round(time.monotonic() - started, 1)
    return summary


def collect(
    cluster: NodeAccess, run_dir: RunDir, rec: RunRecord, topics: Sequence[str]
) -> dict[str, Any]:
    """Write replicas.jsonl and record the outcome in run.json; never raises."""
    return record_step(
        rec, "replicas", REPLICAS_JSONL, lambda: write_replicas(cluster, run_dir, topics)
    )


def describe(summary: dict[str, Any]) -> str:
    """One line for the console."""
    if "error" in summary:
        return f"{REPLICAS_JSONL}: not written ({summary['error']})"
    brokers = summary.get("brokers", {})
    read = sum(1 for b in brokers.values() if b["status"] == "dumped")
    replicas = sum(b["replicas"] for b in brokers.values())
    return (
        f"{REPLICAS_JSONL}: {replicas} replica log(s) from {read} of {len(brokers)} broker(s)"
        f" in {summary.get('seconds')} s"
    )


__all__ = [
    "collect",
    "describe",
    "dump_broker",
    "log_dirs",
    "parse_checkpoint",
    "segment_files",
    "write_replicas",
]
