"""Kafka's own Java transactional producer (``workload.client: java`` with transactions) on a
real 4.4.0 cluster, whose ``transaction.version`` is 2: the producers speak transaction
version 2 (KIP-890 part 2), which librdkafka does not.

One short run (a 20 s workload, a broker paused for 5 s): two transactional producers,
each Kafka's Java producer in a container of the run's image driven by its worker in a
process of its own, one read_committed reader, and a copier (txn-a to txn-out) whose
consumer is a Kafka Java consumer in its producer's own container, so the offsets go into
each transaction with that consumer's group metadata. Asserted: ``kchaos run`` ends as
expected with a valid verdict; every ``ok txn-init`` says ``transaction_version: 2`` (read
from the Java producer itself) and run.json's finalized features say
``transaction.version: 2``; there are committed and aborted transactions; the
read_committed drain holds every committed value and no aborted one, and the reader read
committed values and no aborted one; the copier's committed copies are copies of committed
input values, each input copied at most once by a committed transaction, and the group's
committed offsets are those of its last committed transaction; the bridge containers are
gone and their output kept.
Measured 2026-12-07 (first run): 62 committed and 16 aborted transactions in a 20 s
workload, about 66 s for the test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import docker
import pytest

pytestmark = [pytest.mark.docker]

KCHAOS = str(Path(sys.executable).with_name("kchaos"))

SCENARIO = """\
name: txn-java
description: >
  Two transactional producers with Kafka's own Java client (transaction version 2 on a
  4.x cluster), one read_committed reader, one broker paused for 5 s.
seed: 1
cluster:
  brokers: 3
  server_properties:
    offsets.topic.replication.factor: 3
    transaction.state.log.replication.factor: 3
    transaction.state.log.min.isr: 2
    group.initial.rebalance.delay.ms: 0
topics:
  - {name: txn-a, partitions: 3, replication_factor: 3, configs: {min.insync.replicas: 2}}
  - {name: txn-b, partitions: 3, replication_factor: 3, configs: {min.insync.replicas: 2}}
  - {name: txn-out, partitions: 3, replication_factor: 3, configs: {min.insync.replicas: 2}}
workload:
  duration: 20s
  client: java
  producers: {count: 0}
  consumers: {count: 0}
  transactions:
    producers: 2
    topics: [txn-a, txn-b]
    max_sends: 4
    abort_ratio: 0.25
    rate: 5
    timeout: 10s
    readers: {subscribe: 1}
    copier: {input: txn-a, output: txn-out, group: kchaos-copier, max_batch: 20}
  drain_timeout: 60s
nemesis:
  steps:
    - {fault: pause, at: 6s, for: 5s, target: random}
expect:
  valid: true
  allowed: [offline]
"""


def history(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]


def test_the_java_producers_speak_transaction_version_2_on_4_4_0(
    tmp_path: Path, kafka_images: Any
) -> None:
    scenario = tmp_path / "txn-java.yaml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "run"
    done = subprocess.run(
        [KCHAOS, "run", str(scenario), "--kafka-version", "4.4.0", "--out", str(out), "--quiet"],
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdict"] == "valid"
    run = json.loads((out / "run.json").read_text())
    assert run["features"]["transaction.version"] == 2
    events = history(out)
    inits = [e for e in events if e["f"] == "txn-init" and e["type"] == "ok"]
    assert {e["process"] for e in inits} == {2, 3, 4}, inits  # 4: the copier
    assert all(e["transaction_version"] == 2 and e["producer_id"] >= 0 for e in inits), inits
    oks = [e for e in events if e["f"] == "txn" and e["type"] == "ok"]
    aborted = [e for e in events if e["f"] == "txn" and e["type"] == "fail"]
    assert len(oks) >= 20 and aborted, (len(oks), len(aborted))
    # the read_committed drain holds every committed value and no aborted one; the reader
    # (process 1, a VerifiableConsumer: one topic, txn-a) read committed values and no
    # aborted one
    read = {r["value"] for e in events if e["f"] == "poll" and e["type"] == "ok"
            for r in e["records"]}  # fmt: skip
    drained = {r["value"] for e in events if e["f"] == "drain" for r in e.get("records", [])}
    committed = {s["value"] for e in oks for s in e["sends"]}
    invoked = {e["txn"]: e for e in events if e["f"] == "txn" and e["type"] == "invoke"}
    rolled_back = {s["value"] for e in aborted for s in invoked[e["txn"]]["sends"]}
    assert committed <= drained and not (rolled_back & drained)
    assert read & committed and not (rolled_back & read)
    assert any(e["f"] == "assign" and e.get("isolation") == "read_committed" for e in events)
    # the copier (process 4): copies of committed inputs only, none copied twice by
    # committed transactions, and its consumed offsets committed with them
    copies = [e for e in oks if e["process"] == 4]
    assert len(copies) >= 5, len(copies)
    sources = [s["copy_of"] for e in copies for s in invoked[e["txn"]]["sends"]]
    assert set(sources) <= committed and len(sources) == len(set(sources))
    assert {s["value"] for e in copies for s in e["sends"]} <= drained
    results = json.loads((out / "results.json").read_text())
    # the exactly-once kinds were judged, and found nothing
    judged = {"eos-lost", "eos-duplicate", "lost-write", "aborted-read"}
    assert not judged & set(results["unjudged"]), results["unjudged"]
    assert not judged & {k for k, v in results["anomalies"].items() if v["count"]}
    # each producer's bridge kept its output; none of its containers is left
    kept = sorted(p.name for p in (out / "java-clients").iterdir())
    assert all(any(f"client-t{p}-" in name for name in kept) for p in (2, 3, 4)), kept
    left = docker.from_env().containers.list(
        all=True, filters={"label": [f"io.kchaos.run={run['run_id']}", "io.kchaos.role=client"]}
    )
    assert not left
