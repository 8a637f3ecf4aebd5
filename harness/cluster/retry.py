"""The one retry loop of kchaos, free of Docker and Kafka libraries (a transactional
client's child process uses it too).

:class:`Poll` asks a check again until it holds. A check returns None when its condition
holds, else a short text of what it saw instead; a wait that runs out says what it was
waiting for and what it saw last. :class:`kchaos.harness.cluster.wait.Until` is the same
loop as a testcontainers wait strategy, for the waits on the cluster.

:func:`retry_call` is the other shape of waiting: a call that fails until it works (a
client that cannot be created yet, a request to a broker that is down), asked again until
a deadline, whose caller wants the value or the last error rather than an exception.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypedDict, TypeVar, Unpack

from kchaos.harness.errors import WaitTimeout

# A check returns None when the condition holds, else what it saw instead.
Check = Callable[[], "str | None"]
T = TypeVar("T")


class PollOptions(TypedDict, total=False):
    """:class:`Poll`'s options, each optional (what they do: Poll's docstring; their
    defaults: :data:`POLL_DEFAULTS`): the one list of them, which
    :class:`kchaos.harness.cluster.wait.Until` takes too."""

    interval: float
    transient: tuple[type[Exception], ...] | Callable[[Exception], bool]
    clock: Callable[[], float]
    sleep: Callable[[float], object] | None
    stop: Callable[[], bool] | None
    attempts: int | None


# Each option's value when the caller gives none. None means: ``sleep`` time.sleep (looked
# up at each pause), ``stop`` never stopped, ``attempts`` no bound.
POLL_DEFAULTS: PollOptions = {
    "interval": 0.3,
    "transient": (),
    "clock": time.monotonic,
    "sleep": None,
    "stop": None,
    "attempts": None,
}


class Poll:
    """Poll ``check`` until it returns None; WaitTimeout with the last observation.

    ``interval``: seconds between two checks. ``transient``: exception types a check may
    raise while the thing is coming up (or a predicate on the exception that says so);
    they count as an observation ("ConnectionError: ...", the exception itself kept in
    ``error``) and the wait goes on. Any other exception (a broker that exited, bad input)
    ends the wait at once.

    The loop is: stop?, check, held?, out of time?, pause, again. So a check runs at least
    once (unless stopped first), and once more after the pause that crossed the deadline.
    Its parts can be swapped for the callers that need to:

    * ``clock``: the time the deadline is on (a fake one in tests);
    * ``sleep``: the pause, given ``interval``; when it returns something true (as
      ``threading.Event.wait`` does when the event is set), the wait ends as stopped. A
      client's own poll fits here too: the pause is then spent serving its callbacks;
    * ``stop``: asked before every check; true ends the wait as stopped;
    * ``attempts``: at most that many checks (and no pause after the last).

    These options are keywords, listed in :class:`PollOptions` with their defaults in
    :data:`POLL_DEFAULTS`.

    :meth:`wait` says whether the condition held (False: timed out, out of attempts or
    stopped; see ``stopped``) without raising, for callers that have their own answer to a
    wait that ran out; :meth:`wait_until_ready` raises :class:`WaitTimeout`.
    """

    def __init__(
        self, what: str, check: Check, *, timeout: float, **options: Unpack[PollOptions]
    ) -> None:
        # mypy checks the names in typed code; this, a misspelt one anywhere else
        unknown = options.keys() - PollOptions.__optional_keys__
        if unknown:
            raise TypeError(f"Poll got unknown options: {', '.join(sorted(unknown))}")
        given: PollOptions = {**POLL_DEFAULTS, **options}
        self.what = what
        self.check = check
        self.transient = given["transient"]
        self._poll_interval = given["interval"]
        self._startup_timeout = float(timeout)
        self._clock = given["clock"]
        self._sleep = given["sleep"]
        self._stop = given["stop"]
        self._attempts = given["attempts"]
        self.last: str | None = None
        self.error: Exception | None = None  # the transient exception behind ``last``
        self.checks = 0  # how many times ``check`` ran
        self.stopped = False

    def _is_transient(self, exc: Exception) -> bool:
        if isinstance(self.transient, tuple):
            return isinstance(exc, self.transient)
        return self.transient(exc)

    def observe(self) -> str | None:
        self.checks += 1
        self.error = None
        try:
            return self.check()
        except Exception as exc:
            if not self._is_transient(exc):
                raise
            self.error = exc
            return f"{type(exc).__name__}: {exc}"

    def _pause(self) -> bool:
        """Pause ``interval`` s; True when the pause says the wait is stopped."""
        if self._sleep is None:
            time.sleep(self._poll_interval)  # looked up at each call: tests may patch it
            return False
        return bool(self._sleep(self._poll_interval))

    def wait(self, deadline: float | None = None) -> bool:
        """True once the check held; False when the time or the attempts ran out, or the
        wait was stopped (``stopped``). ``last`` is what the check saw last.

        ``deadline`` (on ``clock``'s scale) replaces ``timeout`` from now: for a deadline
        that several waits share."""
        if deadline is None:
            deadline = self._clock() + self._startup_timeout
        self.checks, self.stopped = 0, False
        while True:
            if self._stop is not None and self._stop():
                self.stopped = True
                return False
            self.last = self.observe()
            if self.last is None:
                return True
            if self._clock() >= deadline:
                return False
            if self._attempts is not None and self.checks >= self._attempts:
                return False
            if self._pause():
                self.stopped = True
                return False

    def wait_until_ready(self, container: Any = None) -> None:
        if not self.wait():
            last = self.last or ""
            raise WaitTimeout(
                self.what,
                self._startup_timeout,
                f"stopped while waiting; {last}" if self.stopped else last,
            )


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


__all__ = ["POLL_DEFAULTS", "Check", "Poll", "PollOptions", "Tried", "retry_call"]
