"""Each fault says whether it bit: the crash, partition, disk-full and leadership families
(history format 1.3 ``evidence.faults``), on real brokers. test_fault_evidence.py has the
pause, network and slow-sync families in ``make test``; this second run is ``extended``
(``make extended``): it does not fit in the suite's 45 minutes.

One run of the library's ``smoke`` cluster and workload with eight faults, each family
once aimed where it cannot bite (not seen) and once where it must (seen):

- a preferred-leader election of the topic while every leader is still its preferred one
  (not seen: no leader moves), and again after a kill moved partition 0's leader (seen: it
  moves back);
- a disk fill capped at 1 MB (not seen: no ENOSPC in broker 2's log), then an uncapped
  one (seen: "No space left on device");
- broker 3 isolated for 1.5 s, less than ``replica.lag.time.max.ms`` (5 s) and the broker
  session (not seen: no ISR shrink, no fencing), then for 10 s (seen: it leaves ISRs);
- a kill of partition 0's leader and a term of broker 1 (seen: each registers again with
  a new broker epoch; the term with its exit code).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_fault_evidence import KCHAOS, scenario

pytestmark = [pytest.mark.docker, pytest.mark.extended]

SCHEDULE = """nemesis:
  steps:
    - {fault: preferred-election, at: 2s, target: none, params: {topic: smoke}}
    - {fault: disk-full, at: 4s, for: 3s, target: broker-2, params: {max_mb: 1}}
    - {fault: isolate, at: 9s, for: 1.5s, target: broker-3}
    - {fault: kill, at: 17s, for: 4s, target: "leader:smoke:0"}
    - {fault: preferred-election, at: 34s, target: none, params: {topic: smoke}}
    - {fault: isolate, at: 38s, for: 10s, target: broker-3}
    - {fault: disk-full, at: 54s, for: 5s, target: broker-2}
    - {fault: term, at: 66s, for: 4s, target: broker-1}
checks:"""

EXPECTED = {
    "f-1": ("preferred-election", "not-seen"),
    "f-2": ("disk-full", "not-seen"),
    "f-3": ("isolate", "not-seen"),
    "f-4": ("kill", "seen"),
    "f-5": ("preferred-election", "seen"),
    "f-6": ("isolate", "seen"),
    "f-7": ("disk-full", "seen"),
    "f-8": ("term", "seen"),
}


def test_crash_partition_disk_and_leadership_faults_say_whether_they_bit(
    tmp_path: Path, kafka_images: Any
) -> None:
    run_dir = tmp_path / "run"
    done = subprocess.run(
        [KCHAOS, "run", str(scenario(tmp_path, SCHEDULE, "80s", "")), "--out", str(run_dir),
         "--quiet"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert (run_dir / "results.json").is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((run_dir / "results.json").read_text())
    faults = {f["name"]: f for f in results["evidence"]["faults"]}
    print(json.dumps(faults, indent=1))
    assert all(f["started"] for f in faults.values()), faults
    assert {n: (f["family"], f["effect"]) for n, f in faults.items()} == EXPECTED, faults
    assert "registered again" in faults["f-4"]["observed"], faults["f-4"]
    assert "exit codes" in faults["f-8"]["observed"], faults["f-8"]
    assert "No space left on device" in faults["f-7"]["observed"], faults["f-7"]
    # the run itself kept every acknowledged write, as the library's smoke expects
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
