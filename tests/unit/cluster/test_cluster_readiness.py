"""Readiness probes against local fakes (a TCP server, a metadata stand-in)."""

from __future__ import annotations

import socket
import struct
import threading
from types import SimpleNamespace
from typing import Any

from kchaos.harness.cluster.readiness import answers_requests, isr_problems


def _serve_once(reply: bool) -> int:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]

    def run() -> None:
        conn, _ = srv.accept()
        with conn:
            size = struct.unpack(">i", conn.recv(4))[0]
            req = b""
            while len(req) < size:
                req += conn.recv(size - len(req))
            api_key, _version, corr = struct.unpack(">hhi", req[:8])
            assert api_key == 18
            if reply:
                body = struct.pack(">ih", corr, 0) + struct.pack(">i", 0)
                conn.sendall(struct.pack(">i", len(body)) + body)
        srv.close()

    threading.Thread(target=run, daemon=True).start()
    return port


def test_a_listener_that_answers_is_ready() -> None:
    assert answers_requests("127.0.0.1", _serve_once(reply=True))


def test_a_listener_that_accepts_but_does_not_answer_is_not() -> None:
    assert not answers_requests("127.0.0.1", _serve_once(reply=False), timeout=0.5)


def test_a_closed_port_is_not() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    assert not answers_requests("127.0.0.1", port, timeout=0.5)


class _Admin:
    def __init__(self, partitions: dict[int, Any]) -> None:
        self.partitions = partitions

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        topics = {"t": SimpleNamespace(error=None, partitions=self.partitions)}
        return SimpleNamespace(topics=topics, brokers={1: None})


def _p(leader: int, replicas: list[int], isrs: list[int]) -> Any:
    return SimpleNamespace(leader=leader, replicas=replicas, isrs=isrs, error=None)


def test_full_isr_has_no_problems() -> None:
    admin = _Admin({0: _p(1, [1, 2, 3], [3, 2, 1]), 1: _p(2, [2, 3, 1], [2, 3, 1])})
    assert isr_problems(admin, ["t"]) == []  # type: ignore[arg-type]


def test_shrunk_isr_and_missing_leader_are_reported() -> None:
    admin = _Admin({0: _p(1, [1, 2, 3], [1, 2]), 1: _p(-1, [2, 3, 1], [])})
    problems = isr_problems(admin, ["t"])  # type: ignore[arg-type]
    assert problems == [
        "t-0: leader=1 isr=[1, 2] replicas=[1, 2, 3]",
        "t-1: leader=-1 isr=[] replicas=[1, 2, 3]",
    ]
    assert isr_problems(admin, ["other"]) == ["other: missing"]  # type: ignore[arg-type]
