"""Wait strategies: the one way kchaos waits for something to become true.

A strategy is a testcontainers ``WaitStrategy`` (so it is configured the testcontainers
way: ``.with_startup_timeout(60).with_poll_interval(0.3)``) whose check reports what it
saw. While the condition does not hold, the check returns a short text of what is still
missing; when it holds, ``None``. On timeout the error carries the last such text, so a
failed wait says what it was waiting for and what it saw last:

    Until("Toxiproxy API", probe).with_startup_timeout(30).wait_until_ready()
    Until("ISR full", probe, timeout=12.5).wait_until_ready()

``wait_until_ready`` takes no container: kchaos's conditions are on the cluster (brokers
registered, ISR full, an HTTP API answering), not on one testcontainers container.

Its one companion, :func:`retry_call`, is for the other shape of waiting: a call that
fails until it works (a client that cannot be created yet, a request to a broker that is
down), asked again until a deadline, whose caller wants the value or the last error
rather than an exception.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from testcontainers.core.waiting_utils import WaitStrategy

from kchaos.harness.errors import WaitTimeout

# A check returns None when the condition holds, else what it saw instead.
Check = Callable[[], "str | None"]
T = TypeVar("T")


class Until(WaitStrategy):
    """Poll ``check`` until it returns None; ReadinessTimeout with the last observation.

    ``interval``: seconds between two checks. ``transient``: exception types a check may
    raise while the thing is coming up; they count as an observation ("ConnectionError:
    ...") and the wait goes on. Any other exception (a broker that exited, bad input) ends
    the wait at once.
    """

    def __init__(
        self,
        what: str,
        check: Check,
        *,
        timeout: float | None = None,
        interval: float = 0.3,
        transient: tuple[type[Exception], ...] = (),
    ) -> None:
        super().__init__()
        self.what = what
        self.check = check
        self.transient = transient
        self._poll_interval = interval
        if timeout is not None:  # fractions of a second too (with_startup_timeout: whole ones)
            self._startup_timeout = float(timeout)
        self.last: str | None = None

    def observe(self) -> str | None:
        try:
            return self.check()
        except self.transient as exc:
            return f"{type(exc).__name__}: {exc}"

    def wait_until_ready(self, container: Any = None) -> None:
        deadline = time.monotonic() + self._startup_timeout
        while True:
            self.last = self.observe()
            if self.last is None:
                return
            if time.monotonic() >= deadline:
                raise WaitTimeout(self.what, self._startup_timeout, self.last)
            time.sleep(self._poll_interval)


def http_answers(url: str, timeout: float = 2.0) -> Check:
    """A check that holds once ``url`` answers with a 2xx status."""
    import requests

    def check() -> str | None:
        try:
            resp = requests.get(url, timeout=timeout)
        except requests.RequestException as exc:
            return f"{url}: {type(exc).__name__}"
        return None if resp.ok else f"{url}: HTTP {resp.status_code}"

    return check


@dataclass(frozen=True)
class Tried(Generic[T]):
    """What :func:`retry_call` got: the call's value, or why there is none."""

    done: bool
    value: T | None = None
    last_error: str = ""  # repr of the last exception when not done ("" if never called)


def retry_call(
    call: Callable[[], T],
    end: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    interval: float = 0.5,
    retry_on: tuple[type[Exception], ...] = (Exception,),
) -> Tried[T]:
    """Call ``call`` until it returns, pausing ``interval`` s after each ``retry_on``
    error, while ``clock()`` is before ``end``. Other exceptions propagate at once."""
    last_error = ""
    while clock() < end:
        try:
            return Tried(True, call())
        except retry_on as exc:
            last_error = repr(exc)
            time.sleep(interval)  # looked up at each call: tests may patch time.sleep
    return Tried(False, None, last_error)


__all__ = ["Check", "Tried", "Until", "http_answers", "retry_call"]
