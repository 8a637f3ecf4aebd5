"""Availability: offline windows, per-fault send outcomes and latency, time to full ISR.

Reported in ``stats``; part of validity only through thresholds configured in run.json
(``checks.max_offline_seconds``, ``checks.max_time_to_full_isr_seconds``,
``checks.min_ok_sends``).
"""

from __future__ import annotations

import math
from array import array
from typing import Any

from kchaos.harness.checker.facts import PENDING, Facts
from kchaos.harness.checker.model import CheckOutcome
from kchaos.harness.checker.recovery import time_to_full_isr
from kchaos.harness.checker.sources import (
    CONTROLLER,
    SAMPLES,
    Source,
    read_controller,
    read_samples,
)
from kchaos.harness.rundir.history import OK
from kchaos.harness.rundir.runjson import RunSettings

_NS = 1e9

#: Offline windows: from controller.jsonl where it describes the partition, else from the
#: monitor's samples.
SOURCES = (Source(CONTROLLER, ("offline",), fallback=SAMPLES), Source(SAMPLES, ("offline",)))


def check_availability(facts: Facts, config: RunSettings) -> CheckOutcome:
    out = CheckOutcome("availability")
    read_controller(out, facts)
    read_samples(out, facts)
    windows = offline_windows(facts)
    for w in windows:
        out.anomaly("offline").add(w)
    full_isr = time_to_full_isr(facts)
    out.stats = {
        "sends": _send_stats(facts),
        "offline_windows": windows,
        "full_isr_after_fault": full_isr,
    }
    slo: dict[str, Any] = {}
    if config.max_offline_seconds is not None:
        worst = max((w["length_s"] for w in windows), default=0.0)
        slo["max_offline_seconds"] = {
            "threshold": config.max_offline_seconds,
            "observed": worst,
            "pass": worst <= config.max_offline_seconds,
        }
    if config.max_time_to_full_isr_seconds is not None:
        record = facts.controller
        end = max(facts.last_time, record.last_time if record is not None else 0)
        slo["max_time_to_full_isr_seconds"] = _full_isr_slo(
            full_isr, config.max_time_to_full_isr_seconds, end / _NS
        )
    if config.min_ok_sends is not None:
        # a committed transaction's values were acknowledged too (history format 1.2): a
        # run of transactional producers only must not fail for having no plain send
        log = facts.txn
        committed = sum(1 for pos in log.txn_of.values() if log.outcome(pos) == OK)
        ok = out.stats["sends"]["all"]["ok"] + committed
        slo["min_ok_sends"] = {
            "threshold": config.min_ok_sends,
            "observed": ok,
            "pass": ok >= config.min_ok_sends,
        }
    out.stats["slo"] = slo
    out.settle()
    if any(s["pass"] is False for s in slo.values()):
        out.valid = False
    elif out.valid is True and any(s["pass"] == UNKNOWN for s in slo.values()):
        out.valid = "unknown"
    return out


UNKNOWN = "unknown"  # an SLO's "pass" where it could not be measured


def _full_isr_slo(full_isr: list[dict[str, Any]], threshold: float, end_s: float) -> dict[str, Any]:
    """Fails where an ISR took too long, or never became full again although the history
    and the controller's record went on for ``threshold`` seconds after the fault's stop
    (``end_s``: the later of their ends). "unknown" (never a pass) where a fault's time
    could not be measured: nothing described the partitions, or the record ended sooner
    than ``threshold`` after the stop with a partition still short, so the deadline had
    not passed when it stopped looking."""
    unknown = [f["id"] for f in full_isr if f.get("unknown")]
    never = []
    too_soon: dict[str, float] = {}
    for f in full_isr:
        if f["seconds"] is not None or f.get("unknown"):
            continue
        watched = round(end_s - f["stop_s"], 6)
        if watched >= threshold:
            never.append(f["id"])
        else:
            too_soon[f["id"]] = watched
            unknown.append(f["id"])
    worst = max((f["seconds"] for f in full_isr if f["seconds"] is not None), default=0.0)
    passed: bool | str = not never and worst <= threshold
    if passed and unknown:
        passed = UNKNOWN
    out: dict[str, Any] = {
        "threshold": threshold,
        "observed": None if never or unknown else worst,
        "pass": passed,
    }
    if unknown:
        out["unknown_faults"] = unknown
    if too_soon:
        out["ended_before_threshold_s"] = too_soon
    return out


def offline_windows(facts: Facts) -> list[dict[str, Any]]:
    """Stretches with leader -1, per partition, with start and length: from the
    controller's record where it describes the partition, else from the samples."""
    record = facts.controller
    found = [] if record is None else record.offline_windows(max(facts.last_time, record.last_time))
    for tp, obs in enumerate(facts.observations):
        if record is not None and record.covers(*facts.tps[tp]):
            continue
        start = -1
        for i, leader in enumerate(obs.leader):
            if leader < 0 and start < 0:
                start = i
            elif leader >= 0 and start >= 0:
                found.append(_window(facts, tp, start, obs.time[i], obs.index[i], False))
                start = -1
        if start >= 0:
            found.append(_window(facts, tp, start, facts.last_time, None, True))
    found.sort(key=lambda w: (w["start_s"], w["topic"], w["partition"]))
    return found


def _window(
    facts: Facts, tp: int, start: int, end_time: int, end_index: int | None, still_open: bool
) -> dict[str, Any]:
    obs = facts.observations[tp]
    t0 = obs.time[start]
    index = [obs.index[start]] + ([end_index] if end_index is not None else [])
    return {
        **facts.where(tp),
        "start_s": round(t0 / _NS, 6),
        "length_s": round((end_time - t0) / _NS, 6),
        "open": still_open,
        "index": index,
    }


def _send_stats(facts: Facts) -> dict[str, Any]:
    """Outcomes and ok-latency of sends, overall, outside faults and per fault window
    (a send belongs to every fault open when it was invoked)."""
    nb = len(facts.faults) + 2  # 0: all sends, 1: outside faults, 2..: per fault
    counts = [[0, 0, 0, 0] for _ in range(nb)]  # ok, fail, info, pending
    lat: list[list[array]] = [[] for _ in range(nb)]
    pending = [0] * len(facts.epoch_faults)
    status = facts.status.tobytes()
    i = status.find(PENDING)
    while i >= 0:
        pending[facts.epoch[i]] += 1
        i = status.find(PENDING, i + 1)
    for epoch, ids in enumerate(facts.epoch_faults):
        c = [*facts.epoch_counts[epoch], pending[epoch]]
        buckets = [0, *(n + 2 for n in ids)] if ids else [0, 1]
        for b in buckets:
            for k in range(4):
                counts[b][k] += c[k]
            lat[b].append(facts.epoch_latency[epoch])
    per_fault = []
    for n, f in enumerate(facts.faults):
        stop = f.stop_time
        per_fault.append(
            {
                "id": f.id,
                "fault": f.fault,
                "targets": f.targets,
                "start_s": round(f.start_time / _NS, 6),
                "stop_s": None if stop is None else round(stop / _NS, 6),
                "duration_s": None if stop is None else round((stop - f.start_time) / _NS, 6),
                **({"error": f.error} if f.error is not None else {}),
                **_bucket(counts[n + 2], lat[n + 2]),
            }
        )
    return {
        "all": _bucket(counts[0], lat[0]),
        "outside_faults": _bucket(counts[1], lat[1]),
        "per_fault": per_fault,
    }


def _bucket(c: list[int], parts: list[array]) -> dict[str, Any]:
    lat = array("q")
    for part in parts:
        lat.extend(part)
    return {
        "ok": c[0],
        "fail": c[1],
        "info": c[2],
        "pending": c[3],
        "latency_ms": latency_summary(lat),
    }


def latency_summary(lat: array) -> dict[str, float | None]:
    """p50, p99 and max (nearest rank) in milliseconds; None when there is nothing."""
    if not lat:
        return {"p50": None, "p99": None, "max": None}
    s = sorted(lat)
    n = len(s)

    def rank(q: float) -> float:
        return round(s[max(math.ceil(q * n) - 1, 0)] / 1e6, 3)

    return {"p50": rank(0.5), "p99": rank(0.99), "max": round(s[-1] / 1e6, 3)}
