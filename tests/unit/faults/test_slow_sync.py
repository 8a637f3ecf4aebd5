"""slow-sync: a blkio write throttle on the targets' data devices, its stop, its heal and
the validation of its params (the effect on a real broker: tests/integration/test_slow_sync.py)."""

from __future__ import annotations

import pytest
from faults_fakes import FakeCluster, FakeToxiproxy

from kchaos.faults import active_faults, fault_spec, heal_everything, make_fault
from kchaos.faults.params import Where
from kchaos.harness.errors import ConfigError, FaultError


def test_start_throttles_each_target_and_stop_clears_it(cluster: FakeCluster) -> None:
    with make_fault(cluster, "slow-sync", "broker-2", write_iops=3, write_bps=4096) as f:
        assert cluster.names("throttle") == [("throttle", "broker-2", 3, 4096)]
        assert set(cluster.throttles) == {2}
        assert f.detail["throttles"]["broker-2"] == cluster.throttles[2]
    assert cluster.throttles == {}
    assert cluster.names("unthrottle") == [("unthrottle", "broker-2")]


def test_defaults_are_one_write_a_second_and_no_byte_limit(cluster: FakeCluster) -> None:
    with make_fault(cluster, "slow-sync", "all"):
        assert sorted(c[1:] for c in cluster.names("throttle")) == [
            ("broker-1", 1, 0),
            ("broker-2", 1, 0),
            ("broker-3", 1, 0),
        ]
    assert cluster.throttles == {}


def test_a_failed_start_clears_what_it_set(cluster: FakeCluster) -> None:
    cluster.throttle_refused.add(3)
    f = make_fault(cluster, "slow-sync", "all")
    with pytest.raises(FaultError, match="broker-3: no cgroup-v1 blkio group"):
        f.start()
    assert cluster.throttles == {} and not f.active and f not in active_faults()
    # the node that failed was released too (it may have been throttled halfway)
    assert ("unthrottle", "broker-3") in cluster.calls


def test_stop_of_a_node_whose_container_is_gone_is_no_error(cluster: FakeCluster) -> None:
    f = make_fault(cluster, "slow-sync", "broker-1")
    f.start()
    cluster.state[1] = "exited"  # restarted or stopped: the group went with the container
    f.stop()
    assert not f.active


def test_heal_clears_throttles_without_memory(
    cluster: FakeCluster, toxiproxy: type[FakeToxiproxy]
) -> None:
    cluster.throttles[1] = ["blkio.throttle.write_iops_device 7:3 1"]
    cluster.throttles[3] = ["blkio.throttle.write_bps_device 7:5 100"]
    done = heal_everything(cluster)
    assert "removed blkio.throttle.write_iops_device 7:3 1 from broker-1's blkio group" in done
    assert "removed blkio.throttle.write_bps_device 7:5 100 from broker-3's blkio group" in done
    assert cluster.throttles == {}
    assert heal_everything(cluster) == []  # nothing left: nothing reported


def test_heal_forgets_a_slow_sync_it_undid(
    cluster: FakeCluster, toxiproxy: type[FakeToxiproxy]
) -> None:
    f = make_fault(cluster, "slow-sync", "broker-1")
    f.start()
    heal_everything(cluster)
    assert cluster.throttles == {} and f not in active_faults() and not f.active


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"write_iops": 0}, "params.write_iops: must be >= 1, got 0"),
        ({"write_iops": 1.5}, "params.write_iops: must be an integer, got 1.5"),
        ({"write_bps": -1}, "params.write_bps: must be >= 0, got -1"),
        ({"write_bps": "fast"}, "params.write_bps: must be a number"),
        ({"read_iops": 1}, "unknown parameter 'read_iops'"),
    ],
)
def test_bad_params_name_file_line_and_field(params: dict[str, object], message: str) -> None:
    where = Where(file="scenario.yaml", field="nemesis.steps[0]", line=12)
    with pytest.raises(ConfigError, match=message) as info:
        fault_spec("slow-sync", "broker-1", params, where=where)
    text = str(info.value)
    assert "scenario.yaml" in text and "12" in text and "nemesis.steps[0].params" in text
