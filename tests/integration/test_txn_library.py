"""The transactional library scenarios without a test of their own elsewhere, run as a
user runs them (``kchaos run NAME``) on a real 4.4.0 cluster (or
``KCHAOS_TEST_KAFKA_VERSION``), each judged by ``kchaos check``'s verdict and by the
evidence that its faults bit:

* ``txn-coordinator-failover``: a transaction coordinator hard-killed, another paused,
  the copier's group coordinator isolated; valid, every fault's effect seen, the copier
  judged (the exactly-once kinds in neither ``anomalies`` nor ``unjudged``);
* ``eos-copier-broker-bounces``: every broker hard-bounced in turn under the copier;
  valid, three kills seen (a new broker epoch each), the copier judged and committing;
* ``txn-unsafe-unclean-election``: the negative control; ``lost-write`` found after the
  unclean election the kill caused, both faults seen.

The scenarios list their faults in ``expect.effects``, so "as expected" (exit 0) already
requires each effect ``seen``; the tests read results.json too, so that a scenario file
that lost its ``effects`` would still fail here.

About 5 minutes for the three: longer than ``make test``'s room (it stays under 45
minutes), so they carry the ``extended`` mark, which the suite leaves out, and run with
``make extended`` (docs/ci.md). Their results are in docs/incidents.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.extended]

KCHAOS = str(Path(sys.executable).with_name("kchaos"))

# the kinds by which the copier's work is judged (history format 1.2 and 1.3)
COPIER_KINDS = ("eos-lost", "eos-duplicate", "lost-write", "aborted-read")


def _run(name: str, run_dir: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    version = os.environ.get("KCHAOS_TEST_KAFKA_VERSION")
    extra = ["--kafka-version", version] if version else []
    done = subprocess.run(
        [KCHAOS, "run", name, "--out", str(run_dir), "--quiet", *extra],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert (run_dir / "results.json").is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    return done, json.loads((run_dir / "results.json").read_text())


def _faults_seen(results: dict[str, Any], families: Counter[str]) -> None:
    """Every fault of the run started and had its effect seen; ``families`` counts them."""
    faults = results["evidence"]["faults"]
    assert Counter(f["family"] for f in faults) == families, faults
    for fault in faults:
        assert fault["started"] and fault["effect"] == "seen", fault
        assert fault.get("observed"), fault


def _judged(results: dict[str, Any], kinds: tuple[str, ...]) -> None:
    unjudged = results.get("unjudged") or {}
    missing = [k for k in kinds if k in unjudged]
    assert not missing, f"not judged: {missing}: {unjudged}"


def _committed_copies(run_dir: Path) -> int:
    events = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    ok = {e["txn"] for e in events if e["f"] == "txn" and e["type"] == "ok"}
    return sum(
        len(e["sends"]) for e in events
        if e["f"] == "txn" and e["type"] == "invoke" and "consumed" in e and e["txn"] in ok
    )  # fmt: skip


def _checked(run_dir: Path) -> subprocess.CompletedProcess[str]:
    """``kchaos check`` of the run directory: the verdict judged again from its files."""
    return subprocess.run([KCHAOS, "check", str(run_dir)], capture_output=True, text=True)


def test_coordinators_fail_and_transactions_stay_exactly_once(
    tmp_path: Path, kafka_images: Any
) -> None:
    run_dir = tmp_path / "run"
    done, results = _run("txn-coordinator-failover", run_dir)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert results["valid"] is True, results["anomalies"]
    _faults_seen(results, Counter({"kill": 1, "pause": 1, "isolate": 1}))
    _judged(results, (*COPIER_KINDS, "torn-transaction", "hanging-transaction"))
    assert _committed_copies(run_dir) >= 5, "the copier committed (almost) nothing"
    assert _checked(run_dir).returncode == 0


def test_every_broker_bounced_under_the_copier_copies_each_value_once(
    tmp_path: Path, kafka_images: Any
) -> None:
    run_dir = tmp_path / "run"
    done, results = _run("eos-copier-broker-bounces", run_dir)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert results["valid"] is True, results["anomalies"]
    _faults_seen(results, Counter({"kill": 3}))
    _judged(results, COPIER_KINDS)
    assert _committed_copies(run_dir) >= 5, "the copier committed (almost) nothing"
    assert _checked(run_dir).returncode == 0


def test_an_unclean_election_under_transactions_is_caught(
    tmp_path: Path, kafka_images: Any
) -> None:
    run_dir = tmp_path / "run"
    done, results = _run("txn-unsafe-unclean-election", run_dir)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert results["valid"] is False and "lost-write" in results["anomalies"], results
    _faults_seen(results, Counter({"timeout": 1, "kill": 1}))
    checked = _checked(run_dir)
    assert checked.returncode == 1, checked.stdout + checked.stderr
