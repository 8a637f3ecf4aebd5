"""After the final heal, a run with a time-to-full-ISR SLO waits for the scenario's topics'
whole ISR before the drain (kchaos.harness.run.topics.await_full_isr)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kchaos.harness.errors import ReadinessTimeout
from kchaos.harness.run.topics import await_full_isr
from kchaos.harness.scenario import library


class Cluster:
    def __init__(self, full: bool) -> None:
        self.full = full
        self.calls: list[tuple[list[str] | None, float]] = []

    def wait_isr_full(self, topics: list[str] | None = None, timeout: float = 60.0) -> None:
        self.calls.append((topics, timeout))
        if not self.full:
            raise ReadinessTimeout("ISR not full: slow-0 isr [2, 3] of [1, 2, 3]")


def test_waits_for_the_scenarios_topics_up_to_the_slo() -> None:
    sc = library.load("kip-501-slow-leader")
    cluster = Cluster(full=True)
    kept = await_full_isr(cluster, sc)
    assert cluster.calls == [(["slow"], 80.0)]
    assert kept is not None and kept["full"] is True and kept["seconds"] >= 0


def test_a_timeout_is_kept_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    sc = library.load("kip-501-slow-leader")
    kept = await_full_isr(Cluster(full=False), sc)
    assert kept is not None and kept["full"] is False
    assert "ISR still not full 80 s after the final heal" in caplog.text


def test_no_wait_without_the_slo() -> None:
    sc = library.load("kip-501-slow-leader")
    sc = replace(sc, checks=replace(sc.checks, max_time_to_full_isr_seconds=None))
    cluster = Cluster(full=False)
    assert await_full_isr(cluster, sc) is None
    assert cluster.calls == []
