"""A duty cycle in a background thread: apply for ``on_s``, release for ``off_s``, repeat.

Used by repeated pauses (GC-pause style) and the slow disk (freeze/thaw). Whatever happens,
the thread ends in the released state: ``stop()`` wakes it at once, it releases, and a
release error is kept and re-raised by ``stop()``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from kchaos.harness.cluster.api import NodeHandle
from kchaos.harness.errors import HealError


def apply_each(
    nodes: Iterable[NodeHandle], applied: set[int], apply: Callable[[NodeHandle], object]
) -> None:
    """``apply`` to every node in turn, each marked in ``applied`` first (so that a
    release covers a node whose apply failed halfway)."""
    for node in nodes:
        applied.add(node.node_id)
        apply(node)


def release_each(
    nodes: Iterable[NodeHandle],
    applied: set[int],
    release: Callable[[NodeHandle], object],
    what: str,
) -> None:
    """``release`` every node marked in ``applied``, unmarking each it released; a
    failure does not stop the others, and the failures end in one HealError
    ``{what} failed: node: error; ...``."""
    errors = []
    for node in nodes:
        if node.node_id not in applied:
            continue
        try:
            release(node)
            applied.discard(node.node_id)
        except Exception as exc:  # noqa: BLE001 - release the others anyway
            errors.append(f"{node.name}: {exc}")
    if errors:
        raise HealError(f"{what} failed: " + "; ".join(errors))


class DutyCycle:
    def __init__(
        self,
        apply: Callable[[], None],
        release: Callable[[], object],
        on_s: float,
        off_s: float,
        name: str = "duty-cycle",
    ) -> None:
        self._apply = apply
        self._release = release
        self.on_s = on_s
        self.off_s = off_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.cycles = 0
        self.error: BaseException | None = None

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        applied = False
        try:
            while not self._stop.is_set():
                self._apply()
                applied = True
                self.cycles += 1
                self._stop.wait(self.on_s)
                applied = False
                self._release()
                if self._stop.wait(self.off_s):
                    break
        except BaseException as exc:  # noqa: BLE001 - kept for stop()
            self.error = exc
        finally:
            if applied:
                try:
                    self._release()
                except BaseException as exc:  # noqa: BLE001
                    self.error = exc

    def abort(self, timeout: float = 10.0) -> None:
        """Wake the thread and wait for it to release (no error raised)."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        self.abort(timeout)
        if self._thread.is_alive():
            raise HealError(f"{self._thread.name}: still running after {timeout:g}s")
        if self.error is not None:
            raise HealError(f"{self._thread.name}: {self.error}") from self.error
