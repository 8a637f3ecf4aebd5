"""Each fault says whether it bit: the partition families split, cut and bridge, a short
pause, hold-controller-requests and reassign (history format 1.3 ``evidence.faults``),
on real brokers. test_fault_evidence.py and test_fault_evidence_families.py have the
others; test_fault_evidence_acks_disk.py the black holes and disk faults. ``extended``
(``make extended``): it does not fit in the suite's 45 minutes.

One run of the library's ``smoke`` workload on three brokers and one dedicated controller
(controller-101: the hold must hold a broker that is not the active controller, see
faults/controller_hold.py). The topic's assignment leaves broker 3 leading nothing, and a
second topic, ``still``, has one replica (on broker 3) and no writes. Each family once
where it cannot bite (not seen) and once where it must (seen):

- hold-controller-requests on broker 3, a follower with nothing to ask the controller
  (not seen: no packet held), then on partition 0's leader while broker 3 is cut off, so
  that the leader's ISR shrink (AlterPartition) is held (seen: packets held). The harmless
  hold comes first: in the second run of this test (2026-12-07) it came 2.5 s after the
  bridge below had cut broker 3 from the controller for 1.5 s; broker 3's heartbeat
  channel had timed a request out and reconnected just before the hold sampled its
  connections, the sampling did not keep that channel (one other connection had sent in
  its first window, so it looked no further), and the hold held broker 3's heartbeats
  (its log, during the hold: "Disconnecting from node 101 due to request timeout"). That
  hold bit, and the measure said seen (6 packets held);
- broker 3 paused for 1 s, less than ``replica.lag.time.max.ms`` (5 s) and the broker
  session (9 s): no ISR shrink, no fencing (not seen). Its seen is test_fault_evidence's;
- broker 3 split from the rest, broker 3 cut (one way) from every node, and broker 1 made
  the bridge between two halves of the others, each for 1.5 s (not seen), then each for
  10 s (seen: ISR removals among the nodes separated);
- reassign of ``still``, whose one replica rotates to itself (not seen: no new leader),
  then of ``smoke`` (seen: every leader moves to the new first replica).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_fault_evidence import KCHAOS

pytestmark = [pytest.mark.docker, pytest.mark.extended]

CLUSTER = """name: fault-evidence-more
description: evidence.faults of the partition, hold, pause and reassign families
seed: 1
cluster:
  brokers: 3
  controllers: {controllers}
  server_properties:
    replica.lag.time.max.ms: 5000
    auto.leader.rebalance.enable: false
    offsets.topic.replication.factor: 3
    transaction.state.log.replication.factor: 3
    group.initial.rebalance.delay.ms: 0
topics:
  - name: smoke
    partitions: 3
    replication_factor: 3
    assignment: [[1, 2, 3], [2, 1, 3], [1, 3, 2]]   # broker 3 leads nothing
    configs:
      min.insync.replicas: 2
{topic_configs}{more_topics}workload:
  duration: {duration}
  topics: [smoke]
  producers:
    count: 2
    rate: 100
    acks: all
    configs:
      enable.idempotence: true
      delivery.timeout.ms: 60000
      request.timeout.ms: 30000
{producer_configs}  consumers:
    count: 1
    mode: subscribe
  drain_timeout: 60s
"""

STILL = """  - name: still
    partitions: 1
    replication_factor: 1
    assignment: [[3]]
    configs:
      min.insync.replicas: 1
"""

SCHEDULE = """nemesis:
  steps:
    - {fault: hold-controller-requests, at: 2s, for: 8s, target: broker-3}
    - {fault: pause, at: 12s, for: 1s, target: broker-3}
    - {fault: split, at: 15s, for: 1.5s, target: broker-3}
    - {fault: cut, at: 19s, for: 1.5s, target: broker-3}
    - {fault: bridge, at: 23s, for: 1.5s, target: broker-1}
    - {fault: reassign, at: 27s, target: none, params: {topic: still}}
    - {fault: hold-controller-requests, at: 32s, for: 14s, target: "leader:smoke:0"}
    - {fault: cut, at: 35s, for: 10s, target: broker-3}
    - {fault: split, at: 58s, for: 10s, target: broker-3}
    - {fault: bridge, at: 74s, for: 10s, target: broker-1}
    - {fault: reassign, at: 90s, target: none, params: {topic: smoke}}
"""

EXPECTED = {
    "f-1": ("hold-controller-requests", "not-seen"),
    "f-2": ("pause", "not-seen"),
    "f-3": ("split", "not-seen"),
    "f-4": ("cut", "not-seen"),
    "f-5": ("bridge", "not-seen"),
    "f-6": ("reassign", "not-seen"),
    "f-7": ("hold-controller-requests", "seen"),
    "f-8": ("cut", "seen"),
    "f-9": ("split", "seen"),
    "f-10": ("bridge", "seen"),
    "f-11": ("reassign", "seen"),
}


def scenario(
    tmp_path: Path,
    schedule: str,
    duration: str,
    *,
    controllers: int = 0,
    topic_configs: str = "",
    more_topics: str = "",
    producer_configs: str = "",
) -> Path:
    """The smoke workload (two idempotent acks=all producers, a consumer) on three brokers
    whose topic ``smoke`` broker 3 leads no partition of, with ``schedule`` (a
    ``nemesis:`` mapping) for its nemesis; ``topic_configs`` are added to smoke's
    configs, ``more_topics`` to the topics (the workload writes only to smoke),
    ``producer_configs`` to the producers' configs."""
    text = CLUSTER.format(
        controllers=controllers,
        duration=duration,
        topic_configs=topic_configs,
        more_topics=more_topics,
        producer_configs=producer_configs,
    )
    path = tmp_path / "evidence.yaml"
    path.write_text(text + schedule + "expect:\n  valid: true\n  allowed: [offline]\n")
    return path


def run(
    tmp_path: Path, path: Path, timeout: float
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``kchaos run`` of ``path``; the process and results.json's ``evidence.faults`` by
    name (printed)."""
    run_dir = tmp_path / "run"
    done = subprocess.run(
        [KCHAOS, "run", str(path), "--out", str(run_dir), "--quiet"],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert (run_dir / "results.json").is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((run_dir / "results.json").read_text())
    faults = {f["name"]: f for f in results["evidence"]["faults"]}
    print(json.dumps(faults, indent=1))
    assert all(f["started"] for f in faults.values()), faults
    return done, faults


def number(pattern: str, text: str) -> float:
    """The number the first group of ``pattern`` matches in ``text``."""
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in {text!r}"
    return float(found.group(1))


def test_partition_hold_pause_and_reassign_faults_say_whether_they_bit(
    tmp_path: Path, kafka_images: Any
) -> None:
    path = scenario(tmp_path, SCHEDULE, "96s", controllers=1, more_topics=STILL)
    done, faults = run(tmp_path, path, timeout=600)
    assert {n: (f["family"], f["effect"]) for n, f in faults.items()} == EXPECTED, faults
    obs = {n: f["observed"] for n, f in faults.items()}
    # the harmless ones looked and found nothing
    assert "broker-3: sent nothing to the controller that was held" in obs["f-1"], obs["f-1"]
    for name in ("f-2", "f-3", "f-4", "f-5"):
        assert "no ISR shrink and no fencing" in obs[name], faults[name]
    assert "no partition of still took the new replicas" in obs["f-6"], obs["f-6"]
    # the biting ones, with the numbers that prove it
    held = number(r"broker-1: (\d+) packet\(s\) to the controller held", obs["f-7"])
    assert held >= 1, obs["f-7"]
    for name in ("f-8", "f-9", "f-10"):
        assert number(r"(\d+) ISR removal\(s\)", obs[name]) >= 1, faults[name]
    assert number(r"(\d+) partition\(s\) reassigned with a new leader", obs["f-11"]) == 3
    # the run kept every acknowledged write, as the smoke workload expects
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
