"""The Docker engine the set-up started answers and honours kchaos labels."""

from __future__ import annotations

import docker
import pytest

from kchaos.harness.labels import LABEL_APP, LABEL_RUN, labels_for, new_run_id

pytestmark = pytest.mark.docker


def test_engine_answers_and_filters_by_label() -> None:
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:  # fail loudly, never skip
        pytest.fail(f"Docker engine not reachable: {exc}")
    run_id = new_run_id()
    ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet="10.254.77.0/24")])
    net = client.networks.create(
        f"kchaos-engine-{run_id}", driver="bridge", ipam=ipam, labels=labels_for(run_id, "tool")
    )
    try:
        found = client.networks.list(filters={"label": f"{LABEL_RUN}={run_id}"})
        assert [n.id for n in found] == [net.id]
        assert net.attrs["Labels"][LABEL_APP] == "1"
    finally:
        net.remove()
    assert client.networks.list(filters={"label": f"{LABEL_RUN}={run_id}"}) == []
