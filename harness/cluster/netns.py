"""Host programs run inside a container's network namespace (``nsenter -t PID -n``).

Network faults that need a firewall (partitions, held controller requests) and socket
probes (``ss``) run the *host's* programs with the container's network namespace, so the
broker image needs none of them: an image without iptables or iproute2 gets the same
faults. Only the network namespace is entered; the program, its libraries and the xtables
lock stay the host's. The harness runs as root on the Docker host (as for signals and
filesystem faults), which ``nsenter`` needs.

The namespace lives as long as the container's processes: a stopped container has none
(and no rules left), a paused one keeps it, so rules can be added and removed while the
cgroup freezer holds the broker.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence

from docker.models.containers import Container

from kchaos.harness.errors import ClusterError, SetupError

NSENTER_TIMEOUT = 60.0


def namespace_pid(container: Container) -> int:
    """Host pid of the container's PID 1, whose network namespace is the container's;
    ClusterError ``... is not running`` when the container has no process."""
    container.reload()
    state = container.attrs.get("State") or {}
    pid = int(state.get("Pid") or 0)
    if not state.get("Running") or pid <= 0:
        raise ClusterError(f"container {container.name} is not running")
    return pid


def nsenter_argv(pid: int, cmd: Sequence[str]) -> list[str]:
    program = shutil.which("nsenter")
    if program is None:
        raise SetupError(
            "nsenter is not installed on the host (Debian package util-linux); network "
            "faults run the host's iptables and ss in each node's network namespace"
        )
    return [program, "--target", str(pid), "--net", "--", *cmd]


def run_in_netns(
    container: Container, cmd: Sequence[str], timeout: float = NSENTER_TIMEOUT
) -> tuple[int, str]:
    """Run ``cmd`` (a host program) in the container's network namespace; (exit code,
    stdout and stderr together)."""
    pid = namespace_pid(container)
    try:
        done = subprocess.run(
            nsenter_argv(pid, cmd),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ClusterError(
            f"{' '.join(cmd[:2])} in the network namespace of {container.name} took more"
            f" than {timeout:g}s"
        ) from exc
    output = done.stdout.decode("utf-8", "replace")
    if done.returncode != 0 and output.startswith("nsenter:"):
        # nsenter itself failed: most often the container stopped since we read its pid.
        namespace_pid(container)
        raise ClusterError(f"nsenter into {container.name}: {output.strip()[-300:]}")
    return done.returncode, output
