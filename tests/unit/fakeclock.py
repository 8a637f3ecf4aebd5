"""The fake clock of the unit tests: for code that takes a clock and a pause (``clock=``,
``sleep=``, or a patched ``time.sleep``), time that moves only when that code pauses or
the test moves ``now`` itself.

(A module of its own, beside conftest.py's ``fake_clock`` fixture: test modules import the
class from it by a unique name, for their annotations.)"""

from __future__ import annotations


class FakeClock:
    """``monotonic`` reads ``now``; ``sleep`` moves it on and records the pause in
    ``slept``."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
