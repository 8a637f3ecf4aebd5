"""``epoch-checkpoint-lost``: a crash left a partition's leader-epoch checkpoint with no
entry while the partition's segments on the same disk kept data (KAFKA-16541).

The page-cache-losing faults (``hard-reboot``, ``power-loss``) read every partition's
``leader-epoch-checkpoint`` on the node's filesystem right after the remount, before the
broker starts again, and put the result in their start line's ``detail``::

    "epoch_checkpoints": {"broker-2": {"checked": 7, "with_entries": 1, "empty": 6,
        "unreadable": 0, "lost": [{"partition": "epochs-0", "size": 0, "entries": 0,
        "error": null, "log_bytes": 40960, "head": ""}, ...]}}

Kafka writes every epoch assignment with fsync before it appends the records the epoch
describes, so a log that kept data after a crash has a checkpoint with at least one entry,
unless a later rewrite of the file was not synced (3.7.x's truncations). Each ``lost``
entry is one anomaly. Reported, never invalid: the history's data may be intact (the
other replicas have it); ``expect`` requires or forbids the kind per release.

A crash fault whose start line has no ``epoch_checkpoints`` (older runs), or a scan that
failed, judges nothing: the kind is then unjudged (results.json's ``unjudged``, with the
fault and node), unless another scan found one. A run without a page-cache-losing
crash has nothing to judge (the kind is absent). The stats say how many crashes were read.
"""

from __future__ import annotations

from typing import Any

from kchaos.harness.checker.facts import Facts
from kchaos.harness.checker.model import CheckOutcome
from kchaos.harness.checker.sources import CRASH_FILES, Source
from kchaos.harness.rundir.runjson import RunSettings

KIND = "epoch-checkpoint-lost"
DETAIL_KEY = "epoch_checkpoints"
_NS = 1e9
SOURCES = (Source(CRASH_FILES, (KIND,)),)
#: The crashes that lose the page cache and scan the checkpoints (kchaos.faults.crash).
SCANNING = frozenset({"hard-reboot", "power-loss"})


def check_crash_files(facts: Facts, config: RunSettings) -> CheckOutcome:
    del config  # nothing of the run's configuration changes the judgment
    out = CheckOutcome("crash-files")
    counts = {"crashes": 0, "nodes": 0, "unscanned": 0, "checked": 0, KIND: 0}
    for fault in facts.faults:
        scans = fault.detail.get(DETAIL_KEY)
        if not isinstance(scans, dict):
            continue
        counts["crashes"] += 1
        for node, scan in sorted(scans.items()):
            counts["nodes"] += 1
            if not isinstance(scan, dict) or "error" in scan:
                counts["unscanned"] += 1
                continue
            counts["checked"] += int(scan.get("checked") or 0)
            for lost in scan.get("lost") or ():
                if not isinstance(lost, dict):
                    continue
                counts[KIND] += 1
                out.anomaly(KIND).add(_example(fault.fault, fault.id, fault.start_time, node, lost))
    out.stats = counts
    say_read(out, facts)
    return out.settle()


def say_read(out: CheckOutcome, facts: Facts) -> None:
    """Whether every page-cache-losing crash of the run left its scan, every node's
    complete; not needed where the run had no such crash."""
    crashes = [f for f in facts.faults if f.fault in SCANNING and f.error is None]
    if not crashes:
        out.not_read(CRASH_FILES, "no page-cache-losing crash in the run", needed=False)
        return
    missing = []
    for f in crashes:
        scans = f.detail.get(DETAIL_KEY)
        if not isinstance(scans, dict) or not scans:
            missing.append(f"{f.id} ({f.fault}): no {DETAIL_KEY} in its start line")
            continue
        for node, scan in sorted(scans.items()):
            if not isinstance(scan, dict) or "error" in scan:
                error = scan.get("error") if isinstance(scan, dict) else "not an object"
                missing.append(f"{f.id} ({f.fault}): scan of {node} failed: {error}")
    if missing:
        out.not_read(CRASH_FILES, "; ".join(missing))
    else:
        out.read(CRASH_FILES)


def _example(
    fault: str, fault_id: str, start_time: int, node: str, lost: dict[str, Any]
) -> dict[str, Any]:
    return {
        "node": node,
        "partition": lost.get("partition"),
        "fault": fault,
        "fault_id": fault_id,
        "time_s": round(start_time / _NS, 6),
        "checkpoint_bytes": lost.get("size"),
        "entries": lost.get("entries"),
        "error": lost.get("error"),
        "log_bytes": lost.get("log_bytes"),
        "head": lost.get("head"),
    }
