"""The image benchmark's wait for a broker's start line, on a fake container: it reads
the log until the line is there, and gives up on a container that exited or at its
timeout."""

from __future__ import annotations

import pytest
from fakeclock import only_this_thread

from kchaos.bench.images import _started

STARTED = b"[KafkaServer id=1] started\nINFO [KafkaRaftServer nodeId=1] Kafka Server started\n"


class Container:
    def __init__(self, logs: list[bytes], status: str = "running") -> None:
        self.logs_seen = logs
        self.reads = 0
        self.status = status

    def logs(self) -> bytes:
        self.reads += 1
        return self.logs_seen[min(self.reads, len(self.logs_seen)) - 1]

    def reload(self) -> None:
        pass


@pytest.fixture(autouse=True)
def no_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", only_this_thread(lambda s: None))


def test_the_start_line_ends_the_wait() -> None:
    c = Container([b"", b"loading", STARTED])
    assert _started(c, 3600) is True and c.reads == 3


def test_an_exited_container_ends_it_as_not_started() -> None:
    c = Container([b"loading"], status="exited")
    assert _started(c, 3600) is False and c.reads == 1


def test_the_timeout_ends_it_as_not_started() -> None:
    c = Container([b"loading"])
    assert _started(c, 0) is False and c.reads == 1
