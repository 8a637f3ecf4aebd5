"""Wait strategies: the one way kchaos waits for something on the cluster to become true.

A strategy is a testcontainers ``WaitStrategy`` (so it is configured the testcontainers
way: ``.with_startup_timeout(60).with_poll_interval(0.3)``) whose check reports what it
saw. While the condition does not hold, the check returns a short text of what is still
missing; when it holds, ``None``. On timeout the error carries the last such text, so a
failed wait says what it was waiting for and what it saw last:

    Until("Toxiproxy API", probe).with_startup_timeout(30).wait_until_ready()
    Until("ISR full", probe, timeout=12.5).wait_until_ready()

``wait_until_ready`` takes no container: kchaos's conditions are on the cluster (brokers
registered, ISR full, an HTTP API answering), not on one testcontainers container.

Its loop is :class:`kchaos.harness.cluster.retry.Poll`'s, the one retry loop of kchaos
(with its companion :func:`~kchaos.harness.cluster.retry.retry_call`): the waits that are
not on the cluster use ``Poll`` directly, with their own clock, pause, stop or number of
attempts, and no Docker library loaded.
"""

from __future__ import annotations

from typing import Unpack

from testcontainers.core.waiting_utils import WaitStrategy

from kchaos.harness.cluster.retry import Check, Poll, PollOptions


class Until(Poll, WaitStrategy):
    """:class:`Poll` configured the testcontainers way, with the same options
    (:class:`PollOptions`); ``timeout`` defaults to testcontainers' own.
    ``wait_until_ready`` raises :class:`WaitTimeout` (a ReadinessTimeout) with the last
    observation."""

    def __init__(
        self,
        what: str,
        check: Check,
        *,
        timeout: float | None = None,
        **options: Unpack[PollOptions],
    ) -> None:
        WaitStrategy.__init__(self)
        # fractions of a second too (with_startup_timeout: whole ones)
        timeout = self._startup_timeout if timeout is None else timeout
        Poll.__init__(self, what, check, timeout=timeout, **options)


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


__all__ = ["Check", "Until", "http_answers"]
