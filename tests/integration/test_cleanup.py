"""Failed starts and killed harnesses leave nothing behind (real Docker, real mounts)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
import docker.errors
import docker.models.containers
import pytest

from kchaos.cli import main as cli
from kchaos.harness.cluster import Cluster
from kchaos.harness.cluster.cleanup import EXIT_LEFTOVERS, leftovers
from kchaos.harness.cluster.topology import run_dir
from kchaos.harness.errors import BrokerStartError, ReadinessTimeout
from kchaos.harness.labels import LABEL_RUN, labels_for, new_run_id

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

KCHAOS = str(Path(sys.executable).with_name("kchaos"))


def test_a_refused_broker_config_fails_the_start_with_its_own_error(
    cluster_factory: Callable[..., Cluster], docker_client: docker.DockerClient
) -> None:
    run_id = "it-badconf-" + new_run_id()
    with pytest.raises(BrokerStartError) as info:
        cluster_factory(
            brokers=1,
            run_id=run_id,
            broker_properties={1: {"num.network.threads": "not-a-number"}},
        )
    message = str(info.value)
    assert "broker-1" in message
    assert "num.network.threads" in message and "not-a-number" in message
    assert "last lines of its log" in message
    # The failed start removed everything it had created.
    assert leftovers(run_id, docker_client) == []


def _wait_for(what: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("when", ["mid-start", "once-up"])
def test_sigkill_of_the_harness_then_cleanup_leaves_nothing(
    when: str, kafka_images: object, docker_client: docker.DockerClient
) -> None:
    run_id = f"it-kill-{when}-" + new_run_id()
    cmd = [KCHAOS, "cluster", "up", "--brokers", "1", "--heap", "256m", "--run-id", run_id]
    proc = subprocess.Popen(
        [*cmd, "--foreground"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True)
    reader.start()
    try:

        def broker_container_exists() -> bool:
            flt = {"label": [f"{LABEL_RUN}={run_id}", "io.kchaos.role=broker"]}
            return bool(docker_client.containers.list(all=True, filters=flt))

        if when == "mid-start":
            assert _wait_for(broker_container_exists, 120), "the start never got that far"
        else:
            up = _wait_for(lambda: any(ln.startswith("started in") for ln in lines), 240)
            assert up, "".join(lines)
        assert proc.poll() is None, "the harness ended before it could be killed"
        assert leftovers(run_id, docker_client), "there is something to clean up"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        time.sleep(1)
        assert leftovers(run_id, docker_client), "a SIGKILLed harness cleans nothing itself"
        done = subprocess.run(
            [KCHAOS, "cleanup", "--run", run_id], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        assert "removed container" in done.stdout
        assert "detached /dev/loop" in done.stdout
        assert leftovers(run_id, docker_client) == []
        assert not run_dir(run_id).exists()
    finally:
        if proc.poll() is None:
            proc.kill()
        subprocess.run([KCHAOS, "cleanup", "--run", run_id], capture_output=True, timeout=300)


def test_cleanup_undoes_frozen_disks_paused_and_stopped_processes(
    cluster_factory: Callable[..., Cluster], docker_client: docker.DockerClient
) -> None:
    """The worst a crashed run can leave: a frozen filesystem under a running broker, a
    SIGSTOPped JVM, a paused Toxiproxy, and no cluster.json to attach to."""
    run_id = "it-frozen-" + new_run_id()
    cluster = cluster_factory(brokers=1, run_id=run_id)
    node = cluster.node(1)
    try:
        cluster.freeze_fs(node)
        cluster.signal(node, "STOP")
        docker_client.containers.get(f"kchaos-{run_id}-toxiproxy").pause()
        (run_dir(run_id) / "cluster.json").unlink()
        done = subprocess.run(
            [KCHAOS, "cleanup", "--run", run_id], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        assert f"thawed {node.mount_path}" in done.stdout
        assert "unpaused" in done.stdout
        assert leftovers(run_id, docker_client) == []
    finally:
        subprocess.run([KCHAOS, "cleanup", "--run", run_id], capture_output=True, timeout=300)


def test_readiness_timeout_carries_every_containers_state(
    cluster_factory: Callable[..., Cluster], docker_client: docker.DockerClient
) -> None:
    run_id = "it-timeout-" + new_run_id()
    # A second voter that does not exist: the lone node never wins an election, so it keeps
    # running without ever becoming ready, however fast the machine is.
    stuck = {"controller.quorum.voters": "1@localhost:9094,2@127.0.0.1:1"}
    with pytest.raises(ReadinessTimeout) as info:
        cluster_factory(brokers=1, run_id=run_id, ready_timeout=10.0, server_properties=stuck)
    message = str(info.value)
    assert "not ready after 10s" in message
    assert f"--- kchaos-{run_id}-toxiproxy: running" in message
    assert f"--- kchaos-{run_id}-broker-1: running" in message
    # Under the broker's header come its own last log lines: the launcher's "[kchaos]"
    # lines or Kafka's log4j lines, which end with the logger's name in parentheses.
    broker_part = message.split(f"--- kchaos-{run_id}-broker-1: running", 1)[1]
    log_lines = [ln for ln in broker_part.splitlines()[1:] if ln.strip()]
    assert log_lines, "the broker's last log lines are included"
    assert any("[kchaos]" in ln or ln.rstrip().endswith(")") for ln in log_lines), log_lines
    assert leftovers(run_id, docker_client) == []


def _cleanup_in_process(run_id: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`kchaos cleanup --run RUN_ID` in this process (so a monkeypatch reaches it)."""
    with pytest.raises(SystemExit) as info:
        cli.main(["cleanup", "--run", run_id])
    out, err = capsys.readouterr()
    assert isinstance(info.value.code, int), info.value.code
    return info.value.code, out, err


def test_a_container_cleanup_cannot_remove_fails_it_and_is_named(
    kafka_images: Any,
    docker_client: docker.DockerClient,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A real labelled container survives `kchaos cleanup`: exit non-zero, its name and id
    on stderr. Its removal is refused by patching the client's removal call for this one
    container (by id); every other removal goes to the engine. `--run` with a run id of
    this test's own keeps every other run (a live cluster, say) out of reach."""
    run_id = "it-leftover-" + new_run_id()
    name = f"kchaos-{run_id}-tool"
    container = docker_client.containers.create(
        kafka_images.kafka,
        ["true"],
        entrypoint=[],
        name=name,
        network_mode="none",
        labels=labels_for(run_id, "tool"),
    )
    try:
        real_remove = docker.models.containers.Container.remove

        def refuse_this_one(self: docker.models.containers.Container, **kwargs: Any) -> None:
            if self.id == container.id:
                raise docker.errors.APIError(f"removal of {self.name} refused by the test")
            real_remove(self, **kwargs)

        monkeypatch.setattr(docker.models.containers.Container, "remove", refuse_this_one)
        code, out, err = _cleanup_in_process(run_id, capsys)
        assert code == EXIT_LEFTOVERS != 0, (out, err)
        assert f"remove container {name} failed" in out, out
        assert f"container {name} (id {container.id[:12]}" in err, err
        assert f"run {run_id} object(s) remain" in err, err
        # It is really still there on the engine.
        assert [
            c.id
            for c in docker_client.containers.list(
                all=True, filters={"label": f"{LABEL_RUN}={run_id}"}
            )
        ] == [container.id]

        monkeypatch.undo()
        code, out, err = _cleanup_in_process(run_id, capsys)
        assert code == 0, (out, err)
        assert f"removed container {name}" in out
        assert leftovers(run_id, docker_client) == []
    finally:
        monkeypatch.undo()
        with contextlib.suppress(docker.errors.NotFound):
            docker_client.containers.get(container.id).remove(force=True, v=True)
