"""Each fault says whether it bit: zombie, hard-reboot, rolling-restart and power-loss
(history format 1.3 ``evidence.faults``), on real brokers. ``extended`` (``make
extended``): it does not fit in the suite's 45 minutes.

One run of the library's ``txn-zombie-fencing`` cluster and transactional workload (three
brokers, two transactional producers, two read_committed readers) with four faults, each
of which can only be ``seen`` on a running cluster:

- the library's zombie of ``kchaos-t-3`` (seen: the replacement process initialised the
  id after the stopped one's last init, at a higher producer epoch). A zombie cannot be
  aimed where it cannot bite: the fault itself starts the replacement and waits for its
  txn-init, and a target with no worker fails to start. Its not-seen (the replacement's
  init before the stopped process's last) is a unit test
  (tests/unit/checker/test_checker_effects.py);
- a hard-reboot of broker 2, a rolling restart of every broker, and a power loss of every
  node (seen: each broker registers again with a new broker epoch; the rolling restart
  with its exit codes). A crash aimed where it cannot bite is a broker that does not come
  back as a new incarnation, which a real cluster does not offer: those not-seen cases
  are unit tests (a kill, term, hard-reboot or power loss whose broker came back with the
  same epoch; a power loss with one broker never back; a rolling restart without exit
  codes or with a broker never back).

The power loss loses what the brokers had not written back, and what the run's verdict
says about that is not this test's business (the whole-cluster-power-loss scenarios
judge it): only the evidence is asserted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_fault_evidence_more import number, run

from kchaos.harness.scenario import library

pytestmark = [pytest.mark.docker, pytest.mark.extended]

SCHEDULE = """nemesis:
  steps:
    - {fault: zombie, at: 6s, for: 8s, target: "client:txn:kchaos-t-3"}
    - {fault: hard-reboot, at: 18s, for: 3s, target: broker-2}
    - {fault: rolling-restart, at: 40s, for: 2s, target: brokers, params: {interval_s: 1}}
    - {fault: power-loss, at: 95s, for: 3s, target: all}
"""

EXPECTED = {
    "f-1": ("zombie", "seen"),
    "f-2": ("hard-reboot", "seen"),
    "f-3": ("rolling-restart", "seen"),
    "f-4": ("power-loss", "seen"),
}


def scenario(tmp_path: Path) -> Path:
    """txn-zombie-fencing with this module's schedule and a 130 s workload."""
    text = library.resolve("txn-zombie-fencing").read_text()
    start, end = text.index("nemesis:"), text.index("checks:")
    text = text[:start] + SCHEDULE + text[end:]
    text = text.replace("name: txn-zombie-fencing", "name: txn-fault-evidence", 1)
    text = text.replace("  duration: 25s\n", "  duration: 130s\n", 1)
    assert "duration: 130s" in text
    path = tmp_path / "evidence.yaml"
    path.write_text(text)
    return path


def test_zombie_and_crash_faults_say_that_they_bit(tmp_path: Path, kafka_images: Any) -> None:
    _, faults = run(tmp_path, scenario(tmp_path), timeout=800)
    assert {n: (f["family"], f["effect"]) for n, f in faults.items()} == EXPECTED, faults
    obs = {n: f["observed"] for n, f in faults.items()}
    assert "process 5 initialised kchaos-t-3" in obs["f-1"], obs["f-1"]
    assert number(r"\(epoch (\d+)\)", obs["f-1"]) >= 1, obs["f-1"]
    # every broker a crash hit registered again, each with a new epoch
    for name, brokers in (("f-2", [2]), ("f-3", [1, 2, 3]), ("f-4", [1, 2, 3])):
        for b in brokers:
            epoch = number(rf"broker {b} registered again at [\d.]+ s with epoch (\d+)", obs[name])
            assert epoch > 0, obs[name]
    assert "exit codes broker-1: " in obs["f-3"] and "broker-3: " in obs["f-3"], obs["f-3"]
