"""A second read of every run topic by a reader kchaos did not write.

After the drain, Kafka's own console consumer (``kafka-console-consumer.sh`` from the
broker image) reads each run topic from the beginning, inside a broker container on the
cluster network, through the same client proxies the harness uses. Its records go to
``RUN_DIR/reread.jsonl`` (one JSON object per record: topic, partition, offset, value;
the first line names the reader; ``value`` is decoded from the record's bytes as the
workloads encode it, ``size`` is the record's length). ``kchaos check`` compares them
with the drain record by record (:mod:`kchaos.harness.checker.reread`): a difference means
the harness misread Kafka, not that Kafka lost something.

A failure of the reader never fails the run: it is recorded in run.json
(``reread.error``) and the file is left out, so the check says nothing about it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kchaos.harness.cluster.api import NodeAccess
from kchaos.harness.run.record import RunRecord, record_step
from kchaos.harness.rundir.rundir import RunDir
from kchaos.workloads.values import value_of

if TYPE_CHECKING:
    from kchaos.workloads.drain import DrainResult

TOOL = "/opt/kafka/bin/kafka-console-consumer.sh"
IDLE_MS = 10_000  # the reader stops after this long without a record


def command(bootstrap: str, topic: str, expected: int) -> list[str]:
    """The console consumer reading ``topic`` whole, printing partition and offset."""
    cmd = [
        TOOL,
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--from-beginning",
        "--isolation-level",
        "read_committed",
        "--timeout-ms",
        str(IDLE_MS),
        "--property",
        "print.partition=true",
        "--property",
        "print.offset=true",
        "--property",
        "print.key=false",
        "--property",
        "print.timestamp=false",
    ]
    if expected > 0:
        cmd += ["--max-messages", str(expected)]
    return cmd


def parse_output(topic: str, text: str) -> Iterable[dict[str, Any]]:
    """Records from the console consumer's lines ``Partition:P<TAB>Offset:O<TAB>VALUE``
    (other lines, such as its closing count or a log line, are skipped)."""
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) < 3 or not fields[0].startswith("Partition:"):
            continue
        part = fields[0][len("Partition:") :]
        off = fields[1][len("Offset:") :] if fields[1].startswith("Offset:") else ""
        if not (part.isdigit() and off.isdigit()):
            continue
        raw = "\t".join(fields[2:])
        yield {
            "topic": topic,
            "partition": int(part),
            "offset": int(off),
            # the record's bytes are the value, "|" and padding (workloads.values): the
            # value is what the history records
            "value": value_of(raw.encode()),
            "size": len(raw),
        }


def reread(
    cluster: NodeAccess, run_dir: RunDir, topics: Sequence[str], expected: dict[str, int]
) -> dict[str, Any]:
    """Read every topic with the console consumer; write reread.jsonl; a summary."""
    broker = next(n for n in cluster.brokers)
    started = time.monotonic()
    counts: dict[str, int] = {}
    with run_dir.write_reread() as put:
        put({"reader": TOOL, "node": broker.name})
        for topic in topics:
            code, text = cluster.exec(
                broker, command(cluster.bootstrap_servers, topic, expected.get(topic, 0))
            )
            if code != 0:
                raise RuntimeError(f"{TOOL} for {topic} exited {code}: {text.strip()[-300:]}")
            n = 0
            for rec in parse_output(topic, text):
                put(rec)
                n += 1
            counts[topic] = n
    return {"records": counts, "seconds": round(time.monotonic() - started, 1)}


def expected_counts(drain: DrainResult | None, committed: bool = False) -> dict[str, int]:
    """How many records the reader waits for per topic, by the drain's DrainResult
    ((topic, partition) -> (low, high, records read)): the reader stops once it has that
    many, or after IDLE_MS without a record.

    A plain run's drain read every offset between log start and high watermark, and so
    must the reader: the offsets' span, not what the drain read, so a record the drain
    missed is still read. With transactions (``committed``) the span holds commit and
    abort markers and aborted records that no read_committed reader returns, so the
    span is never reached and every topic cost the whole idle time (10 s each, three
    topics in a transactional run): there the reader waits for the records the
    read_committed drain read."""
    counts: dict[str, int] = {}
    for tp, (low, high, n) in getattr(drain, "drained", {}).items():
        count = int(n) if committed else max(int(high) - int(low), 0)
        counts[tp[0]] = counts.get(tp[0], 0) + count
    return counts


def collect(
    cluster: NodeAccess,
    run_dir: RunDir,
    rec: RunRecord,
    drain: DrainResult | None,
    committed: bool = False,
) -> None:
    """Read the topics the drain read; never raise (the verdict does not need it).
    ``committed``: the run has transactions, its drain read read_committed."""
    topics = sorted({tp[0] for tp in getattr(drain, "drained", {})})
    record_step(
        rec,
        "reread",
        "independent reader",
        lambda: reread(cluster, run_dir, topics, expected_counts(drain, committed)),
    )
