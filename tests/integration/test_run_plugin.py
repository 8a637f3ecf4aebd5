"""The pytest plugin against real brokers: a user's chaos test, run through pytester.

To stay cheap it borrows the shared test cluster (attached by run id through
``--kchaos-cluster-factory``, kept with ``--kchaos-keep-cluster``) instead of starting one.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.docker
pytest_plugins = ["pytester"]

FACTORY = """
import os
from kchaos.harness.cluster import attach


def make(spec):
    return attach(os.environ["KCHAOS_PLUGIN_TEST_RUN"])
"""

USER_TEST = """
import time

from kchaos.harness.run.topics import create_topics
from kchaos.harness.rundir.scenario_model import ProducerConfig, TopicConfig


def test_leader_pause_keeps_acknowledged_writes(
    kchaos_cluster, kchaos_workload, kchaos_nemesis, kchaos_check
):
    create_topics(kchaos_cluster.bootstrap_servers,
                  (TopicConfig("plugin-t", 1, 3, {"min.insync.replicas": "2"}),))
    producers = ProducerConfig(count=1, rate=0, keys=0, max_in_flight=10000)  # unpaced
    workload = kchaos_workload(
        topics=["plugin-t"], producers=producers, consumers=(), duration=14
    )
    workload.start()
    nemesis = kchaos_nemesis([{"at": 3, "for": 6, "fault": "pause", "target": "leader:plugin-t:0"}])
    time.sleep(14)
    workload.stop()
    assert nemesis.wait(120)
    workload.drain()
    results = kchaos_check(expect_valid=True)
    assert results.count("lost-write") == 0
"""


def test_user_chaos_test_on_the_real_cluster(
    pytester: pytest.Pytester, healthy_cluster, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("KCHAOS_PLUGIN_TEST_RUN", healthy_cluster.run_id)
    pytester.makepyfile(kchaos_factory=FACTORY, test_user=USER_TEST)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--kchaos-cluster-factory", "kchaos_factory:make", "--kchaos-keep-cluster", "-x"
    )
    result.assert_outcomes(passed=1)
