"""The workload's client processes, as faults aimed at clients see them.

A target ``client:txn:TRANSACTIONAL_ID`` names the transactional worker that holds that
id now. The faults package cannot import the workloads (they are siblings), so the run
hands the faults a *directory* of its clients: any object with the methods of
:class:`ClientDirectory` (``kchaos.workloads.workload.Workload`` has them), registered for
the cluster's run id while the nemesis runs::

    with clients.provide(cluster.run_id, workload):
        nemesis.start() ...

A fault looks the directory up when it starts (:func:`directory`), so the worker is
resolved live, like a ``leader:`` target: after a restart it is the new child process.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Protocol

from kchaos.harness.errors import FaultError

#: ``client:KIND:KEY`` kinds a client target may name.
KINDS = ("txn",)


class TxnClient(Protocol):
    """One transactional worker: a child process with a history process id."""

    @property
    def process(self) -> int: ...

    @property
    def pid(self) -> int | None:
        """The child's pid now (None before it started, or in a thread)."""
        ...

    def open_transactions(self) -> list[str]:
        """The ``txn`` names it invoked and has not completed (as its lines say)."""
        ...

    def init_result(self) -> dict[str, Any] | None:
        """Its last ``ok txn-init`` line, None before one."""
        ...

    def address(self) -> str | None:
        """The IP address its Kafka connections leave from when its Kafka client runs in
        a container of its own (``workload.client: java``); None when they leave from the
        harness's host, whose network a fault must not touch."""
        ...


class ClientDirectory(Protocol):
    def txn_client(self, transactional_id: str) -> TxnClient:
        """The live worker that holds ``transactional_id``; LookupError when none does."""
        ...

    def replace_txn_client(self, transactional_id: str) -> TxnClient:
        """Start a new worker (a new process id) with the same ``transactional.id``; its
        ``init_transactions`` fences the one that held it."""
        ...


def parse_client(text: str) -> tuple[str, str]:
    """``txn:ID`` (the id may hold colons) as (kind, key); ValueError otherwise."""
    kind, sep, key = text.partition(":")
    if not sep or kind not in KINDS or not key:
        raise ValueError(f"expected txn:TRANSACTIONAL_ID, got {text!r}")
    return kind, key


_lock = threading.Lock()
_directories: dict[str, ClientDirectory] = {}


@contextlib.contextmanager
def provide(run_id: str, clients: ClientDirectory) -> Iterator[ClientDirectory]:
    """Make ``clients`` the directory of run ``run_id`` inside the block."""
    with _lock:
        _directories[run_id] = clients
    try:
        yield clients
    finally:
        with _lock:
            if _directories.get(run_id) is clients:
                del _directories[run_id]


def directory(run_id: str) -> ClientDirectory:
    """The directory of run ``run_id``; FaultError when the run registered none (a
    client target outside ``kchaos run``, or after the workload stopped)."""
    with _lock:
        found = _directories.get(run_id)
    if found is None:
        raise FaultError(f"run {run_id}: no client processes registered for client: targets")
    return found
