"""kip-890-hanging-transaction on real brokers: the affected side (3.5.2).

One run of the library scenario: a 30 s latency toxic on the client links of the two
brokers that are not the producer's transaction coordinator holds the produce requests of
the Java producer's transaction; the producer times out and aborts; the final heal, after
the producer stopped, releases the held requests; 3.5.2 appends them after the ABORT
markers. The test reads what the run left, not only its exit code:

* `kchaos run` ended as the scenario expects (hanging-transaction required on 3.5.2);
* results.json judged hanging-transaction on the producers' real timeout (10 s, from the
  run description), with the drain's wait above it;
* the fault started on two brokers, neither the coordinator;
* on each hung partition the leader's replica dump has, as its last batch, a
  transactional record of the producer's aborted transaction after a control batch (its
  own ABORT marker): the late produce was appended;
* no broker refused a produce to the topic (3.5.x has no verification).

The fixed side (3.9.1) and the catch rates over 10 seeds run in `make known-bugs`
(docs/tickets.md, "KIP-890 part 1"). About 90 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
KCHAOS = [sys.executable, "-m", "kchaos.cli"]

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_late_produce_hangs_the_partition_on_3_5_2(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = subprocess.run(
        [*KCHAOS, "run", "kip-890-hanging-transaction", "--kafka-version", "3.5.2",
         "--out", str(out), "--quiet"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    hung = results["anomalies"]["hanging-transaction"]["examples"]
    assert hung, results["anomalies"]
    for ex in hung:
        assert ex["transaction_timeout_ms"] == 10_000
        assert ex["waited_ms"] > 10_000 and ex["last_stable_offset"] < ex["high_watermark"]

    history = lines(out / "history.jsonl")
    start = next(e for e in history if e["f"] == "fault" and e["id"] == "f-1")
    assert start["phase"] == "start" and len(start["targets"]) == 2
    # the coordinator is the third broker: its partition's sends were never held
    outcome = {e["txn"]: e["type"] for e in history if e["f"] == "txn" and e["type"] != "invoke"}
    assert "fail" in outcome.values()

    leader = {p: r[0] for p, r in enumerate([[1, 2, 3], [2, 3, 1], [3, 1, 2]])}
    assert {f"broker-{leader[ex['partition']]}" for ex in hung} <= set(start["targets"])
    batches = [b for b in lines(out / "replicas.jsonl") if b.get("type") == "batch"]
    for ex in hung:
        p = ex["partition"]
        mine = [b for b in batches if b["partition"] == p and b["broker"] == leader[p]]
        last, before = mine[-1], mine[-2]
        assert last["transactional"] and not last["control"], last
        assert before["control"] and before["producer_id"] == last["producer_id"], before
        value = last["records"][0][2]
        txn = value.rsplit("-", 1)[0]
        assert outcome.get(txn) == "fail", (value, outcome.get(txn))

    refused = [
        line
        for log in (out / "logs").glob("*/server.log")
        for line in log.read_text(errors="replace").splitlines()
        if "Produce request with correlation id" in line and "partition hang-" in line
    ]
    assert not refused, refused
