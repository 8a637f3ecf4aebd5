"""A workload for the runner's unit tests: it starts, stops and drains at once."""

from __future__ import annotations

from typing import Any


class FakeWorkload:
    """Stands in for :class:`kchaos.workloads.workload.Workload` (what the runner calls
    of it); ``stopped`` and ``drained`` are what its stop and drain return."""

    producers: list[Any] = []

    def __init__(self, stopped: dict[str, Any] | None = None, drained: Any = None) -> None:
        self._stopped = {} if stopped is None else stopped
        self._drained = drained

    def __enter__(self) -> FakeWorkload:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def start(self) -> None:
        pass

    def stop(self) -> dict[str, Any]:
        return self._stopped

    def drain(self) -> Any:
        return self._drained
