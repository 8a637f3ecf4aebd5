"""Where the monitor asks each transactional partition's last stable offset (LSO).

Kafka answers a ListOffsets request for the latest offset with the high watermark to a
``read_uncommitted`` reader and with the last stable offset to a ``read_committed`` one
(KIP-98); librdkafka sends the client's ``isolation.level`` in that request, so a
read_committed consumer's ``get_watermark_offsets(cached=False)`` gives the LSO as its
high offset. :class:`ConsumerStableOffsetSource` holds two consumers, one of each
isolation (the drain asks the same way: :mod:`kchaos.workloads.drain`).

Per partition the LSO is asked first and the high watermark after it: both only grow,
so the lag computed from them is never negative. A partition whose question fails (its
leader paused, no leader) is left out of this observation and the others are still
answered; the monitor's deadline bounds the whole observation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kchaos.harness.rundir.history import READ_COMMITTED, READ_UNCOMMITTED
from kchaos.workloads.clients import ConsumerClient, TopicPartition, close_quietly

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StableOffsets:
    """What one partition answered: (high watermark, last stable offset)."""

    topic: str
    partition: int
    high_watermark: int
    last_stable_offset: int


class StableOffsetSource(Protocol):
    """The monitor's client for last stable offsets; the real one wraps two consumers."""

    def stable_offsets(self) -> tuple[list[StableOffsets], list[TopicPartition]]:
        """Every partition's answer, and the partitions that did not answer."""
        ...

    def close(self) -> None: ...


class ConsumerStableOffsetSource:
    """Two consumers without a group: read_committed (LSO) and read_uncommitted (HWM)."""

    def __init__(
        self,
        factory: Callable[[str], ConsumerClient],
        topics: Sequence[str],
        request_timeout_s: float = 0.5,
    ) -> None:
        """``factory(isolation)`` makes a consumer of that isolation level."""
        self.topics = tuple(topics)
        self.timeout = request_timeout_s
        self._committed = factory(READ_COMMITTED)
        try:
            self._uncommitted = factory(READ_UNCOMMITTED)
        except BaseException:
            _close(self._committed)
            raise
        self._partitions: list[TopicPartition] | None = None

    def partitions(self) -> list[TopicPartition]:
        """The topics' partitions, asked once per source (a failure is raised: the
        observation fails and the next one asks again on a fresh source)."""
        if self._partitions is None:
            found: list[TopicPartition] = []
            for topic in self.topics:
                found += [(topic, p) for p in self._committed.partitions_for(topic, self.timeout)]
            self._partitions = sorted(found)
        return self._partitions

    def stable_offsets(self) -> tuple[list[StableOffsets], list[TopicPartition]]:
        answered: list[StableOffsets] = []
        missing: list[TopicPartition] = []
        for topic, part in self.partitions():
            try:
                _, lso = self._committed.watermarks(topic, part, self.timeout)
                _, high = self._uncommitted.watermarks(topic, part, self.timeout)
            except Exception as exc:  # noqa: BLE001 - that partition is left out, logged
                log.debug("monitor: no stable offset of %s-%d: %r", topic, part, exc)
                missing.append((topic, part))
                continue
            if lso < 0 or high < 0:  # librdkafka's "no offset" (OFFSET_INVALID)
                missing.append((topic, part))
                continue
            answered.append(StableOffsets(topic, part, high, lso))
        return answered, missing

    def close(self) -> None:
        _close(self._committed)
        _close(self._uncommitted)


def _close(client: ConsumerClient) -> None:
    # a stable-offset client that will not close is harmless: a debug line only
    close_quietly(client, log, "monitor: closing a stable-offset client", logging.DEBUG)
