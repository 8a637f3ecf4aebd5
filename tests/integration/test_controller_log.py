"""After a real run: controller.jsonl from the KRaft metadata log, RUN_DIR/logs, and
replicas.jsonl from every replica's segment files.

One short `kchaos run` (3 brokers, one partition, its leader SIGKILLed and restarted);
then the controller's record must show the election the kill caused, with the new leader
and leader epoch that the new leader's own log reports, at a time inside the run; and
the three replica logs must be dumped and agree below the high watermark.
About 90 s on 2 cores. ``KCHAOS_TEST_KAFKA_VERSION`` picks another release (its image
must have been built).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kchaos.harness.checker.controller import read_controller

REPO_ROOT = Path(__file__).resolve().parents[2]  # the source tree, not the package

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TOPIC = "ctl"
SCENARIO = f"""
name: controller-log-leader-kill
description: the leader of {TOPIC}-0 is SIGKILLed and restarted (test of controller.jsonl)
seed: 7
cluster:
  brokers: 3
  heap: 320m
  server_properties:
    replica.lag.time.max.ms: 5000
    broker.session.timeout.ms: 6000
    broker.heartbeat.interval.ms: 1000
    offsets.topic.replication.factor: 3
    group.initial.rebalance.delay.ms: 0
topics:
  - name: {TOPIC}
    partitions: 1
    replication_factor: 3
    configs:
      min.insync.replicas: 2
workload:
  duration: 22s
  producers:
    count: 1
    rate: 50
    acks: all
    configs:
      enable.idempotence: true
      delivery.timeout.ms: 20000
      request.timeout.ms: 5000
  consumers:
    count: 0
  drain_timeout: 60s
nemesis:
  steps:
    - fault: kill
      at: 5s
      for: 9s
      target: leader:{TOPIC}:0
checks:
  max_offline_seconds: 30
  max_time_to_full_isr_seconds: 90
expect:
  valid: true
  allowed: [offline]
"""
# kafka.cluster.Partition, when a broker becomes a partition's leader (3.3 .. 4.4)
LEADER_LINE = re.compile(rf"Leader {TOPIC}-0 with topic id \S+ starts at leader epoch (\d+)")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("ctl")
    scenario = base / "scenario.yaml"
    scenario.write_text(SCENARIO)
    out = base / "run"
    cmd = [sys.executable, "-m", "kchaos.cli", "run", str(scenario), "--out", str(out)]
    version = os.environ.get("KCHAOS_TEST_KAFKA_VERSION")
    if version:
        cmd += ["--kafka-version", version]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=420)
    # 0, 1, 2: the run went through (its verdict is not what this file tests)
    if not (out / "run.json").is_file() or proc.returncode not in (0, 1, 2):
        pytest.fail(f"kchaos run failed ({proc.returncode}):\n{proc.stdout[-4000:]}"
                    f"\n{proc.stderr[-4000:]}")  # fmt: skip
    return out


def _history(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "history.jsonl").read_text().splitlines()]


def test_controller_jsonl_shows_the_election_the_kill_caused(run_dir: Path):
    run = json.loads((run_dir / "run.json").read_text())
    after = run["after_run"]["controller_log"]
    assert after["status"] == "written", after
    assert isinstance(run["history_start_unix_ns"], int)
    record = read_controller(run_dir / "controller.jsonl")  # the checkers' own reader
    states = record.partitions[(TOPIC, 0)]
    assert len(states) >= 2
    assert {t for t, _ in record.partitions} == {TOPIC}  # only the run's topic
    assert len(record.brokers) == 3

    events = _history(run_dir)
    end = events[-1]["time"]
    kill = next(e for e in events if e["f"] == "fault" and e["phase"] == "start")
    killed = int(kill["targets"][0].split("-")[-1])
    # every line inside the run: from 0 to a little after the history's last line
    assert all(0 <= s.time <= end + 30e9 for s in states)
    elections = [e for e in record.elections() if e.after.time >= kill["time"] - 1e9]
    assert elections, [(s.leader, s.leader_epoch, s.time) for s in states]
    first = elections[0]
    assert first.before.leader == killed and first.after.leader != killed
    assert first.kind == "clean"
    assert kill["time"] - 1e9 <= first.after.time <= kill["time"] + 30e9
    assert first.after.leader_epoch == first.before.leader_epoch + 1

    # the new leader's own log says it became leader at that epoch
    logs = run_dir / "logs"
    leader_dir = next(p for p in logs.iterdir() if p.name.endswith(f"-broker-{first.after.leader}"))
    state_change = (leader_dir / "state-change.log").read_text()
    epochs = {int(m) for m in LEADER_LINE.findall(state_change)}
    if not epochs:  # releases that log it through kafka.cluster.Partition instead
        epochs = {int(m) for m in LEADER_LINE.findall((leader_dir / "server.log").read_text())}
    assert first.after.leader_epoch in epochs, sorted(epochs)
    # and the killed broker came back with a new registration (a new broker epoch)
    assert len(record.registrations(killed)) >= 2


def test_every_node_log_is_copied(run_dir: Path):
    logs = run_dir / "logs"
    nodes = sorted(p.name for p in logs.iterdir() if p.is_dir())
    assert len(nodes) == 3 and all(re.search(r"-broker-[123]$", n) for n in nodes)
    for name in nodes:
        for f in ("server.log", "controller.log", "state-change.log"):
            assert (logs / name / f).is_file(), f"{name}/{f}"
        server = (logs / name / "server.log").read_text()
        assert "Kafka Server started" in server or "KafkaRaftServer" in server
        controller = (logs / name / "controller.log").read_text()
        entries = [ln for ln in controller.splitlines() if re.match(r"\[\d{4}-", ln)]
        assert entries and all("controller" in ln.lower() for ln in entries)
        assert "[kchaos]" not in controller
        assert "(state.change.logger)" in (logs / name / "state-change.log").read_text()
    assert (logs / "metadata-dump.txt").stat().st_size > 0
    run = json.loads((run_dir / "run.json").read_text())
    assert set(run["after_run"]["logs"]["nodes"]) == set(nodes)


def test_the_verdict_judges_elections_from_the_record(run_dir: Path):
    """kchaos check used controller.jsonl: the kill's election is clean, so no
    `allowed: [unclean-election]` is needed (duplicates from the client are another
    matter, docs/findings.md, and are not what this file tests)."""
    results = json.loads((run_dir / "results.json").read_text())
    isr = results["stats"]["isr"]
    assert isr["source"] == "controller.jsonl"
    assert isr["elections"]["clean"] >= 1 and isr["elections"]["unclean"] == 0
    assert "unclean-election" not in results["anomalies"]
    assert results["stats"]["independent_reader"] == {"disagreements": 0}


def test_every_replica_log_is_dumped_and_compared(run_dir: Path):
    """replicas.jsonl (kafka-dump-log.sh on each broker's segment files) covers the three
    replicas of the partition; the checker compared them below the high watermark and,
    on this clean kill, found them equal; the kill shows as a second leader epoch."""
    run = json.loads((run_dir / "run.json").read_text())
    dumped = run["replicas"]
    assert {b["status"] for b in dumped["brokers"].values()} == {"dumped"}, dumped
    lines = [json.loads(x) for x in (run_dir / "replicas.jsonl").read_text().splitlines()]
    brokers = {x["broker"]: x for x in lines if x["type"] == "broker"}
    assert sorted(brokers) == [1, 2, 3]
    drained = sum(len(e["records"]) for e in _history(run_dir) if e["f"] == "drain")
    for b in brokers.values():
        (rep,) = b["replicas"]
        assert (rep["topic"], rep["partition"]) == (TOPIC, 0)
        assert rep["first_offset"] == 0 and rep["next_offset"] >= drained > 100
    batches = [x for x in lines if x["type"] == "batch"]
    assert {x["broker"] for x in batches} == {1, 2, 3}
    assert len({x["leader_epoch"] for x in batches}) >= 2  # before and after the kill
    results = json.loads((run_dir / "results.json").read_text())
    stats = results["stats"]["replicas"]
    (part,) = stats["partitions"]
    assert part["replicas"] == [1, 2, 3] and part["high_watermark"] >= drained
    assert stats["offsets_compared"] == part["high_watermark"] > 100
    assert stats["disagreements"] == 0 and stats["duplicate_sequences"] == 0
    assert results["checkers"]["replicas"]["valid"] is True
    assert "replica-divergence" not in results["anomalies"]
    assert "<h2>Replicas</h2>" in (run_dir / "report.html").read_text()
