"""SIGKILL the harness in the middle of every fault family; the heal that `kchaos cleanup`
runs (faults.heal_everything on the attached run) must leave nothing frozen, stopped,
paused, cut or poisoned."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from faults_helpers import wait_for

from kchaos.faults import hostfs
from kchaos.faults.heal import heal_everything
from kchaos.harness.cluster import Cluster
from kchaos.harness.cluster.cleanup import heal_faults

REPO_ROOT = Path(__file__).resolve().parents[2]  # the source tree, not the package

pytestmark = [pytest.mark.docker, pytest.mark.timeout(400)]


def hold(run_id: str, *faults: str) -> subprocess.Popen[str]:
    """A harness process that starts the faults and holds them (no exit-path heal)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kchaos.faults.hold", "--run", run_id, "--no-protect", *faults],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.rstrip())
        if line.startswith("HOLDING"):
            return proc
    proc.wait(5)
    raise AssertionError("hold process failed:\n" + "\n".join(lines))


def faults_left(c: Cluster) -> list[str]:
    """Every kind of leftover, looked at from outside the faults' own bookkeeping."""
    left = []
    for node in c.nodes:
        if not hostfs.is_mounted(c, node):
            left.append(f"{node.name}: fs not mounted")
        elif hostfs.thaw(c, node):
            left.append(f"{node.name}: fs was frozen")
        elif not hostfs.is_healthy(c, node):
            left.append(f"{node.name}: fs shut down")
        elif list(hostfs.fill_files(c, node)):
            left.append(f"{node.name}: disk-fill file")
        status = c.container(node).status
        if status != "running":
            left.append(f"{node.name}: container {status}")
            continue
        if c.jvm_state(node) == "T":
            left.append(f"{node.name}: JVM stopped")
        code, rules = c.net_exec(node, ["iptables", "-S"])  # the host's, in the node's netns
        assert code == 0, rules
        if "KCHAOS" in rules:
            left.append(f"{node.name}: iptables {rules.count('KCHAOS')} KCHAOS lines")
    left += c.toxiproxy.leftovers()
    return left


def kill_and_heal(c: Cluster, proc: subprocess.Popen[str], expect: list[str]) -> list[str]:
    time.sleep(0.5)  # mid-fault (and mid duty cycle)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    assert proc.returncode == -signal.SIGKILL
    # what `kchaos cleanup --run ID` runs before removing
    done = heal_faults(c.run_id, heal_everything)
    text = "\n".join(done)
    for fragment in expect:
        assert fragment in text, f"{fragment!r} not in heal report:\n{text}"
    assert not [d for d in done if d.startswith("error")], text
    return done


def test_sigkill_mid_network_partition_pause_disk(healthy_cluster: Cluster) -> None:
    c = healthy_cluster
    proc = hold(
        c.run_id,
        "latency:broker-1:latency_ms=300,jitter_ms=50",
        "reset-peer:broker-2:link=client,timeout_ms=100",
        "slow-close:broker-3:link=replication,delay_ms=500",
        "bandwidth:broker-1:link=controller,rate_kbps=100",
        "client-cut:broker-3:mode=refuse",
        "bridge:broker-1",
        "cut:broker-2:to=broker-3",
        "pause:broker-3:mode=sigstop",
        "slow-disk:broker-1:freeze_ms=400,thaw_ms=100",
        "disk-full:broker-2:max_mb=64",
    )
    kill_and_heal(
        c,
        proc,
        [
            "toxiproxy: removed toxic",
            "toxiproxy: removed proxy node-3-client disabled",
            "iptables on broker-2: removed KCHAOS",
            "SIGCONT to the stopped JVM of broker-3",
            "deleted disk-fill file",
        ],
    )
    assert faults_left(c) == []
    c.wait_ready(90)


def test_sigkill_mid_freezer_stall_and_reboot(healthy_cluster: Cluster) -> None:
    c = healthy_cluster
    proc = hold(
        c.run_id,
        "isolate:broker-2",  # rules in every container, before the others go down
        "pause:broker-1:mode=freezer",
        "disk-stall:broker-2",
        "hard-reboot:broker-3",
    )
    kill_and_heal(
        c,
        proc,
        [
            "unpaused container of broker-1",
            "thawed filesystem of broker-2",
            "started stopped node broker-3",
            "iptables on broker-1: removed KCHAOS",
        ],
    )
    wait_for(lambda: faults_left(c) == [], 30, "no leftovers")
    c.wait_ready(120)


def test_sigterm_runs_the_exit_heal(healthy_cluster: Cluster) -> None:
    """With protection on, a SIGTERM of the harness heals before it dies."""
    c = healthy_cluster
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kchaos.faults.hold",
            "--run",
            c.run_id,
            "pause:broker-2:mode=freezer",
            "timeout:broker-1:link=client",
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("HOLDING"):
            break
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
    assert proc.returncode == -signal.SIGTERM
    assert faults_left(c) == []
