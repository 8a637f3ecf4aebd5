"""summary.json: the run in a few machine-readable numbers (for CI and trend tables)."""

from __future__ import annotations

from typing import Any

from kchaos.harness.rundir.expect import Outcome, verdict_text
from kchaos.reports.rundata import RunData


def summarize(data: RunData, outcome: Outcome) -> dict[str, Any]:
    anomalies = (data.results or {}).get("anomalies") or {}
    counts = {
        k: (v.get("count", 1) if isinstance(v, dict) else v) for k, v in sorted(anomalies.items())
    }
    # what the checker put each occurrence down to, where it could tell (duplicates)
    causes = {
        k: dict(v["causes"])
        for k, v in sorted(anomalies.items())
        if isinstance(v, dict) and isinstance(v.get("causes"), dict) and v["causes"]
    }
    unjudged = (data.results or {}).get("unjudged")
    summary: dict[str, Any] = {
        "run_id": data.run_id,
        "scenario": data.scenario_name,
        "kafka_version": data.run.kafka_version,
        "seed": data.run.seed,
        "verdict": verdict_text(outcome.verdict),
        "valid": outcome.verdict,
        "expected": outcome.expected,
        # "as expected", "NOT as expected", "not judged" or "not exercised"
        # (kchaos.harness.rundir.expect)
        "outcome": outcome.label,
        "exit_code": outcome.exit_code,
        "reasons": list(outcome.reasons),
        "anomalies": counts,
        "causes": causes,
        # kinds whose source was not read, with the reason (results.json's ``unjudged``)
        "unjudged": dict(unjudged) if isinstance(unjudged, dict) else {},
        "slo": dict(outcome.slo),
        "sends": dict(data.totals),
        "faults": len(data.faults),
        "offline_windows": len(data.offline),
        "duration_s": round(data.end, 3),
        "history_events": data.events,
        "torn_lines": data.torn_lines,
        "analysis": bool(data.analysis),
    }
    if data.txn_outcomes:  # a transactional run: its sends are inside the transactions
        summary["transactions"] = data.txn_totals
    return summary
