"""State triggers (faults.trigger) and the nemesis steps that wait for them, on fakes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from faults_fakes import FakeCluster, FakeSink

from kchaos.faults import active_faults, build_nemesis, from_spec
from kchaos.faults.trigger import (
    DEFAULT_POLL_S,
    HandleState,
    TriggerContext,
    parse_trigger,
    wait_for,
)
from kchaos.harness.cluster.observe import EpochReader, LogFollower, last_registration
from kchaos.harness.errors import ConfigError, TriggerCancelled, TriggerTimeout
from kchaos.harness.scenario.loader import load_scenario

IN_ISR = {"in_isr": {"broker": 2, "topic": "t", "partition": 0}}


def step(when: Any, timeout: float = 5.0, **extra: Any) -> dict[str, Any]:
    entry = {"at": 0, "for": 0.05, "fault": "pause", "target": "broker-3", "when": when}
    entry["params"] = {"mode": "freezer"}
    entry["timeout"] = timeout
    entry.update(extra)
    return {"type": "scripted", "faults": [entry]}


def fault_lines(sink: FakeSink, fid: str = "f-1") -> dict[str, dict[str, Any]]:
    return {e["phase"]: e for e in sink.events if e["f"] == "fault" and e["id"] == fid}


def test_fault_starts_when_the_condition_holds_after_some_polls(tmp_path: Path) -> None:
    cluster = FakeCluster(3, tmp_path)
    sink = FakeSink()
    cluster.isr[("t", 0)] = [1, 3]
    changed_at: list[int] = []

    def rejoin(c: FakeCluster, n: int) -> None:
        if n == 4 and not changed_at:
            changed_at.append(sink.elapsed_ns())
            c.isr[("t", 0)] = [1, 2, 3]

    cluster.on_observe = rejoin
    # a timeout no loaded machine reaches in four polls: only the hold can start the fault
    nemesis = build_nemesis(cluster, step(IN_ISR, timeout=3600), sink, protect=False)
    nemesis.run()
    lines = fault_lines(sink)
    assert set(lines) == {"start", "stop"}
    trigger = lines["start"]["trigger"]
    assert trigger["condition"] == IN_ISR
    # the observation that showed broker 2 back came after the change, the start after it
    assert changed_at[0] <= trigger["held_at"] <= lines["start"]["time"]
    # three misses, each followed by a poll interval's wait, then held (not timed out: that
    # would have meant no start line at all); waits last at least what they ask for
    assert "timed_out" not in trigger
    assert trigger["waited_s"] >= 3 * DEFAULT_POLL_S
    assert cluster.observations == 4
    assert cluster.names("pause") == [("pause", "broker-3")]
    rec = nemesis.records["f-1"]
    assert rec.error is None and rec.trigger == trigger
    # the fault ran its `for` from the hold, not from `at`
    assert rec.stop_began is not None and rec.stop_began >= rec.at + 0.05 - 1e-3
    assert nemesis.errors() == []


def test_condition_that_never_holds_times_out_with_no_start_line(tmp_path: Path) -> None:
    cluster = FakeCluster(3, tmp_path)
    sink = FakeSink()
    cluster.isr[("t", 0)] = [1, 3]
    nemesis = build_nemesis(cluster, step(IN_ISR, timeout=0.5), sink, protect=False)
    began = time.monotonic()
    nemesis.run()
    assert time.monotonic() - began >= 0.5
    assert fault_lines(sink) == {}  # nothing started, nothing to stop
    assert cluster.names("pause") == []
    assert [f for f in active_faults() if f.cluster is cluster] == []  # other tests' may linger
    errors = nemesis.errors()
    assert [(e["id"], e["phase"]) for e in errors] == [("f-1", "trigger")]
    message = errors[0]["error"]
    assert "timed out after 0.5s" in message
    assert "broker 2 in the ISR of t-0" in message
    assert "ISR of t-0 = [1, 3]" in message  # what was last observed
    # the final heal still ran
    assert set(fault_lines(sink, "heal")) == {"start", "stop"}


def test_failed_observations_are_retried_and_reported(tmp_path: Path) -> None:
    cluster = FakeCluster(3, tmp_path)
    cluster.isr_error = RuntimeError("broker unreachable")
    trigger = parse_trigger(IN_ISR, 0.4)
    with pytest.raises(TriggerTimeout, match="observation failed: RuntimeError: broker unr"):
        wait_for(trigger, HandleState(cluster), clock_ns=time.monotonic_ns)
    assert cluster.observations >= 2


def test_conditions_in_a_list_hold_one_after_the_other(tmp_path: Path) -> None:
    cluster = FakeCluster(3, tmp_path)
    sink = FakeSink()
    # the ISR is full (so in_isr alone would hold at once); it shrinks, then recovers
    states = {3: [1, 3], 6: [1, 2, 3]}

    def script(c: FakeCluster, n: int) -> None:
        if n in states:
            c.isr[("t", 0)] = states[n]

    cluster.on_observe = script
    when = [{"isr_below": {"topic": "t", "partition": 0, "size": 3}}, IN_ISR]
    nemesis = build_nemesis(cluster, step(when), sink, protect=False)
    nemesis.run()
    trigger = fault_lines(sink)["start"]["trigger"]
    assert trigger["condition"] == when
    first, second = trigger["steps"]
    assert first["condition"] == when[0] and second["condition"] == IN_ISR
    assert first["held_at"] < second["held_at"] == trigger["held_at"]
    assert cluster.observations == 6


def test_registered_needs_a_new_broker_epoch(tmp_path: Path) -> None:
    cluster = FakeCluster(3, tmp_path)
    cluster.alive = {1, 3}

    def restart(c: FakeCluster, n: int) -> None:
        if n == 3:
            c.epochs[2] = 57  # re-registered, still fenced
        if n == 5:
            c.alive = {1, 2, 3}

    cluster.on_observe = restart
    plain = parse_trigger({"registered": {"broker": 2}}, 5)
    wait_for(plain, HandleState(cluster), clock_ns=time.monotonic_ns)
    assert cluster.observations == 3  # baseline 12, then 12, then 57
    cluster.observations, cluster.epochs[2], cluster.alive = 0, 12, {1, 3}
    unfenced = parse_trigger({"registered": {"broker": 2, "unfenced": True}}, 5)
    held = wait_for(unfenced, HandleState(cluster), clock_ns=time.monotonic_ns)
    assert cluster.observations == 5 and held.held_at > 0


def test_broker_epoch_from_the_brokers_log(tmp_path: Path) -> None:
    text = (
        "[2026-11-23 10:00:01,000] INFO [BrokerLifecycleManager id=2] Successfully "
        "registered broker 2 with broker epoch 14 (kafka.server.BrokerLifecycleManager)\n"
        "[...] INFO [BrokerLifecycleManager id=3] Successfully registered broker 3 with "
        "broker epoch 20\n"
        "[...] INFO [BrokerServer id=2] Successfully registered broker 2 with broker epoch 96\n"
    )
    assert last_registration(text, 2) == 96
    assert last_registration(text, 3) == 20
    assert last_registration(text, 1) is None

    reader = EpochReader(lambda broker, tail: text if broker == 2 else "")
    assert reader.epoch(2) == 96 and reader.epoch(1) is None


def test_stop_while_waiting_cancels_without_a_start_line(
    tmp_path: Path, eventually: Callable[..., None]
) -> None:
    cluster = FakeCluster(3, tmp_path)
    sink = FakeSink()
    cluster.isr[("t", 0)] = [1, 3]
    # an hour's timeout: only the cancel can end this wait within the test's own timeout
    # (pytest-timeout fails the test if stop() waits it out), and it says which ended it
    nemesis = build_nemesis(cluster, step(IN_ISR, timeout=3600), sink, protect=False)
    nemesis.start()
    eventually(lambda: cluster.observations >= 2, "the trigger polling")
    nemesis.stop()
    assert fault_lines(sink) == {}
    error = nemesis.records["f-1"].error or ""
    assert "nemesis stopped while waiting" in error and "timed out" not in error


def test_untriggered_steps_keep_running_while_a_trigger_waits(tmp_path: Path) -> None:
    cluster = FakeCluster(3, tmp_path)
    sink = FakeSink()
    cluster.isr[("t", 0)] = [1, 3]
    spec = step(IN_ISR, timeout=0.6)
    spec["faults"].append({"at": 0.1, "for": 0.05, "fault": "pause", "target": "broker-1"})
    nemesis = build_nemesis(cluster, spec, sink, protect=False)
    nemesis.run()
    assert set(fault_lines(sink, "f-2")) == {"start", "stop"}
    assert fault_lines(sink, "f-1") == {}


def test_schedule_round_trip_keeps_the_trigger() -> None:
    schedule = from_spec(step(IN_ISR, timeout=7))
    entry = schedule.to_list()[0]
    assert entry["when"] == IN_ISR and entry["timeout"] == 7.0
    entry.pop("id")
    again = from_spec({"type": "scripted", "faults": [entry]})
    assert again.faults[0].trigger == schedule.faults[0].trigger
    # `at` may be left out with a trigger (eligible at once), not without one
    assert from_spec({"faults": [{"fault": "pause", "when": IN_ISR}]}).faults[0].at == 0
    with pytest.raises(ConfigError, match=r"nemesis.faults\[0\].at: missing"):
        from_spec({"faults": [{"fault": "pause"}]})


@pytest.mark.parametrize(
    ("when", "timeout", "field", "message"),
    [
        ({"in_isr": {"broker": 2, "topic": "t"}}, None, "when.in_isr.partition", "missing"),
        ({"gone": {"broker": 2}}, None, "when.gone", "unknown condition 'gone'"),
        ({"registered": {"broker": "2"}}, None, "when.registered.broker", "must be an integer"),
        ({"registered": {"broker": 2, "x": 1}}, None, "when.registered.x", "unknown field"),
        ({"registered": 2}, None, "when.registered", "must be a mapping"),
        ({"log_line": {"broker": 2}}, None, "when.log_line.contains", "missing"),
        ({"log_line": {"broker": 2, "contains": ""}}, None, "when.log_line.contains", "non-empty"),
        ({"log_line": {"broker": 9, "contains": "x"}}, None, "when.log_line.broker", "no broker 9"),
        ({"in_isr": {}, "registered": {}}, None, "when", "one key"),
        ([], None, "when", "an empty list"),
        (
            [IN_ISR, {"isr_below": {"topic": "t", "partition": 0, "size": 0}}],
            None,
            "when[1].isr_below.size",
            "must be >= 1",
        ),
        (IN_ISR, 0, "timeout", "more than 0"),
        (IN_ISR, "10s", "timeout", "a number of seconds"),
        (
            {"in_isr": {"broker": 9, "topic": "t", "partition": 0}},
            None,
            "when.in_isr.broker",
            "no broker 9",
        ),
        (
            {"in_isr": {"broker": 2, "topic": "u", "partition": 0}},
            None,
            "when.in_isr.topic",
            "unknown topic 'u'",
        ),
        (
            {"in_isr": {"broker": 2, "topic": "t", "partition": 3}},
            None,
            "when.in_isr.partition",
            "has 3 partitions, no 3",
        ),
        (
            {"isr_below": {"topic": "t", "partition": 0, "size": 4}},
            None,
            "when.isr_below.size",
            "would hold at once",
        ),
    ],
)
def test_malformed_triggers_name_the_field(
    when: Any, timeout: Any, field: str, message: str
) -> None:
    context = TriggerContext(topics={"t": (3, 3)}, brokers={1, 2, 3})
    with pytest.raises(ConfigError) as err:
        parse_trigger(when, timeout, context=context)
    assert err.value.field == field and message in err.value.detail


def test_build_nemesis_rejects_a_broker_the_cluster_lacks(tmp_path: Path) -> None:
    when = {"registered": {"broker": 4}}
    with pytest.raises(ConfigError, match=r"nemesis.faults\[0\].when.registered.broker: no"):
        build_nemesis(FakeCluster(3, tmp_path), step(when), FakeSink(), protect=False)
    with pytest.raises(ConfigError, match=r"faults\[0\].timeout: timeout needs a `when`"):
        from_spec({"faults": [{"at": 1, "fault": "pause", "timeout": 3}]})


SCENARIO = """\
name: trig
description: A step that starts when broker 2 is back in the ISR of a partition.
cluster:
  brokers: 3
topics:
  - name: t
    partitions: 2
    replication_factor: 3
workload:
  duration: 60s
nemesis:
  steps:
    - fault: pause
      at: 5s
      for: 5s
      target: broker-2
    - fault: kill
      at: 6s
      for: 3s
      target: leader:t:0
      when:
        in_isr:
          broker: 2
          topic: {topic}
          partition: {partition}
      timeout: 40s
"""


@pytest.mark.parametrize(
    ("topic", "partition", "line", "field", "message"),
    [
        ("missing", 0, 24, "nemesis.steps.1.when.in_isr.topic", "unknown topic 'missing'"),
        ("t", 2, 25, "nemesis.steps.1.when.in_isr.partition", "has 2 partitions, no 2"),
        ("t", "zero", 25, "nemesis.steps.1.when.in_isr.partition", "must be an integer"),
    ],
)
def test_scenario_triggers_are_rejected_with_file_line_and_field(
    topic: str, partition: Any, line: int, field: str, message: str
) -> None:
    text = SCENARIO.format(topic=topic, partition=partition)
    with pytest.raises(ConfigError) as err:
        load_scenario("trig.yaml", text=text)
    e = err.value
    assert (e.file, e.line, e.field) == ("trig.yaml", line, field)
    assert message in e.detail


def test_scenario_trigger_reaches_the_schedule() -> None:
    sc = load_scenario("trig.yaml", text=SCENARIO.format(topic="t", partition=1))
    assert sc.plan is not None and sc.plan.schedule is not None
    schedule = sc.plan.schedule
    triggered = [f for f in schedule.faults if f.trigger is not None]
    assert len(triggered) == 1 and triggered[0].trigger is not None
    assert triggered[0].trigger.timeout == 40.0
    assert triggered[0].trigger.condition_spec() == {
        "in_isr": {"broker": 2, "topic": "t", "partition": 1}
    }


def test_wait_for_honours_cancel_quickly(tmp_path: Path) -> None:
    cluster = FakeCluster(3, tmp_path)
    cluster.isr[("t", 0)] = [1, 3]
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    # woken by the cancel, not by the timeout: an hour, so that waiting it out would fail
    # the test by pytest-timeout; and a timeout would raise TriggerTimeout instead
    with pytest.raises(TriggerCancelled, match="stopped while waiting"):
        wait_for(
            parse_trigger(IN_ISR, 3600),
            HandleState(cluster),
            clock_ns=time.monotonic_ns,
            cancel=cancel,
        )


def test_log_follower_finds_a_registration_buried_under_many_lines() -> None:
    log: list[str] = [f"[t{i}] INFO startup line {i}" for i in range(2000)]
    log.insert(10, "INFO Successfully registered broker 2 with broker epoch 7")
    reads: list[int] = []

    def tail(n: int) -> str:
        reads.append(n)
        return "\n".join(log[-n:])

    follower = LogFollower(tail, lines=100)
    assert len(follower.new_lines()) == 100 and reads == [100]  # first read: the tail only
    assert follower.new_lines() == []  # nothing new
    # a restart: the registration line, then 1000 more lines, all before the next read
    log.append("INFO Successfully registered broker 2 with broker epoch 96")
    log.extend(f"[r{i}] INFO loading partition {i}" for i in range(1000))
    reads.clear()
    fresh = follower.new_lines()
    assert reads == [100, 200, 400, 800, 1600]  # doubled until the previous end was in view
    assert len(fresh) == 1001 and follower.gaps == 0
    assert last_registration("\n".join(fresh), 2) == 96


def test_registered_through_the_log_of_a_busy_broker(tmp_path: Path) -> None:
    class LogCluster(FakeCluster):
        lines: list[str] = [f"[{i}] INFO x" for i in range(50)]
        epoch_reads = 0  # observations of the broker epoch so far
        read_when_registered = -1  # the observation during which the line was written

        def logs(self, node: Any, tail: int = 50, *, last_start: bool = False) -> str:
            self.lines.extend(f"[b{len(self.lines)}-{i}] INFO busy" for i in range(700))
            if len(self.lines) > 3000 and self.read_when_registered < 0:
                self.lines.append("Successfully registered broker 2 with broker epoch 99")
                self.lines.extend(f"[a{i}] INFO after" for i in range(900))
                self.read_when_registered = self.epoch_reads
            return "\n".join(self.lines[-tail:])

        def broker_epoch(self, broker: int) -> int | None:  # the real Cluster's log path
            self.epoch_reads += 1
            return reader.epoch(broker)

    cluster = LogCluster(3, tmp_path)
    reader = EpochReader(lambda broker, tail: cluster.logs(cluster.node(broker), tail))
    held = wait_for(
        parse_trigger({"registered": {"broker": 2}}, 60),
        HandleState(cluster),
        clock_ns=time.monotonic_ns,
    )
    # held by the very observation during whose reads the line was written, under 900
    # newer lines (a follower that lost it would never hold: TriggerTimeout)
    assert held.held_at > 0
    assert cluster.read_when_registered > 1  # not the baseline's read
    assert cluster.epoch_reads == cluster.read_when_registered


EXITING = "ERROR Exiting Kafka due to fatal exception during startup. (kafka.Kafka$)"


def test_log_line_holds_on_a_line_written_after_watching_began(tmp_path: Path) -> None:
    class LogCluster(FakeCluster):
        reads = 0

        def logs(self, node: Any, tail: int = 50, *, last_start: bool = False) -> str:
            assert node.node_id == 3
            self.reads += 1
            if self.reads == 4:  # the broker's second failed start, after two misses
                self.log_text[3] += f"[2] {EXITING}\n[2] INFO after\n"
            else:
                self.log_text[3] += f"[r{self.reads}] INFO busy\n"
            return super().logs(node, tail, last_start=last_start)

    cluster = LogCluster(3, tmp_path)
    # an earlier start had failed the same way: already in the log, so not a match
    cluster.log_text[3] = f"[1] INFO start\n[1] {EXITING}\n"
    trigger = parse_trigger({"log_line": {"broker": 3, "contains": "Exiting Kafka due to"}}, 5)
    assert trigger.describe() == "broker 3 logging a line containing 'Exiting Kafka due to'"
    held = wait_for(trigger, HandleState(cluster), clock_ns=time.monotonic_ns)
    assert cluster.reads == 4 and held.held_at > 0


def test_log_line_that_never_comes_times_out_naming_the_text(tmp_path: Path) -> None:
    cluster = FakeCluster(3, tmp_path)
    cluster.log_text[3] = f"[1] {EXITING}\n"
    trigger = parse_trigger({"log_line": {"broker": 3, "contains": "Exiting Kafka"}}, 0.4)
    with pytest.raises(TriggerTimeout, match="no line containing 'Exiting Kafka' since watching"):
        wait_for(trigger, HandleState(cluster), clock_ns=time.monotonic_ns)


def test_on_timeout_start_runs_the_fault_anyway(tmp_path: Path) -> None:
    cluster = FakeCluster(3, tmp_path)
    sink = FakeSink()
    cluster.isr[("t", 0)] = [1, 3]
    spec = step(IN_ISR, timeout=0.4, on_timeout="start")
    nemesis = build_nemesis(cluster, spec, sink, protect=False)
    nemesis.run()
    lines = fault_lines(sink)
    assert set(lines) == {"start", "stop"}
    trigger = lines["start"]["trigger"]
    assert trigger["timed_out"] is True and "held_at" not in trigger
    assert trigger["last_observed"] == "ISR of t-0 = [1, 3]"
    assert cluster.names("pause") == [("pause", "broker-3")]
    assert nemesis.errors() == []
    assert from_spec(spec).to_list()[0]["on_timeout"] == "start"


@pytest.mark.parametrize(
    ("entry", "field", "message"),
    [
        ({"on_timeout": "start"}, "nemesis.faults[0].on_timeout", "needs a `when`"),
        ({"when": IN_ISR, "on_timeout": "go"}, "nemesis.faults[0].on_timeout", "skip, start"),
    ],
)
def test_on_timeout_is_checked(entry: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        from_spec({"faults": [{"at": 1, "fault": "pause", **entry}]})
    assert err.value.field == field and message in err.value.detail


def test_scenario_on_timeout_is_checked() -> None:
    text = SCENARIO.format(topic="t", partition=0).replace(
        "      timeout: 40s\n", "      timeout: 40s\n      on_timeout: later\n"
    )
    with pytest.raises(ConfigError) as err:
        load_scenario("trig.yaml", text=text)
    assert err.value.field == "nemesis.steps.1.on_timeout" and err.value.line == 27


REWRITTEN = {"checkpoint_rewritten": {"broker": 2, "topic": "t", "partition": 0}}


def _write_checkpoint(path: Path, text: str) -> None:
    """As Kafka does: a temporary file renamed over the old one (a new inode)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def test_checkpoint_rewritten_needs_a_new_file_in_place(tmp_path: Path) -> None:
    cluster = FakeCluster(3, tmp_path)
    part = cluster.node(2).mount_path / "t-0"
    part.mkdir()
    checkpoint = part / "leader-epoch-checkpoint"
    _write_checkpoint(checkpoint, "0\n1\n0 0\n")
    trigger = parse_trigger(REWRITTEN, 0.5)
    with pytest.raises(TriggerTimeout, match="rewrote the leader-epoch checkpoint of t-0"):
        wait_for(trigger, HandleState(cluster), clock_ns=time.monotonic_ns)  # untouched
    written_ns: list[int] = []

    def rewrite() -> None:
        written_ns.append(time.monotonic_ns())  # just before: any later sight is after
        _write_checkpoint(checkpoint, "0\n1\n0 120\n")

    timer = threading.Timer(0.4, rewrite)
    timer.start()
    trigger = parse_trigger(REWRITTEN, 60)
    held = wait_for(trigger, HandleState(cluster), clock_ns=time.monotonic_ns)
    timer.join()
    # held by an observation after the rewrite (on the same clock), not before it
    assert written_ns and held.held_at >= written_ns[0]


def test_checkpoint_rewritten_holds_when_the_file_first_appears(tmp_path: Path) -> None:
    cluster = FakeCluster(3, tmp_path)
    part = cluster.node(2).mount_path / "t-0"
    part.mkdir()
    timer = threading.Timer(0.3, _write_checkpoint, (part / "leader-epoch-checkpoint", ""))
    timer.start()
    held = wait_for(parse_trigger(REWRITTEN, 5), HandleState(cluster), clock_ns=time.monotonic_ns)
    timer.join()
    assert held.held_at > 0


def test_checkpoint_rewritten_names_a_declared_topic_and_partition() -> None:
    ctx = TriggerContext(topics={"t": (3, 3)}, brokers=(1, 2, 3))
    bad = {"checkpoint_rewritten": {"broker": 2, "topic": "t", "partition": 3}}
    with pytest.raises(ConfigError, match="has 3 partitions, no 3"):
        parse_trigger(bad, 5, context=ctx)
    with pytest.raises(ConfigError, match="missing"):
        parse_trigger({"checkpoint_rewritten": {"broker": 2, "topic": "t"}}, 5, context=ctx)
    assert parse_trigger(REWRITTEN, 5, context=ctx).condition_spec() == REWRITTEN
