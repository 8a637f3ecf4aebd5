"""close_quietly, the one way a worker closes a client it is done with: a close that
fails is logged where the worker called it, and never raised."""

from __future__ import annotations

import logging

import pytest

from kchaos.workloads.clients import close_quietly

log = logging.getLogger("kchaos.test.close")


class Client:
    def __init__(self, fails: bool) -> None:
        self.fails = fails
        self.closed = 0

    def close(self) -> None:
        self.closed += 1
        if self.fails:
            raise RuntimeError("broker gone")


def test_a_failed_close_is_logged_at_the_callers_line_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=log.name)
    client = Client(fails=True)
    close_quietly(client, log, "drain: closing the consumer")
    close_quietly(client, log, "monitor: close", logging.DEBUG)
    assert client.closed == 2
    records = [r for r in caplog.records if r.name == log.name]
    assert [(r.levelno, r.getMessage()) for r in records] == [
        (logging.WARNING, "drain: closing the consumer failed"),
        (logging.DEBUG, "monitor: close failed"),
    ]
    assert all(
        r.exc_info
        and r.funcName == test_a_failed_close_is_logged_at_the_callers_line_not_raised.__name__
        for r in records
    )


def test_a_clean_close_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=log.name)
    client = Client(fails=False)
    close_quietly(client, log, "consumer 3: close")
    assert client.closed == 1 and not [r for r in caplog.records if r.name == log.name]
