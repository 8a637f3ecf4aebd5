"""Heal on every exit path: a context manager, SIGINT/SIGTERM handlers and atexit.

``protected(cluster)`` (or ``protect``/``unprotect``) registers a cluster; if the process
exits, is interrupted or terminated while it is registered, :func:`heal_everything` runs
on it first. Signal handlers are installed once, from the main thread only, and chain to
whatever handler was there before (SIGINT still raises KeyboardInterrupt; SIGTERM still
ends the process). A SIGKILL cannot be caught: ``kchaos cleanup`` covers it.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from kchaos.harness.cluster.api import ClusterHandle

log = logging.getLogger(__name__)

_lock = threading.RLock()
_clusters: dict[int, ClusterHandle] = {}
_atexit_done = False
_signals_done = False
_previous: dict[int, Any] = {}


def protect(cluster: ClusterHandle) -> None:
    with _lock:
        _clusters[id(cluster)] = cluster
        _install()


def unprotect(cluster: ClusterHandle) -> None:
    with _lock:
        _clusters.pop(id(cluster), None)


@contextlib.contextmanager
def protected(cluster: ClusterHandle) -> Iterator[ClusterHandle]:
    """Heal the cluster when the block exits, however it exits."""
    protect(cluster)
    try:
        yield cluster
    finally:
        try:
            heal_registered([cluster])
        finally:
            unprotect(cluster)


def heal_registered(clusters: list[ClusterHandle] | None = None) -> list[str]:
    from kchaos.faults.heal import heal_everything

    with _lock:
        targets = list(_clusters.values()) if clusters is None else clusters
    done: list[str] = []
    for cluster in targets:
        try:
            done += heal_everything(cluster)
        except Exception as exc:  # noqa: BLE001 - exit path
            log.error("heal of run %s failed: %s", getattr(cluster, "run_id", "?"), exc)
    for line in done:
        log.warning("heal on exit: %s", line)
    return done


def _heal_pending() -> None:
    """At exit or on a signal: refuse new faults, then heal every cluster still registered
    (taken out of the registry first, so a second exit path finds none)."""
    from kchaos.faults.base import refuse_new_faults

    refuse_new_faults()
    with _lock:
        pending = list(_clusters.values())
        _clusters.clear()
    if pending:
        heal_registered(pending)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _heal_pending()
    previous = _previous.get(signum)
    if callable(previous):
        previous(signum, frame)
        return
    if signum == signal.SIGINT and previous is not signal.SIG_IGN:
        raise KeyboardInterrupt
    if previous is not signal.SIG_IGN:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _install() -> None:
    global _atexit_done, _signals_done
    if not _atexit_done:
        _atexit_done = True
        atexit.register(_heal_pending)
    if _signals_done or threading.current_thread() is not threading.main_thread():
        return
    _signals_done = True
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            _previous[signum] = signal.getsignal(signum)
            signal.signal(signum, _on_signal)
        except (ValueError, OSError):  # not allowed here (embedded interpreter)
            continue
