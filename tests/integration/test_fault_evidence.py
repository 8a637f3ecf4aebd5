"""Each fault says whether it bit (history format 1.3 ``evidence.faults``), on real brokers.

One short run of the library's ``smoke`` cluster and workload with eight faults:

- the library's pause of a broker (seen: the ISR it cost);
- a latency toxic of 0 ms on the client link of partition 0's leader (aimed where it
  cannot bite: not seen), then the same toxic at 1500 ms (seen: that leader's
  acknowledgements slower by at least half of it);
- a ``slow-sync`` throttle on broker 2 while the topic fsyncs every 20 records
  (``flush.messages``; seen: broker 2's own log flush timer, scraped from its JMX
  exporter, far slower than before);
- rate limits on that leader's client link of 0 KB/s (no limit in Toxiproxy: not seen)
  and 1 KB/s (seen: its acknowledgements wait in line);
- reset-peer toxics there on no connection (toxicity 0: not seen) and on every one (seen:
  no acknowledgement from that leader while it lasts).

Then the same results judged against an expectation that lists the harmless fault: not
exercised.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kchaos.harness.rundir.expect import EXIT_NOT_EXERCISED, evaluate
from kchaos.harness.scenario import library

pytestmark = [pytest.mark.docker]

KCHAOS = str(Path(sys.executable).with_name("kchaos"))

SCHEDULE = """nemesis:
  steps:
    - fault: pause
      at: 5s
      for: 7s
      target: random
    - fault: latency
      at: 14s
      for: 5s
      target: leader:smoke:0
      params:
        link: client
        latency_ms: 0
    - fault: latency
      at: 21s
      for: 5s
      target: leader:smoke:0
      params:
        link: client
        latency_ms: 1500
    - fault: slow-sync
      at: 28s
      for: 6s
      target: broker-2
      params: {write_iops: 1, write_bps: 262144}
    - fault: bandwidth
      at: 36s
      for: 4s
      target: leader:smoke:0
      params:
        link: client
        rate_kbps: 0
    - fault: bandwidth
      at: 42s
      for: 5s
      target: leader:smoke:0
      params:
        link: client
        rate_kbps: 1
    - fault: reset-peer
      at: 50s
      for: 4s
      target: leader:smoke:0
      params:
        link: client
        toxicity: 0
    - fault: reset-peer
      at: 56s
      for: 4s
      target: leader:smoke:0
      params:
        link: client
checks:"""


def scenario(
    tmp_path: Path,
    schedule: str = SCHEDULE,
    duration: str = "64s",
    topic_configs: str = "      flush.messages: 20\n",
) -> Path:
    """The library's smoke scenario with ``schedule`` (a ``nemesis:`` mapping ending in
    ``checks:``) for its nemesis, a ``duration`` workload and ``topic_configs`` added to
    its topic. The defaults are this module's: room for the disk fault, and an fsync every
    20 records for it to slow."""
    text = library.resolve("smoke").read_text()
    start, end = text.index("nemesis:"), text.index("checks:")
    text = text[:start] + schedule + text[end + len("checks:") :]
    text = text.replace("name: smoke", "name: smoke-fault-evidence", 1)
    text = text.replace("  duration: 30s\n", f"  duration: {duration}\n", 1)
    text = text.replace(
        "      min.insync.replicas: 2\n",
        "      min.insync.replicas: 2\n" + topic_configs,
        1,
    )
    path = tmp_path / "evidence.yaml"
    path.write_text(text)
    return path


def test_each_fault_says_whether_it_bit(tmp_path: Path, kafka_images: Any) -> None:
    run_dir = tmp_path / "run"
    done = subprocess.run(
        [KCHAOS, "run", str(scenario(tmp_path)), "--out", str(run_dir), "--quiet"],
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert (run_dir / "results.json").is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((run_dir / "results.json").read_text())
    faults = {f["name"]: f for f in results["evidence"]["faults"]}
    print(json.dumps(faults, indent=1))
    assert set(faults) == {f"f-{i}" for i in range(1, 9)}, faults
    assert all(f["started"] for f in faults.values()), faults
    assert (faults["f-1"]["family"], faults["f-1"]["effect"]) == ("pause", "seen")
    assert (faults["f-2"]["family"], faults["f-2"]["effect"]) == ("latency", "not-seen")
    assert (faults["f-3"]["family"], faults["f-3"]["effect"]) == ("latency", "seen")
    assert "1500 ms configured" in faults["f-3"]["observed"], faults["f-3"]
    assert (faults["f-4"]["family"], faults["f-4"]["effect"]) == ("slow-sync", "seen")
    assert "broker 2: slowest log flush" in faults["f-4"]["observed"], faults["f-4"]
    # a rate limit of 0 (none, in Toxiproxy), then 1 KB/s on a link that carries several
    assert (faults["f-5"]["family"], faults["f-5"]["effect"]) == ("bandwidth", "not-seen")
    assert (faults["f-6"]["family"], faults["f-6"]["effect"]) == ("bandwidth", "seen")
    # connections reset on none of them (toxicity 0), then on every one
    assert (faults["f-7"]["family"], faults["f-7"]["effect"]) == ("reset-peer", "not-seen")
    assert (faults["f-8"]["family"], faults["f-8"]["effect"]) == ("reset-peer", "seen")
    # the run itself ended as the library's smoke expects (nothing lost)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # an expectation that needs the harmless fault to bite: not exercised, whatever the
    # verdict; one that needs only the faults that bit: as expected
    idle = evaluate({"valid": True, "allowed": ["offline"], "effects": ["f-1", "f-2"]}, results)
    assert (idle.exit_code, idle.label) == (EXIT_NOT_EXERCISED, "not exercised"), idle
    assert "f-2" in idle.not_exercised
    bit = evaluate({"valid": True, "allowed": ["offline"], "effects": ["f-1", "f-3"]}, results)
    assert bit.expected, bit.reasons
