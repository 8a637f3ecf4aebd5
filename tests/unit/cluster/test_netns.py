"""Host programs in a container's network namespace, and process states read on the host
(what the faults use so that they need nothing inside the image)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest

from kchaos.harness.cluster import netns
from kchaos.harness.cluster.containers import process_state
from kchaos.harness.errors import ClusterError


class _Container:
    """The two things netns reads of a docker Container: reload() and attrs["State"]."""

    def __init__(self, pid: int, running: bool = True) -> None:
        self.name = "kchaos-test-broker-1"
        self.attrs: dict[str, Any] = {"State": {"Pid": pid, "Running": running}}
        self.reloads = 0

    def reload(self) -> None:
        self.reloads += 1


def test_a_stopped_container_has_no_namespace_to_enter() -> None:
    stopped: Any = _Container(0, running=False)
    with pytest.raises(ClusterError, match="is not running"):
        netns.run_in_netns(stopped, ["true"])
    assert stopped.reloads == 1  # the state is read fresh, never from a stale copy


def test_nsenter_enters_only_the_network_namespace() -> None:
    argv = netns.nsenter_argv(1234, ["iptables", "-S"])
    assert argv[1:] == ["--target", "1234", "--net", "--", "iptables", "-S"]


@pytest.mark.skipif(os.geteuid() != 0, reason="setns needs root, as the harness does")
def test_runs_a_host_program_in_a_live_process_namespace() -> None:
    # our own process stands in for a container's PID 1: same namespace, same answer
    me: Any = _Container(os.getpid())
    code, out = netns.run_in_netns(me, ["sh", "-c", "echo in-namespace; exit 3"])
    assert (code, out) == (3, "in-namespace\n")


@pytest.mark.skipif(os.geteuid() != 0, reason="setns needs root, as the harness does")
def test_a_process_gone_since_its_pid_was_read_is_not_running() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    gone: Any = _Container(child.pid)
    gone_after_read = iter([True, False])

    def reload() -> None:  # running when the pid is read, stopped when checked again
        gone.attrs["State"]["Running"] = next(gone_after_read)

    gone.reload = reload
    with pytest.raises(ClusterError, match="is not running"):
        netns.run_in_netns(gone, ["true"])


def test_process_state_is_read_from_proc() -> None:
    assert process_state(os.getpid()) == "R"  # reading its own stat, it runs
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        os.kill(sleeper.pid, 19)  # SIGSTOP
        for _ in range(100):
            if process_state(sleeper.pid) == "T":
                break
            time.sleep(0.02)
        assert process_state(sleeper.pid) == "T"
    finally:
        sleeper.kill()
        sleeper.wait()
    assert process_state(sleeper.pid) is None  # reaped: gone
