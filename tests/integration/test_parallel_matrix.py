"""`kchaos matrix --parallel 2`: two clusters on this host at once (issue 36).

One matrix of smoke x 2 seeds, shortened (24 s of workload, the kill moved to 14-18 s),
with ``--parallel 2``. While it runs, the test looks at Docker every half second and
notes every labelled container and network. It asserts:

* the matrix exits 0 and both runs ended as smoke expects (valid), each with its own
  run id, and run.json ``host`` says 2 runs at once;
* the two runs' windows overlap in time (run.json start/end), and Docker showed both
  runs' brokers at the same moment;
* every container and network of each run is named after its own run id and labelled
  with it, and the two networks have different subnets;
* afterwards nothing labelled with either run id is left (containers, networks, the
  state directory), and every labelled object that existed before the matrix (another
  run's, such as the docker suite's shared cluster) still exists: neither run's cleanup
  touched anything but its own.

Written to take about 2-3 minutes on 2 cores (two clusters start and judge side by side).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import docker
import pytest

from kchaos.harness.labels import LABEL_APP, LABEL_ROLE, LABEL_RUN, state_root

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]
KCHAOS = [sys.executable, "-m", "kchaos.cli"]
SHORTER = ["workload.duration=24s", "nemesis.steps.1.at=14"]
LABELLED = {"label": f"{LABEL_APP}=1"}


def _labelled(client: docker.DockerClient) -> dict[str, dict[str, Any]]:
    """Every labelled container and network now: name -> kind, run label, role, subnet."""
    seen: dict[str, dict[str, Any]] = {}
    for c in client.containers.list(all=True, filters=LABELLED, ignore_removed=True):
        labels = c.labels or {}
        seen[c.name] = {
            "kind": "container",
            "run": labels.get(LABEL_RUN),
            "role": labels.get(LABEL_ROLE),
        }
    for n in client.networks.list(filters=LABELLED):
        attrs = client.api.inspect_network(n.id)
        pools = (attrs.get("IPAM") or {}).get("Config") or []
        seen[n.name] = {
            "kind": "network",
            "run": (attrs.get("Labels") or {}).get(LABEL_RUN),
            "subnet": pools[0].get("Subnet") if pools else None,
        }
    return seen


class Watcher:
    """Looks at Docker every half second in a thread while the matrix runs."""

    def __init__(self, client: docker.DockerClient) -> None:
        self.client = client
        self.snapshots: list[dict[str, dict[str, Any]]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.stop.is_set():
            # something removed between listing and inspecting it: the next look has it
            with contextlib.suppress(docker.errors.DockerException):
                self.snapshots.append(_labelled(self.client))
            self.stop.wait(0.5)

    def __enter__(self) -> Watcher:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


def _when(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")


def test_two_clusters_at_once_each_cleaned_up_alone(
    tmp_path: Path, docker_client: docker.DockerClient, kafka_images: Any
) -> None:
    before = _labelled(docker_client)
    out = tmp_path / "matrix"
    sets = [arg for item in SHORTER for arg in ("--set", item)]
    version = os.environ.get("KCHAOS_TEST_KAFKA_VERSION", "4.4.0")
    cmd = [*KCHAOS, "matrix", "smoke", "--kafka-version", version, "--seeds", "2",
           "--parallel", "2", *sets, "--out", str(out),
           "--durations", str(tmp_path / "durations.json")]  # fmt: skip
    env = {**os.environ, "KCHAOS_RUNS_DIR": str(tmp_path / "runs")}
    env.pop("KCHAOS_METRICS_PORT", None)
    began = time.monotonic()
    with Watcher(docker_client) as watcher:
        done = subprocess.run(
            cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600
        )
    print(f"matrix --parallel 2 took {time.monotonic() - began:.0f} s, exit {done.returncode}")
    logs = {p.name: p.read_text()[-2000:] for p in (out / "console").rglob("*.log")}
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:] + str(logs)

    # both runs ended as smoke expects, each with its own run id, and say they shared
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["passed"], summary["total"]) == (2, 2), summary
    runs = [
        json.loads((out / "smoke" / f"kafka-{version}" / f"seed-{s}" / "run.json").read_text())
        for s in (1, 2)
    ]
    ids = [r["run_id"] for r in runs]
    assert len(set(ids)) == 2
    for r in runs:
        assert r["status"] == "completed"
        assert r["host"]["parallel"] == 2 and r["host"]["cpus"] >= 1
        assert r["host"]["load_avg_start"] and r["host"]["load_avg_end"]
    # their windows overlap: each started before the other ended
    (s1, e1), (s2, e2) = [(_when(r["start"]), _when(r["end"])) for r in runs]
    assert s1 < e2 and s2 < e1, (s1, e1, s2, e2)

    # what Docker showed while they ran: every object named after its own run's id
    mine = [
        {name: info for name, info in snap.items() if info["run"] in ids}
        for snap in watcher.snapshots
    ]
    named = {name: info for snap in mine for name, info in snap.items()}
    for run_id in ids:
        objects = {n: i for n, i in named.items() if i["run"] == run_id}
        kinds = {(i["kind"], i.get("role")) for i in objects.values()}
        assert ("container", "broker") in kinds and ("container", "toxiproxy") in kinds
        assert ("network", None) in kinds
        for name in objects:
            assert name.startswith(f"kchaos-{run_id}"), (name, run_id)
    subnets = {i["run"]: i["subnet"] for i in named.values() if i["kind"] == "network"}
    assert len(set(subnets.values())) == 2, subnets
    # both clusters' brokers were up at the same moment
    both = [
        snap
        for snap in mine
        if all(any(i["run"] == r and i.get("role") == "broker" for i in snap.values()) for r in ids)
    ]
    assert both, "Docker never showed both runs' brokers at once"

    # afterwards: nothing of either run is left, and nothing of any other run was touched
    after = _labelled(docker_client)
    assert not [name for name, info in after.items() if info["run"] in ids]
    for run_id in ids:
        assert not (state_root() / "runs" / run_id).exists()
    gone = sorted(set(before) - set(after))
    assert not gone, f"objects of other runs disappeared during the matrix: {gone}"
