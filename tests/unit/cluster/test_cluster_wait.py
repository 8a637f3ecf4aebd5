"""The wait strategy: returns once the check holds; a timeout says what it saw last."""

from __future__ import annotations

import math
import threading

import pytest
from fakeclock import FakeClock, only_this_thread

from kchaos.harness.cluster.retry import Poll, Tried, retry_call
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


def test_until_takes_the_strategys_timeout_and_polls_options() -> None:
    from testcontainers.core.config import testcontainers_config

    wait = Until("x", lambda: None)
    assert wait._startup_timeout == testcontainers_config.timeout
    assert wait._poll_interval == 0.3 and wait.transient == () and wait._attempts is None
    wait = Until("x", lambda: None, timeout=2.5, interval=0.1, attempts=4).with_poll_interval(0.2)
    assert (wait._startup_timeout, wait._poll_interval, wait._attempts) == (2.5, 0.2, 4)


def test_a_misspelt_option_is_refused_where_mypy_does_not_look() -> None:
    with pytest.raises(TypeError, match="unknown options: intervall"):
        Until("x", lambda: None, intervall=0.1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unknown options: atempts, timout"):
        Poll("x", lambda: None, timeout=1, timout=2, atempts=3)  # type: ignore[call-arg]


def _ticks(step: float = 1.0):  # type: ignore[no-untyped-def]
    now = [0.0]

    def clock() -> float:
        now[0] += step
        return now[0]

    return clock


def test_retry_call_returns_the_first_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", only_this_thread(lambda s: None))
    answers = iter([ConnectionError("down"), ConnectionError("still down"), 42])

    def call() -> int:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    got = retry_call(call, end=10.0, clock=_ticks())
    assert got == Tried(True, 42)


def test_retry_call_gives_the_last_error_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", only_this_thread(lambda s: None))
    calls = 0

    def call() -> int:
        nonlocal calls
        calls += 1
        raise TimeoutError(f"attempt {calls}")

    got = retry_call(call, end=3.5, clock=_ticks())
    assert got == Tried(False, None, "TimeoutError('attempt 3')") and calls == 3
    assert retry_call(call, end=0.0, clock=_ticks()) == Tried(False, None, "")


def test_retry_call_lets_other_errors_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", only_this_thread(lambda s: None))

    def call() -> int:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        retry_call(call, end=10.0, clock=_ticks(), retry_on=(ConnectionError,))


def test_wait_on_a_fake_clock_checks_once_more_after_the_deadline(fake_clock: FakeClock) -> None:
    wait = Until("x", lambda: f"at {fake_clock.now:g}", timeout=1.0, interval=0.4,
                 clock=fake_clock.monotonic, sleep=fake_clock.sleep)  # fmt: skip
    assert wait.wait() is False and not wait.stopped
    # checks at 0, 0.4, 0.8 and 1.2 (the one after the pause that crossed the deadline)
    assert wait.checks == 4 and wait.last == "at 1.2" and fake_clock.slept == [0.4] * 3
    with pytest.raises(WaitTimeout, match="x: not reached after 1s; last seen: at 2.4"):
        wait.wait_until_ready()


def test_attempts_bound_the_checks_with_no_pause_after_the_last(fake_clock: FakeClock) -> None:
    wait = Poll("x", lambda: "no", timeout=math.inf, interval=0.5, attempts=3,
                 clock=fake_clock.monotonic, sleep=fake_clock.sleep)  # fmt: skip
    assert wait.wait() is False and wait.checks == 3 and fake_clock.slept == [0.5, 0.5]


def test_a_predicate_says_which_errors_are_transient_and_error_keeps_the_last(
    fake_clock: FakeClock,
) -> None:
    raised = iter([OSError("busy 1"), OSError("busy 2"), OSError("fatal")])

    def check() -> str | None:
        raise next(raised)

    wait = Poll("x", check, timeout=math.inf, interval=0, attempts=5,
                 transient=lambda exc: "busy" in str(exc), sleep=fake_clock.sleep)  # fmt: skip
    with pytest.raises(OSError, match="fatal"):
        wait.wait()
    assert wait.checks == 3

    raised = iter([OSError("busy 1"), OSError("busy 2")])
    wait = Poll("x", check, timeout=math.inf, interval=0, attempts=2,
                 transient=(OSError,), sleep=fake_clock.sleep)  # fmt: skip
    assert wait.wait() is False
    assert isinstance(wait.error, OSError) and str(wait.error) == "busy 2"
    assert wait.last == "OSError: busy 2"


def test_stop_before_a_check_and_a_pause_that_reports_a_stop_end_the_wait(
    fake_clock: FakeClock,
) -> None:
    checks: list[int] = []

    def check() -> str:
        checks.append(1)
        return "not yet"

    stopping = threading.Event()
    stopping.set()
    wait = Poll("x", check, timeout=math.inf, stop=stopping.is_set)
    assert wait.wait() is False and wait.stopped and checks == []
    with pytest.raises(WaitTimeout, match="stopped while waiting"):
        wait.wait_until_ready()
    # Event.wait as the pause: True when set, so one check, then stopped
    wait = Poll("x", check, timeout=math.inf, interval=30, sleep=stopping.wait)
    assert wait.wait() is False and wait.stopped and checks == [1]
    # a check that holds ends it as held, with no pause at all
    held = Poll("x", lambda: None, timeout=0, sleep=fake_clock.sleep)
    assert held.wait() is True and held.checks == 1 and fake_clock.slept == []


def test_a_shared_deadline_replaces_the_timeout(fake_clock: FakeClock) -> None:
    fake_clock.now = 10.0
    wait = Poll(
        "x",
        lambda: "no",
        timeout=100,
        interval=1,
        clock=fake_clock.monotonic,
        sleep=fake_clock.sleep,
    )
    assert wait.wait(deadline=12.0) is False
    # checks at 10, 11 and 12: the timeout of 100 s played no part
    assert wait.checks == 3 and fake_clock.now == 12.0
