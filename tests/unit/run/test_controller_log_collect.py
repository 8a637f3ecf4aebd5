"""The after-run collection (harness.run.controller_log) with a fake cluster: which files
it dumps, how it splits a node's log, and that no failure loses the run."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kchaos.harness.run.controller_log import (
    collect_after_run,
    describe,
    dump_files,
    metadata_dir,
    split_log,
)
from kchaos.harness.run.record import RunRecord
from kchaos.harness.rundir.rundir import RunDir

FIXTURE = Path(__file__).parent / "fixtures" / "kafka-4.4.0-leader-kill.dump.txt"
ORIGIN = 1795432376690597314


@dataclass(frozen=True)
class Node:
    node_id: int
    name: str
    container_name: str
    roles: tuple[str, ...] = ("broker", "controller")

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles


@dataclass
class FakeCluster:
    dump: str = ""
    ls_code: int = 0
    dump_code: int = 0
    down: set[int] = field(default_factory=set)
    calls: list[list[str]] = field(default_factory=list)
    nodes: tuple[Node, ...] = (
        Node(1, "broker-1", "kchaos-r-broker-1"),
        Node(2, "broker-2", "kchaos-r-broker-2"),
    )

    def exec(self, node: Node, cmd: list[str]) -> tuple[int, str]:
        if node.node_id in self.down:
            raise RuntimeError(f"container {node.container_name} is not running")
        self.calls.append(list(cmd))
        if cmd[0] == "ls":
            return self.ls_code, "00000000000000000000.log\n00000000000000000000.index\n"
        return self.dump_code, self.dump

    def full_log(self, node: Node) -> bytes:
        return LOG.encode()


LOG = """[kchaos] server properties in /opt/kafka/config/server.properties:
[2026-11-23 11:16:06,715] INFO [ControllerServer id=1] Starting controller (kafka.server.ControllerServer)
[2026-11-23 11:16:07,000] INFO some broker line (kafka.server.BrokerServer)
[2026-11-23 11:16:08,000] ERROR [QuorumController id=1] boom (org.apache.kafka.controller.QuorumController)
java.lang.RuntimeException: boom
\tat org.apache.kafka.controller.X.y(X.java:1)
[2026-11-23 11:16:13,284] INFO [Broker id=1] Leader t-0 with topic id Some(x) starts at leader epoch 0 (state.change.logger)
[kchaos] broker exited
"""  # noqa: E501


def record(tmp_path: Path, **data: Any) -> RunRecord:
    return RunRecord(tmp_path / "run.json", dict(data))


def test_split_log_by_logger():
    parts = split_log(LOG)
    assert parts["server.log"] == LOG
    assert parts["controller.log"].splitlines() == [
        LOG.splitlines()[1],
        LOG.splitlines()[3],
        "java.lang.RuntimeException: boom",
        "\tat org.apache.kafka.controller.X.y(X.java:1)",
    ]
    assert parts["state-change.log"].splitlines() == [LOG.splitlines()[6]]


def test_dump_files_and_metadata_dir():
    d = "/data/__cluster_metadata-0"
    names = ["00000000000000000120.log", "00000000000000000000.log", "x.index", "leader-epoch"]
    assert dump_files(d, names) == [
        f"{d}/00000000000000000000.log",
        f"{d}/00000000000000000120.log",
    ]
    cleaned = ["00000000000000000500.log", "00000000000000000600-0000000003.checkpoint"]
    assert dump_files(d, cleaned) == [f"{d}/{cleaned[1]}", f"{d}/{cleaned[0]}"]

    class WithSpec:
        toxiproxy_ip = "10.0.0.2"

        def __init__(self, props: dict[str, str]) -> None:
            from kchaos.harness.cluster.spec import ClusterSpec

            self.spec = ClusterSpec(brokers=1, server_properties=props)

    node = Node(1, "broker-1", "c")
    assert metadata_dir(WithSpec({}), node) == "/var/lib/kafka/data/__cluster_metadata-0"
    assert metadata_dir(WithSpec({"log.dirs": "/a,/b"}), node) == "/a/__cluster_metadata-0"
    meta = WithSpec({"metadata.log.dir": "/m/"})
    assert metadata_dir(meta, node) == "/m/__cluster_metadata-0"
    assert metadata_dir(object(), node) == "/var/lib/kafka/data/__cluster_metadata-0"


def test_collect_writes_controller_jsonl_and_logs(tmp_path: Path):
    cluster = FakeCluster(dump=FIXTURE.read_text(), down={1})  # node 1 stopped: node 2 it is
    rec = record(tmp_path, history_start_unix_ns=ORIGIN)
    after = collect_after_run(cluster, RunDir(tmp_path), rec, ["ctl"])
    ctl = after["controller_log"]
    assert ctl["status"] == "written" and ctl["node"] == "broker-2" and ctl["lines"] == 16
    lines = [json.loads(x) for x in (tmp_path / "controller.jsonl").read_text().splitlines()]
    assert len(lines) == 16 and lines[0]["offset"] == 10
    assert cluster.calls[1][:2] == ["bash", "-c"]
    assert (
        cluster.calls[1][-1] == "/var/lib/kafka/data/__cluster_metadata-0/00000000000000000000.log"
    )
    for name in ("kchaos-r-broker-1", "kchaos-r-broker-2"):
        for f in ("server.log", "controller.log", "state-change.log"):
            assert (tmp_path / "logs" / name / f).is_file()
    # recorded in memory: the run's final write puts it in run.json
    assert rec.data["after_run"]["controller_log"]["lines"] == 16
    assert not (tmp_path / "run.json").exists()
    assert "16 lines" in describe(after) and "2 node(s)" in describe(after)


def test_failures_are_recorded_not_raised(tmp_path: Path):
    # the tool fails everywhere
    cluster = FakeCluster(dump="exit code 1\nError: boom", dump_code=1)
    rec = record(tmp_path, history_start_unix_ns=ORIGIN)
    after = collect_after_run(cluster, RunDir(tmp_path), rec, ["ctl"])
    assert after["controller_log"]["status"] == "failed"
    assert "kafka-dump-log.sh failed" in after["controller_log"]["error"]
    assert not (tmp_path / "controller.jsonl").exists()
    assert "not written" in describe(after)
    # a malformed dump: a clear error naming the line, no file
    bad = FIXTURE.read_text().replace('"isr":[2,3]', '"isr":"2,3"')
    after = collect_after_run(FakeCluster(dump=bad), RunDir(tmp_path), rec, ["ctl"])
    assert after["controller_log"]["status"] == "failed"
    assert "metadata-dump.txt" in after["controller_log"]["error"]
    assert ":105: isr:" in after["controller_log"]["error"]
    assert not (tmp_path / "controller.jsonl").exists()
    # no history time origin: skipped; a cluster without nodes: logs not copied
    after = collect_after_run(object(), RunDir(tmp_path), record(tmp_path), ["ctl"])
    assert after["controller_log"]["status"] == "skipped"
    assert "error" in after["logs"]


def test_report_links_the_controller_record_and_logs(tmp_path: Path):
    from kchaos.reports.html import files_section

    assert files_section(RunDir(tmp_path)) == ""
    (tmp_path / "controller.jsonl").write_text("")
    node = tmp_path / "logs" / "kchaos-r-broker-1"
    node.mkdir(parents=True)
    for name in ("server.log", "state-change.log"):
        (node / name).write_text("x")
    html = files_section(RunDir(tmp_path))
    assert "href='controller.jsonl'" in html
    assert "href='logs/kchaos-r-broker-1/state-change.log'" in html
