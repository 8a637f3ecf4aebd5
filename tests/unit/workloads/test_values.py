from __future__ import annotations

import threading
import zlib

import pytest
from fakeclock import FakeClock
from hypothesis import given
from hypothesis import strategies as st

from kchaos.workloads.values import RateLimiter, key_for, padder, payload, value_of


@given(st.integers(0, 10**6), st.integers(0, 10**9), st.integers(1, 5000))
def test_payload_round_trips_and_has_the_size(process: int, n: int, size: int) -> None:
    value = f"{process}-{n}"
    data = payload(value, size)
    assert value_of(data) == value
    assert len(data) == max(size, len(value) + 1)
    assert padder(size)(value) == data


def test_value_of_foreign_records() -> None:
    assert value_of(None) is None
    assert value_of(b"plain") == "plain"


def test_keys_spread_over_the_configured_number() -> None:
    assert key_for(5, 0) is None
    assert {key_for(n, 3) for n in range(30)} == {b"k0", b"k1", b"k2"}


def test_rate_limiter_spaces_calls_evenly(fake_clock: FakeClock) -> None:
    fake_clock.now = 100.0  # the limiter's slots start from its first call, not from 0
    limiter = RateLimiter(10.0, clock=fake_clock.monotonic, sleep=fake_clock.sleep)
    for _ in range(11):
        assert limiter.acquire()
    assert fake_clock.now == pytest.approx(101.0)  # 11 slots at 10/s span one second


def test_rate_limiter_does_not_burst_after_a_stall(fake_clock: FakeClock) -> None:
    limiter = RateLimiter(100.0, clock=fake_clock.monotonic, sleep=fake_clock.sleep, max_lag=0.5)
    limiter.acquire()
    fake_clock.now += 5.0  # the caller was busy for 5 s
    start = fake_clock.now
    for _ in range(10):
        limiter.acquire()
    assert fake_clock.now - start == pytest.approx(0.09)  # paced again, no 500-call catch-up


def test_unlimited_rate_never_sleeps_and_honours_stop(fake_clock: FakeClock) -> None:
    limiter = RateLimiter(None, clock=fake_clock.monotonic, sleep=fake_clock.sleep)
    assert all(limiter.acquire() for _ in range(100))
    assert fake_clock.slept == []
    stop = threading.Event()
    stop.set()
    assert limiter.acquire(stop) is False


def test_rate_must_be_positive() -> None:
    with pytest.raises(ValueError):
        RateLimiter(0)


def test_random_padding_is_fresh_per_record_and_keeps_the_value() -> None:
    make = padder(20000, random=True)
    one, two = make("3-1"), make("3-2")
    assert len(one) == len(two) == 20000
    assert value_of(one) == "3-1" and value_of(two) == "3-2"
    assert one[4:] != two[4:]  # no padding shared between records
    assert b"|" not in one[4:]
    # repeated padding compresses to almost nothing; random letters only to about half
    assert len(zlib.compress(padder(20000)("3-1"))) < 200
    assert 0.4 < len(zlib.compress(one + two, 9)) / len(one + two) < 0.7
