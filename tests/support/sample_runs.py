"""A small hand-made run directory, for the report and runner tests, the browser test
and demos (a test helper: ``pythonpath`` in pyproject.toml makes it importable as
``sample_runs`` from tests/unit and tests/integration alike).

``make_run(dir, results=...)`` writes 30 s of history (10 sends/s, one pause fault,
an ISR dip on both partitions, partition t/1 offline for 2 s, a complete drain: the
real checker finds it valid), a run.json, and the given results.json. ``LOST`` and
``VALID`` are two verdicts to pair it with; the series a report plots (fault windows,
offline windows, time to full ISR) are added to them from the real checker's verdict on
this history, as ``kchaos check`` would have written them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kchaos.harness.rundir.rundir import RunDir

S = 1_000_000_000


def make_run(
    run_dir: Path,
    *,
    results: dict[str, Any] | None,
    expect: dict[str, Any] | None = None,
    name: str = "handmade",
    torn: bool = False,
) -> Path:
    rd = RunDir(run_dir).create()
    events: list[dict[str, Any]] = []

    def add(t: float, **e: Any) -> None:
        events.append({"index": len(events), "time": int(t * S), **e})

    for tick in range(0, 300):  # 30 s, 10 sends per second
        t = tick / 10
        value = f"0-{tick}"
        add(t, process=0, type="invoke", f="send", topic="t", key="k", value=value)
        if 10 <= t < 15:
            add(t + 0.5, process=0, type="info", f="send", topic="t", value=value, error="TIMEOUT")
        elif 15 <= t < 16:
            add(t + 0.05, process=0, type="fail", f="send", topic="t", value=value, error="NER")
        else:
            add(
                t + 0.01 + (tick % 7) / 1000,
                process=0,
                type="ok",
                f="send",
                topic="t",
                partition=tick % 2,
                offset=tick // 2,
                value=value,
            )
        if tick % 5 == 0:
            for p in (0, 1):
                leader, isr = 1, [1, 2, 3]
                if 10 <= t < 20:
                    isr = [1, 3]
                if p == 1 and 12 <= t < 14:
                    leader, isr = -1, [1]
                add(
                    t,
                    process="monitor",
                    type="ok",
                    f="metadata",
                    topic="t",
                    partition=p,
                    leader=leader,
                    isr=isr,
                    replicas=[1, 2, 3],
                    min_insync=2,
                )
        if tick in (100, 180):  # the pause of broker-2 starts at 10 s, stops at 18 s
            start = tick == 100
            add(
                t,
                process="nemesis",
                type="info",
                f="fault",
                phase="start" if start else "stop",
                id="f-0",
                fault="pause",
                targets=["broker-2"],
                **({"params": {}} if start else {}),
            )
    acked: dict[int, list[dict[str, Any]]] = {0: [], 1: []}
    for e in events:
        if e.get("f") == "send" and e["type"] == "ok":
            rec = {k: e[k] for k in ("topic", "partition", "offset", "value")}
            acked[e["partition"]].append(rec)
    for p, records in acked.items():
        add(31.0, process="drain", type="ok", f="drain", records=records)
        add(
            31.0,
            process="drain",
            type="ok",
            f="drain-end",
            topic="t",
            partition=p,
            log_start_offset=0,
            high_watermark=records[-1]["offset"] + 1,
        )
    events.sort(key=lambda e: (e["time"], e["index"]))
    for i, e in enumerate(events):
        e["index"] = i
    with rd.history.open("w") as fh:
        for e in events:
            fh.write(json.dumps(e) + "\n")
        if torn:
            fh.write('{"index": 99999, "ti')
    run = {
        "format": 1,
        "run_id": run_dir.name,
        "seed": 3,
        "kafka_version": "4.4.0",
        "image": {"kafka": "kchaos/kafka:4.4.0"},
        "start": "2026-11-21T01:00:00Z",
        "end": "2026-11-21T01:00:30Z",
        "scenario": {
            "name": name,
            "description": "A hand-made run for the report tests.",
            "expect": expect or {"valid": True, "anomalies": [], "allowed": ["offline"]},
            "checks": {"max_offline_seconds": 5.0},
        },
    }
    rd.write_run(run)
    if results is not None:
        rd.write_results(with_series(run_dir, results))
    return run_dir


def with_series(run_dir: Path, results: dict[str, Any]) -> dict[str, Any]:
    """``results`` with the checker's own series of ``run_dir``'s history added."""
    from kchaos.harness.checker import check_history

    checked = check_history(RunDir(run_dir).history).to_json()["stats"]["availability"]
    stats = dict(results.get("stats") or {})
    availability = dict(stats.get("availability") or {})
    for key in ("offline_windows", "full_isr_after_fault", "sends"):
        availability.setdefault(key, checked[key])
    stats["availability"] = availability
    return {**results, "stats": stats}


LOST = {
    "valid": False,
    "anomalies": {
        "lost-write": {
            "count": 1,
            "examples": [{"value": "0-42", "partition": 0, "offset": 21, "indices": [126, 127]}],
        },
        "duplicate": {"count": 1, "examples": [{"value": "0-77", "positions": [[0, 1], [0, 2]]}]},
        "offline": {"count": 1, "examples": [{"partition": ["t", 1], "start": 12, "length": 2}]},
    },
    "stats": {
        "availability": {
            "slo": {"max_offline_seconds": {"threshold": 1.0, "observed": 2.0, "pass": False}}
        }
    },
}
VALID = {
    "valid": True,
    "anomalies": {"offline": {"count": 1, "examples": []}},
    "stats": {"availability": {"slo": {"max_offline_seconds": {"threshold": 1.0, "pass": True}}}},
}
