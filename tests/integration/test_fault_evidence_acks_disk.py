"""Each fault says whether it bit: the black holes timeout and client-cut, and the disk
faults slow-disk and disk-stall (history format 1.3 ``evidence.faults``), on real
brokers. ``extended`` (``make extended``): it does not fit in the suite's 45 minutes.

One run of the library's ``smoke`` workload on three brokers (test_fault_evidence_more's
cluster without a dedicated controller: broker 3 leads no partition of ``smoke``, which
fsyncs every 20 records, ``flush.messages``, for the disk faults to slow). Each family
once where it cannot bite (not seen) and once where it must (seen):

- client-cut of broker 3, which leads nothing the producers write (not seen: no
  acknowledgement to stop), then of partition 0's leader (seen: none of its
  acknowledgements for most of the cut). Both ``refuse`` (the client proxy disabled):
  ``drop`` loses the requests in flight, and the producers wait ``request.timeout.ms``
  (30 s) for them after the heal, into the next fault's baseline;
- the producers reconnect at most 1 s apart (``reconnect.backoff.max.ms``; librdkafka's
  default is 10 s): a third run of this test (2026-12-07) found no send to partition 0's
  leader acknowledged in the 5 s before the client-cut, 7 s after the timeout toxic
  had closed their connections over and over, and no baseline is no black hole to
  measure (not seen: "too few acknowledged sends ... before the fault");
- timeout toxics on that leader's client link on no connection (toxicity 0: not seen),
  then on every one (seen), each closing its connection after 0.5 s for the same reason;
- slow-disk on broker 3 frozen 1 ms in every 3 s (too loose to bite: not seen), then on
  broker 2 frozen 1.5 s in every 1.6 s (seen);
- disk-stall: one of 50 ms on broker 1 (less than the 200 ms the acknowledgements must
  slow by: not seen), then 3 s on broker 3 (seen);
- slow-sync on broker 1 at 100,000 writes a second (too loose to bite: not seen; its
  seen is test_fault_evidence's).

A freeze syncs the filesystem and then blocks the broker's writes, not its fsyncs: the
first run of this test (2026-12-07) found every flush under 100 ms under both freezes
that bit, while the median acknowledgement latency rose from 170 ms to 1.2 s and 2.6 s,
and the measure (then the flush timer alone) said not-seen. measure_freeze now compares
the acknowledgements of the sends to partitions the target leads or follows in the ISR
(every one here: the producers use acks=all), and tells the flushes beside them. Each
freeze that must bite is on a broker no disk fault slowed before.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from test_fault_evidence_more import number, run, scenario

pytestmark = [pytest.mark.docker, pytest.mark.extended]

SCHEDULE = """nemesis:
  steps:
    - {fault: client-cut, at: 3s, for: 4s, target: broker-3, params: {mode: refuse}}
    - fault: timeout
      at: 9s
      for: 4s
      target: "leader:smoke:0"
      params: {link: client, toxicity: 0, timeout_ms: 500}
    - fault: timeout
      at: 15s
      for: 4s
      target: "leader:smoke:0"
      params: {link: client, timeout_ms: 500}
    - {fault: client-cut, at: 28s, for: 4s, target: "leader:smoke:0", params: {mode: refuse}}
    - fault: slow-disk
      at: 38s
      for: 7s
      target: broker-3
      params: {freeze_ms: 1, thaw_ms: 3000}
    - {fault: disk-stall, at: 47s, for: 0.05s, target: broker-1}
    - fault: slow-disk
      at: 50s
      for: 6s
      target: broker-2
      params: {freeze_ms: 1500, thaw_ms: 100}
    - {fault: disk-stall, at: 60s, for: 3s, target: broker-3}
    - {fault: slow-sync, at: 66s, for: 5s, target: broker-1, params: {write_iops: 100000}}
"""

EXPECTED = {
    "f-1": ("client-cut", "not-seen"),
    "f-2": ("timeout", "not-seen"),
    "f-3": ("timeout", "seen"),
    "f-4": ("client-cut", "seen"),
    "f-5": ("slow-disk", "not-seen"),
    "f-6": ("disk-stall", "not-seen"),
    "f-7": ("slow-disk", "seen"),
    "f-8": ("disk-stall", "seen"),
    "f-9": ("slow-sync", "not-seen"),
}

GAP = r"without an acknowledgement of .*: ([\d.]+) s of the fault's ([\d.]+) s"
FLUSH = r"slowest log flush (\d+) ms during the fault"
ACKS = r"replicated ([\d.]+) ms during the fault \(\d+ sends\), ([\d.]+) ms before"


def acks(text: str) -> tuple[float, float]:
    """The median ack latencies (ms) a freeze's ``observed`` names: during, before."""
    found = re.search(ACKS, text)
    assert found, f"no ack latencies in {text!r}"
    return float(found.group(1)), float(found.group(2))


def test_black_hole_and_disk_faults_say_whether_they_bit(tmp_path: Path, kafka_images: Any) -> None:
    path = scenario(
        tmp_path, SCHEDULE, "76s", topic_configs="      flush.messages: 20\n",
        producer_configs="      reconnect.backoff.max.ms: 1000\n",
    )  # fmt: skip
    done, faults = run(tmp_path, path, timeout=600)
    assert {n: (f["family"], f["effect"]) for n, f in faults.items()} == EXPECTED, faults
    obs = {n: f["observed"] for n, f in faults.items()}
    # broker 3 leads nothing the producers write: nothing acknowledged to stop
    assert "broker(s) 3 before the fault to tell a stop: 0" in obs["f-1"], obs["f-1"]
    # the acknowledgements kept flowing under the toxic on no connection ...
    gap = number(GAP, obs["f-2"])
    assert gap < 2.0, obs["f-2"]
    # ... and stopped for most of the fault under the ones that bit
    for name in ("f-3", "f-4"):
        assert number(GAP, obs[name]) >= 2.0, obs[name]
    # the freezes: their acknowledgements (sends to partitions the target replicated)
    # against as long a stretch before; the flushes, which a freeze does not slow, told
    for name in ("f-5", "f-6", "f-7", "f-8"):
        assert number(FLUSH, obs[name]) < 1000, obs[name]
    now, then = acks(obs["f-5"])
    assert now < 2 * then, obs["f-5"]  # a 1 ms freeze in every 3 s: no slower
    for name in ("f-7", "f-8"):  # frozen 1.5 s in every 1.6 s; frozen 3 s
        now, then = acks(obs[name])
        assert now >= 2 * then and now - then >= 200, obs[name]
    assert "broker 2:" in obs["f-7"] and "broker 3:" in obs["f-8"]
    # slow-sync at 100,000 writes a second: broker 1's slowest flush no slower than
    # before it (twice, or 200 ms, at most: the timer's maximum is over the broker's life)
    during, before = (
        float(x) for x in re.findall(r"(\d+) ms (?:during the fault|before it)", obs["f-9"])
    )
    assert during < max(200.0, 2 * before), obs["f-9"]
    # the run kept every acknowledged write, as the smoke workload expects
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
