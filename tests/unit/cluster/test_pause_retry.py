"""docker pause asked again when the cgroup freezer gave up ("unable to freeze")."""

from __future__ import annotations

import docker.errors
import pytest

from kchaos.harness.cluster.containers import pause_container

FREEZE_FAILED = "OCI runtime pause failed: unable to freeze: unknown"


class Container:
    def __init__(self, errors: list[str]) -> None:
        self.errors = list(errors)
        self.calls = 0
        self.paused = False

    def pause(self) -> None:
        self.calls += 1
        if self.errors:
            raise docker.errors.APIError(self.errors.pop(0))
        self.paused = True


def test_a_freezer_that_gave_up_is_asked_again() -> None:
    c = Container([FREEZE_FAILED, FREEZE_FAILED])
    slept: list[float] = []
    assert pause_container(c, attempts=3, retry_s=0.5, sleep=slept.append) == 3  # type: ignore[arg-type]
    assert c.paused and slept == [0.5, 0.5]


def test_it_gives_up_after_the_last_attempt() -> None:
    c = Container([FREEZE_FAILED] * 3)
    with pytest.raises(docker.errors.APIError, match="unable to freeze"):
        pause_container(c, attempts=3, retry_s=0, sleep=lambda s: None)  # type: ignore[arg-type]
    assert c.calls == 3 and not c.paused


def test_other_errors_are_not_retried() -> None:
    c = Container(["Container abc is not running"])
    with pytest.raises(docker.errors.APIError, match="not running"):
        pause_container(c, sleep=lambda s: None)  # type: ignore[arg-type]
    assert c.calls == 1
