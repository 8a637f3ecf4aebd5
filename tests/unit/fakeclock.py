"""The fake clock of the unit tests: for code that takes a clock and a pause (``clock=``,
``sleep=``, or a patched ``time.sleep``), time that moves only when that code pauses or
the test moves ``now`` itself.

(A module of its own, beside conftest.py's ``fake_clock`` fixture: test modules import the
class from it by a unique name, for their annotations.)"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


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


def only_this_thread(fake: Callable[[float], None]) -> Callable[[float], None]:
    """A stand-in for ``time.sleep`` that fakes the pauses of the thread that made it and
    really sleeps in every other one.

    Patching ``time.sleep`` patches it for the whole process: a thread another test left
    running would otherwise spin through the fake, moving a fake clock on or filling a
    record of pauses. Seen: py4j's finalizer thread, which the Spark tests leave behind
    and which sleeps 1 s in a loop, moved test_progress.py's clock on by 3 h 20 min."""
    owner = threading.get_ident()
    real = time.sleep

    def sleep(seconds: float) -> None:
        if threading.get_ident() == owner:
            fake(seconds)
        else:
            real(seconds)

    return sleep
