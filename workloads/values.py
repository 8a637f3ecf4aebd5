"""Unique values, record payloads, keys and the rate limiter of the producers.

A value is ``"<process>-<n>"``: the worker's process id and a per-worker counter, so it is
unique in the run without coordination. The record's bytes are the value, a ``|`` and
padding up to the configured message size; :func:`value_of` recovers the value.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

SEPARATOR = b"|"
_PAD = b"x"
PADDINGS = ("repeated", "random")  # what follows each value (see padder)
# every byte value to one of 16 letters (never the separator)
_LETTERS = bytes(b"abcdefghijklmnop"[i % 16] for i in range(256))


def padder(size: int, *, random: bool = False) -> Callable[[str], bytes]:
    """A fast ``payload(value, size)`` for one size.

    The padding is one repeated byte, built once; with ``random``, fresh random letters of
    a 16-letter alphabet for every record. Those compress to about half, slowly: no two
    records share a run a compressor could match, so a broker that recompresses batches
    (topic ``compression.type`` other than the producer's) spends real CPU on each.
    """
    if random:

        def make_random(value: str) -> bytes:
            head = value.encode() + SEPARATOR
            return head + os.urandom(max(0, size - len(head))).translate(_LETTERS)

        return make_random
    pad = _PAD * size

    def make(value: str) -> bytes:
        head = value.encode() + SEPARATOR
        return head + pad[len(head) :]

    return make


def payload(value: str, size: int) -> bytes:
    """The record bytes for ``value``, padded to ``size`` bytes (never truncated)."""
    return padder(size)(value)


def value_of(data: bytes | None) -> str | None:
    """The value recorded in a record's bytes, or None for a record kchaos did not write."""
    if data is None:
        return None
    head, sep, _ = data.partition(SEPARATOR)
    if not sep:
        return data.decode("utf-8", "replace")
    return head.decode("utf-8", "replace")


def key_for(value_number: int, keys: int) -> bytes | None:
    """A key spreading records over ``keys`` distinct keys (0: no key, client partitioner)."""
    if keys <= 0:
        return None
    return f"k{value_number % keys}".encode()


class RateLimiter:
    """Paces calls to ``rate`` per second; ``None`` means as fast as possible.

    Slots are spaced evenly. A caller that falls more than ``max_lag`` seconds behind does
    not get a burst to catch up: the schedule restarts from now.
    """

    def __init__(
        self,
        rate: float | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = time.sleep,
        max_lag: float = 1.0,
    ) -> None:
        if rate is not None and rate <= 0:
            raise ValueError("rate must be positive or None")
        self.rate = rate
        self._clock = clock
        self._sleep = sleep
        self._max_lag = max_lag
        self._interval = 0.0 if rate is None else 1.0 / rate
        self._next: float | None = None

    def acquire(self, stop: threading.Event | None = None) -> bool:
        """Wait for the next slot; False when ``stop`` was set while waiting."""
        if self.rate is None:
            return not (stop is not None and stop.is_set())
        now = self._clock()
        if self._next is None or now - self._next > self._max_lag:
            self._next = now
        delay = self._next - now
        self._next += self._interval
        if delay > 0:
            if stop is not None:
                if stop.wait(delay):
                    return False
            else:
                self._sleep(delay)
        return not (stop is not None and stop.is_set())
