"""The wait strategy: returns once the check holds; a timeout says what it saw last."""

from __future__ import annotations

import pytest

from kchaos.harness.cluster.wait import Until
from kchaos.harness.errors import BrokerStartError, ReadinessTimeout, WaitTimeout


def test_returns_once_the_check_holds() -> None:
    seen = iter(["2 of 3 up", "2 of 3 up", None])
    wait = Until("brokers up", lambda: next(seen), timeout=5).with_poll_interval(0.01)
    wait.wait_until_ready()
    assert wait.last is None


def test_timeout_carries_the_last_observation() -> None:
    count = 0

    def check() -> str:
        nonlocal count
        count += 1
        return f"observation {count}"

    wait = Until("ISR full", check, timeout=0.2).with_poll_interval(0.05)
    with pytest.raises(WaitTimeout) as err:
        wait.wait_until_ready()
    assert isinstance(err.value, ReadinessTimeout)
    assert err.value.last == f"observation {count}" and count >= 2
    assert f"ISR full: not reached after 0s; last seen: observation {count}" == str(err.value)


def test_transient_errors_are_observations_others_end_the_wait() -> None:
    def refused() -> str | None:
        raise ConnectionError("refused")

    wait = Until("API", refused, timeout=0.1, transient=(ConnectionError,))
    with pytest.raises(WaitTimeout, match="last seen: ConnectionError: refused"):
        wait.with_poll_interval(0.02).wait_until_ready()

    def exited() -> str | None:
        raise BrokerStartError("broker-1 exited")

    with pytest.raises(BrokerStartError):
        Until("cluster ready", exited, timeout=10).wait_until_ready()
