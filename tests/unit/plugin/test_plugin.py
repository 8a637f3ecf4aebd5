"""The pytest11 plugin, exercised the way a user would, through pytester."""

import subprocess
import sys

import pytest

pytest_plugins = ["pytester"]

FAKE_CONFTEST = '''
from kchaos.harness.cluster.api import NodeHandle
from pathlib import Path


class FakeCluster:
    """Enough of ClusterHandle for a nemesis with a fake fault factory."""

    run_id = "fake"
    subnet = "10.0.0.0/24"
    toxiproxy_ip = "10.0.0.2"

    def __init__(self, spec):
        self.spec = spec
        self.cleaned = False
        self.nodes = [NodeHandle(i, f"broker-{i}", ("broker", "controller"), f"c{i}",
                                 f"10.0.0.{10 + i}", Path("/nonexistent"), "", Path("/x"))
                      for i in range(1, spec["brokers"] + 1)]
        self.brokers = self.nodes
        self.controllers = self.nodes

    def node(self, key):
        for n in self.nodes:
            if key in (n.node_id, n.name):
                return n
        raise KeyError(key)

    def cleanup(self):
        self.cleaned = True


def make(spec):
    return FakeCluster(spec)


class FakeFault:
    def __init__(self, cluster, spec):
        self.target_names = [spec.target]
        self.detail = {}
        self.events = []

    def start(self):
        self.events.append("start")

    def stop(self):
        self.events.append("stop")
'''

CLEAN_HISTORY = """
def record(h, lose=False):
    h.append({"process": 1, "type": "invoke", "f": "send", "topic": "t", "key": "k",
              "value": "1-0"})
    h.append({"process": 1, "type": "ok", "f": "send", "topic": "t", "partition": 0,
              "offset": 0, "value": "1-0"})
    h.append({"process": "monitor", "type": "ok", "f": "metadata", "topic": "t", "partition": 0,
              "leader": 1, "isr": [1, 2, 3], "replicas": [1, 2, 3], "min_insync": 2})
    records = [] if lose else [{"topic": "t", "partition": 0, "offset": 0, "value": "1-0"}]
    h.append({"process": "drain", "type": "ok", "f": "drain", "records": records})
    h.append({"process": "drain", "type": "ok", "f": "drain-end", "topic": "t", "partition": 0,
              "log_start_offset": 0, "high_watermark": 0 if lose else 1})
"""


def test_options_are_registered(pytester: pytest.Pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*--kchaos-kafka-version*", "*--kchaos-cluster-factory*"])


def test_options_parse_into_the_cluster_spec(pytester: pytest.Pytester):
    pytester.makepyfile(
        """
        def test_spec(kchaos_cluster_spec, pytestconfig):
            assert pytestconfig.getoption("kchaos_kafka_version") == "3.9.1"
            assert kchaos_cluster_spec["kafka_version"] == "3.9.1"
            assert kchaos_cluster_spec["brokers"] == 5
        """
    )
    result = pytester.runpytest("--kchaos-kafka-version", "3.9.1", "--kchaos-brokers", "5")
    result.assert_outcomes(passed=1)


def test_user_chaos_tests_with_a_fake_cluster(pytester: pytest.Pytester):
    pytester.makeconftest(FAKE_CONFTEST)
    pytester.makepyfile(
        CLEAN_HISTORY
        + """
import conftest


def test_clean(kchaos_cluster, kchaos_history, kchaos_check, kchaos_run_dir):
    assert isinstance(kchaos_cluster, conftest.FakeCluster)
    record(kchaos_history)
    results = kchaos_check(expect_valid=True)
    assert results.count("lost-write") == 0
    # the columnar copy, as a `kchaos run` leaves it
    assert list((kchaos_run_dir / "history.parquet").glob("*.parquet"))


def test_lost_write_fails_the_test(kchaos_history, kchaos_check):
    record(kchaos_history, lose=True)
    kchaos_check(expect_valid=True)


def test_lost_write_expected(kchaos_history, kchaos_check):
    record(kchaos_history, lose=True)
    assert kchaos_check(expect_valid=False).count("lost-write") == 1


def test_nemesis_records_faults(kchaos_nemesis, kchaos_history, kchaos_run_dir):
    import json
    made = []

    def factory(cluster, spec):
        made.append(conftest.FakeFault(cluster, spec))
        return made[-1]

    nemesis = kchaos_nemesis([{"at": 0, "for": 0.1, "fault": "pause", "target": "broker-2"}],
                             factory=factory, final_heal=False, protect=False)
    assert nemesis.wait(10)
    kchaos_history.close()
    lines = [json.loads(l) for l in (kchaos_run_dir / "history.jsonl").read_text().splitlines()]
    assert [(e["f"], e["phase"], e["targets"]) for e in lines] == [
        ("fault", "start", ["broker-2"]), ("fault", "stop", ["broker-2"])]
    assert made[0].events == ["start", "stop"]
"""
    )
    result = pytester.runpytest(
        "--kchaos-cluster-factory", "conftest:make", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*kchaos verdict False, expected True*lost-write*"])


def test_bad_factory_is_a_usage_error(pytester: pytest.Pytester):
    pytester.makepyfile("def test_x(kchaos_cluster):\n    pass\n")
    result = pytester.runpytest("--kchaos-cluster-factory", "nomodulecolon")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*MODULE:CALLABLE*"])


def test_plugin_imports_cheaply():
    code = (
        "import sys, kchaos.harness.pytest_plugin\n"
        "heavy = [m for m in ('docker', 'confluent_kafka', 'kafka', 'pyspark', 'kchaos.faults',"
        " 'kchaos.workloads', 'plotly') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
