"""The wait strategy: returns once the check holds; a timeout says what it saw last."""

from __future__ import annotations

import pytest

from kchaos.harness.cluster.wait import Tried, Until, retry_call
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


def _ticks(step: float = 1.0):  # type: ignore[no-untyped-def]
    now = [0.0]

    def clock() -> float:
        now[0] += step
        return now[0]

    return clock


def test_retry_call_returns_the_first_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", lambda s: None)
    answers = iter([ConnectionError("down"), ConnectionError("still down"), 42])

    def call() -> int:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    got = retry_call(call, end=10.0, clock=_ticks())
    assert got == Tried(True, 42)


def test_retry_call_gives_the_last_error_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", lambda s: None)
    calls = 0

    def call() -> int:
        nonlocal calls
        calls += 1
        raise TimeoutError(f"attempt {calls}")

    got = retry_call(call, end=3.5, clock=_ticks())
    assert got == Tried(False, None, "TimeoutError('attempt 3')") and calls == 3
    assert retry_call(call, end=0.0, clock=_ticks()) == Tried(False, None, "")


def test_retry_call_lets_other_errors_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", lambda s: None)

    def call() -> int:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        retry_call(call, end=10.0, clock=_ticks(), retry_on=(ConnectionError,))
