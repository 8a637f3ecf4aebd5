from __future__ import annotations

from kchaos.faults.hold import parse_fault


def test_parse_fault_arguments() -> None:
    assert parse_fault("pause") == ("pause", None, {})
    assert parse_fault("pause:broker-2") == ("pause", "broker-2", {})
    assert parse_fault("latency:1:latency_ms=300,link=replication,toxicity=0.5") == (
        "latency",
        "1",
        {"latency_ms": 300, "link": "replication", "toxicity": 0.5},
    )
    assert parse_fault("isolate::clients=true") == ("isolate", None, {"clients": True})
