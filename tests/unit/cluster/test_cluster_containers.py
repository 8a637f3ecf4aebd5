"""Host-side helpers that need no Docker: routes, error lines, signals."""

from __future__ import annotations

import subprocess

import pytest

from kchaos.harness.cluster.containers import error_lines, host_routes, send_signal
from kchaos.harness.errors import ClusterError

ROUTES = """\
Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
br-1\t0005D50A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
"""


def test_host_routes_skip_the_default_route() -> None:
    assert host_routes(ROUTES) == ["192.0.2.0/24", "10.213.5.0/24"]


def test_error_lines_pick_the_brokers_own_complaint() -> None:
    log = "\n".join(
        [
            "[2026-11-21 01:00:00,000] INFO starting (kafka.server.KafkaServer)",
            "[2026-11-21 01:00:01,000] ERROR Exiting Kafka due to fatal exception (kafka.Kafka$)",
            "org.apache.kafka.common.config.ConfigException: Invalid value x for configuration"
            " num.network.threads: Not a number of type INT",
            "\tat org.apache.kafka.common.config.ConfigDef.parseType(ConfigDef.java:1)",
        ]
    )
    lines = error_lines(log)
    assert len(lines) == 2
    assert "Invalid value x" in lines[1]
    assert error_lines("INFO all fine\nINFO still fine") == []


def test_send_signal_by_name() -> None:
    proc = subprocess.Popen(["sleep", "30"])
    try:
        send_signal(proc.pid, "TERM")
        assert proc.wait(timeout=5) == -15
    finally:
        proc.kill()
    with pytest.raises(ClusterError, match="unknown signal"):
        send_signal(proc.pid, "NOPE")
