"""evidence.faults: each fault family's own effect, seen in what the run kept, and the near
misses that must not count as seen (history format 1.3, "Evidence")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from broker_logs import log_run, stamp
from checker_hist import C, H

from kchaos.faults import registry
from kchaos.harness.checker import check_run
from kchaos.harness.checker.effects import MEASURES
from kchaos.harness.rundir import names

S = 1_000_000_000
MS = 1_000_000


def history(
    fault: str,
    targets: list[str],
    start: float = 10.0,
    stop: float | None = 20.0,
    *,
    params: dict[str, Any] | None = None,
    detail: dict[str, Any] | None = None,
    stop_detail: dict[str, Any] | None = None,
    error: str | None = None,
    end: float = 40.0,
    h: H | None = None,
) -> H:
    """One send, one fault ``f-1`` from ``start`` to ``stop`` (seconds), a drain at ``end``."""
    h = h or H()
    if not h.events:
        h.send("a", 0, 0)
    h.wait_until(int(start * S))
    h.fault("start", "f-1", fault, targets, detail, params, error)
    if stop is not None:
        h.wait_until(max(int(stop * S), h.now()))
        h.fault("stop", "f-1", fault, targets, stop_detail)
    h.wait_until(max(int(end * S), h.now()))
    h.drain_all(0, ["a"])
    return h


def evidence(
    tmp_path: Path, h: H, c: C | None = None, logs: dict[int, list[str]] | None = None
) -> dict[str, Any]:
    """Check the run directory and return fault f-1's entry of evidence.faults (as read
    back from results.json)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    if logs is not None:
        log_run(tmp_path, logs)
    if c is not None:
        c.write(tmp_path / names.CONTROLLER_JSONL)
    h.write(tmp_path / names.HISTORY_JSONL)
    check_run(tmp_path)
    written = orjson.loads((tmp_path / names.RESULTS_JSON).read_bytes())
    found = {f["name"]: f for f in written["evidence"]["faults"]}
    return found["f-1"]


def registered(c: C, *brokers: int) -> None:
    for b in brokers:
        c.broker(0, b, 10 + b)


def test_every_fault_family_has_a_measure() -> None:
    assert set(MEASURES) == set(registry())


# -- crashes ------------------------------------------------------------------------------
def test_a_kill_is_seen_as_a_new_broker_epoch(tmp_path: Path) -> None:
    c = C()
    registered(c, 1, 2, 3)
    c.broker(19 * S, 2, 12, fenced=True)
    c.broker(21 * S, 2, 400)  # restarted at the stop: a new registration
    e = evidence(tmp_path, history("kill", ["broker-2"]), c)
    assert (e["effect"], e["started"], e["family"]) == ("seen", True, "kill")
    assert e["targets"] == ["broker-2"]
    assert "epoch 400" in e["observed"] and "epoch 12 before" in e["observed"]


@pytest.mark.parametrize("fault", ["kill", "term", "hard-reboot", "power-loss"])
def test_a_kill_with_no_new_epoch_is_not_seen(tmp_path: Path, fault: str) -> None:
    # every crash family: a crash whose broker came back as the same incarnation (or was
    # never brought down) is not seen; a real broker can only show them seen
    c = C()
    registered(c, 1, 2, 3)
    c.broker(19 * S, 2, 12, fenced=True)  # fenced, but the same incarnation came back
    c.broker(21 * S, 2, 12)
    c.broker(21 * S, 3, 900)  # another broker's new epoch is no effect of this crash
    e = evidence(tmp_path, history(fault, ["broker-2"]), c)
    assert (e["family"], e["effect"]) == (fault, "not-seen")
    assert "broker 2 did not register again" in e["observed"]


def test_a_new_epoch_before_the_kill_does_not_count(tmp_path: Path) -> None:
    c = C()
    registered(c, 1, 2, 3)
    c.broker(5 * S, 2, 300)  # an earlier restart
    e = evidence(tmp_path, history("kill", ["broker-2"]), c)
    assert e["effect"] == "not-seen"


def test_a_crash_without_the_controllers_record_is_not_measured(tmp_path: Path) -> None:
    e = evidence(tmp_path, history("hard-reboot", ["broker-2"]))
    assert e["effect"] == "not-measured"
    assert names.CONTROLLER_JSONL in e["observed"]


def test_a_crash_of_a_controller_only_node_is_not_measured(tmp_path: Path) -> None:
    c = C()
    registered(c, 1, 2, 3)
    e = evidence(tmp_path, history("kill", ["controller-101"]), c)
    assert e["effect"] == "not-measured"


def test_a_crash_of_a_controller_only_node_is_seen_as_its_raft_state_initialised_anew(
    tmp_path: Path,
) -> None:
    def started(at: float) -> str:
        return (
            f"{stamp(int(at * S))} INFO [RaftManager id=101] Completed transition to"
            " Unattached(epoch=4, voters=[101, 102, 103], electionTimeoutMs=1375) from null"
            " (org.apache.kafka.raft.QuorumState)"
        )

    def run(path: Path, lines: list[str]) -> dict[str, Any]:
        controller_logs(path, {101: lines})
        c = C()
        registered(c, 1, 2, 3)
        return evidence(path, history("kill", ["controller-101"]), c)

    e = run(tmp_path / "a", [started(1.0), raft(5.0, 101, "Leader", 1), started(21.0)])
    assert e["effect"] == "seen" and "controller 101 started again at 21.0 s" in e["observed"]
    # only its first start, and a later transition that is no start: not seen
    e = run(tmp_path / "b", [started(1.0), raft(15.0, 101, "FollowerState", 2)])
    assert e["effect"] == "not-seen" and "did not start again" in e["observed"]

    # a power loss of every node measures the controller beside the brokers
    def power_loss(path: Path, lines: list[str], broker_back: bool) -> dict[str, Any]:
        controller_logs(path, {101: lines})
        c = C()
        registered(c, 1, 2)
        c.broker(25 * S, 1, 500)
        if broker_back:
            c.broker(25 * S, 2, 501)
        return evidence(path, history("power-loss", ["broker-1", "broker-2", "controller-101"]), c)

    e = power_loss(tmp_path / "c", [started(1.0), started(24.0)], broker_back=True)
    assert e["effect"] == "seen", e
    assert "controller 101 started again at 24.0 s" in e["observed"]
    assert "not measurable" not in e["observed"]
    e = power_loss(tmp_path / "d", [started(1.0)], broker_back=True)
    assert e["effect"] == "not-seen" and "controller 101 did not start again" in e["observed"]
    e = power_loss(tmp_path / "e", [started(1.0), started(24.0)], broker_back=False)
    assert e["effect"] == "not-seen" and "broker 2 did not register again" in e["observed"]


def test_term_tells_its_exit_codes_and_power_loss_needs_every_broker(tmp_path: Path) -> None:
    c = C()
    registered(c, 1, 2)
    c.broker(25 * S, 2, 500)
    e = evidence(
        tmp_path, history("term", ["broker-2"], detail={"exit_codes": {"broker-2": 143}}), c
    )
    assert e["effect"] == "seen" and "broker-2: 143" in e["observed"]

    c = C()
    registered(c, 1, 2)
    c.broker(25 * S, 2, 500)  # broker 1 never came back
    e = evidence(tmp_path / "b", history("power-loss", ["broker-1", "broker-2"]), c)
    assert e["effect"] == "not-seen" and "broker 1 did not register again" in e["observed"]


def test_a_rolling_restart_needs_its_exit_codes_and_new_epochs(tmp_path: Path) -> None:
    codes = {"exit_codes": {"broker-1": 143, "broker-2": 143}}
    c = C()
    registered(c, 1, 2)
    c.broker(12 * S, 1, 600)
    c.broker(16 * S, 2, 700)
    h = history("rolling-restart", ["broker-1", "broker-2"], stop_detail=codes)
    e = evidence(tmp_path, h, c)
    assert e["effect"] == "seen" and "broker-1: 143" in e["observed"]

    c = C()
    registered(c, 1, 2)
    c.broker(12 * S, 1, 600)
    e = evidence(tmp_path / "b", history("rolling-restart", ["broker-1", "broker-2"]), c)
    assert e["effect"] == "not-seen"
    assert "no node's exit code" in e["observed"]

    # exit codes for both, but broker 2 never registered again
    c = C()
    registered(c, 1, 2)
    c.broker(12 * S, 1, 600)
    h = history("rolling-restart", ["broker-1", "broker-2"], stop_detail=codes)
    e = evidence(tmp_path / "c", h, c)
    assert e["effect"] == "not-seen" and "broker 2 did not register again" in e["observed"]


# -- pause and partitions -----------------------------------------------------------------
def test_a_pause_is_seen_as_the_paused_broker_fenced(tmp_path: Path) -> None:
    c = C()
    registered(c, 1, 2, 3)
    c.broker(19 * S, 2, 12, fenced=True)  # its session expired while it was paused
    e = evidence(tmp_path, history("pause", ["broker-2"]), c)
    assert e["effect"] == "seen"
    assert "heartbeat gaps are not kept" in e["observed"] and "broker 2 at 19.0 s" in e["observed"]


def test_a_short_pause_with_no_fencing_and_no_shrink_is_not_seen(tmp_path: Path) -> None:
    c = C()
    registered(c, 1, 2, 3)
    c.part(0, 1, [1, 2, 3])
    c.part(15 * S, 1, [1, 2], epoch=1)  # broker 3, not the paused one, left an ISR
    c.broker(30 * S, 2, 12, fenced=True)  # long after the pause and its settling time
    e = evidence(tmp_path, history("pause", ["broker-2"], 10.0, 12.0), c)
    assert e["effect"] == "not-seen"
    assert "no ISR shrink and no fencing of nodes 2" in e["observed"]


def test_an_isolation_is_seen_as_the_target_leaving_an_isr(tmp_path: Path) -> None:
    c = C()
    registered(c, 1, 2, 3)
    c.part(0, 1, [1, 2, 3])
    c.part(18 * S, 1, [1, 3], epoch=1)
    c.part(30 * S, 1, [1, 2, 3], epoch=2)
    e = evidence(tmp_path, history("isolate", ["broker-2"]), c)
    assert e["effect"] == "seen"
    assert "broker 2 left t-0's ISR at 18.0 s (leader)" in e["observed"]


def test_a_shrink_after_the_partition_settled_is_not_its_effect(tmp_path: Path) -> None:
    c = C()
    registered(c, 1, 2, 3)
    c.part(0, 1, [1, 2, 3])
    c.part(30 * S, 1, [1, 3], epoch=1)  # 10 s after the heal
    e = evidence(tmp_path, history("isolate", ["broker-2"]), c)
    assert e["effect"] == "not-seen"


def test_a_cut_counts_the_nodes_it_names_in_its_detail(tmp_path: Path) -> None:
    # broker 1 cannot reach broker 3: leader 1 drops follower 3, neither of them a
    # member of the targets' list alone
    def run(path: Path, to: list[str]) -> dict[str, Any]:
        c = C()
        registered(c, 1, 2, 3)
        c.part(0, 1, [1, 2, 3])
        c.part(15 * S, 1, [1, 2], epoch=1)
        return evidence(path, history("cut", ["broker-4"], detail={"to": to}), c)

    assert run(tmp_path / "a", ["broker-3"])["effect"] == "seen"
    assert run(tmp_path / "b", ["broker-5"])["effect"] == "not-seen"


def test_a_cut_controller_is_seen_as_a_broker_fenced(tmp_path: Path) -> None:
    def run(path: Path, fenced_at: float) -> dict[str, Any]:
        c = C()
        registered(c, 1, 2, 3)
        c.broker(int(fenced_at * S), 3, 13, fenced=True)
        return evidence(path, history("isolate", ["controller-102"]), c)

    assert run(tmp_path / "a", 17.0)["effect"] == "seen"
    # before the cut: no broker lost its session, and a controller failover is not kept
    missed = run(tmp_path / "b", 5.0)
    assert missed["effect"] == "not-measured" and "failover" in missed["observed"]


STALLED_START = (
    "ERROR [BrokerServer id=3] Received a fatal error while waiting for the controller to"
    " acknowledge that we are caught up (kafka.server.BrokerServer)"
)
NORMAL_START = (
    "INFO [BrokerServer id=3] Waiting for the controller to acknowledge that we are caught up"
    " (kafka.server.BrokerServer)"
)


def test_a_starting_broker_cut_from_the_controllers_is_seen_as_its_start_giving_up(
    tmp_path: Path,
) -> None:
    # KAFKA-15375's start A: broker 3 was down when the cut began, so it was never fenced
    # and left no ISR; its own failed start is the cut's effect
    def run(path: Path, lines: list[str]) -> dict[str, Any]:
        c = C()
        registered(c, 1, 2, 3)
        h = history("cut", ["broker-3"], detail={"to": ["controller-101"]})
        return evidence(path, h, c, logs={3: lines, 1: []})

    e = run(tmp_path / "a", [f"{stamp(13 * S)} {NORMAL_START}", f"{stamp(16 * S)} {STALLED_START}"])
    assert e["effect"] == "seen"
    assert "broker 3's start gave up on the controllers at 16.0 s" in e["observed"]
    # near misses: the normal start's line, and a failed start before the cut
    assert run(tmp_path / "b", [f"{stamp(13 * S)} {NORMAL_START}"])["effect"] != "seen"
    assert run(tmp_path / "c", [f"{stamp(5 * S)} {STALLED_START}"])["effect"] != "seen"


def test_a_failed_start_of_a_broker_the_cut_did_not_separate_is_not_its_effect(
    tmp_path: Path,
) -> None:
    c = C()
    registered(c, 1, 2, 3)
    h = history("cut", ["broker-2"], detail={"to": ["controller-101"]})
    e = evidence(tmp_path, h, c, logs={3: [f"{stamp(16 * S)} {STALLED_START}"], 2: []})
    assert e["effect"] != "seen"


def test_a_split_is_seen_in_the_leaders_log_without_the_controllers_record(
    tmp_path: Path,
) -> None:
    line = (
        f"{stamp(15 * S)} INFO [Partition t-0 broker=1] Shrinking ISR from 1,2,3 to 1,3."
        " Leader: (highWatermark: 5, endOffset: 9). Out of sync replicas: (brokerId: 2,"
        " endOffset: 5, lastCaughtUpTimeMs: 1795000005000). (kafka.cluster.Partition)"
    )
    h = history("split", ["broker-2"], detail={"sides": [["broker-2"], ["broker-1", "broker-3"]]})
    e = evidence(tmp_path, h, logs={1: [line]})
    assert e["effect"] == "seen" and "'Shrinking ISR' line" in e["observed"]

    h = history("split", ["broker-2"], detail={"sides": [["broker-2"], ["broker-1", "broker-3"]]})
    e = evidence(tmp_path / "b", h, logs={1: [f"{stamp(15 * S)} INFO nothing to see"]})
    assert e["effect"] == "not-seen"


def controller_logs(path: Path, lines: dict[int, list[str]]) -> None:
    """Controllers' server.log files (with run.json's time origin) in ``path``."""
    log_run(path, lines, container="kchaos-test-controller-{}")


def raft(at: float, node: int, state: str, epoch: int) -> str:
    """A 3.x QuorumState line: ``node`` completed its transition to ``state``."""
    fields = f"localId={node}, epoch={epoch}" if state != "FollowerState" else f"epoch={epoch}"
    return (
        f"{stamp(int(at * S))} INFO [RaftManager id={node}] Completed transition to"
        f" {state}({fields}, epochStartOffset=67) from FollowerState(fetchTimeoutMs=2000,"
        f" epoch={epoch - 1}, leaderId={node}) (org.apache.kafka.raft.QuorumState)"
    )


def test_a_cut_among_controllers_is_seen_as_the_quorum_failing_over(tmp_path: Path) -> None:
    # the active controller 101 cut from 102 and 103 at 10 s: 102 wins an election
    def run(path: Path, lines: dict[int, list[str]]) -> dict[str, Any]:
        controller_logs(path, lines)
        c = C()
        registered(c, 1, 2, 3)
        h = history("cut", ["controller-101"], detail={"to": ["controller-102", "controller-103"]})
        return evidence(path, h, c)

    won = [raft(12.5, 102, "CandidateState", 2), raft(12.6, 102, "Leader", 2)]
    e = run(tmp_path / "a", {101: [raft(1.0, 101, "Leader", 1)], 102: won})
    assert e["effect"] == "seen" and "node 102 at 12.6 s (epoch 2)" in e["observed"]
    # only the cut leader resigning: it lost the quorum, seen too
    e = run(tmp_path / "b", {101: [raft(13.0, 101, "ResignedState", 1)]})
    assert e["effect"] == "seen" and "node 101 Resigned" in e["observed"]
    # near misses: the start-up election, an observer broker following, a leader elected
    # after the settle window
    e = run(
        tmp_path / "c",
        {
            101: [raft(1.0, 101, "Leader", 1)],
            1: [raft(14.0, 1, "FollowerState", 2)],
            103: [raft(26.0, 103, "Leader", 2)],
        },
    )
    assert e["effect"] == "not-seen" and "no quorum leader elected" in e["observed"]


def test_an_election_the_cut_did_not_make_does_not_count(tmp_path: Path) -> None:
    # followers 102 and 103 cut from each other; the leader 101, on neither side, is
    # elected again in the window (another cause): not the cut's effect
    lines = {101: [raft(1.0, 101, "Leader", 1), raft(12.6, 101, "Leader", 2)]}
    controller_logs(tmp_path, lines)
    c = C()
    registered(c, 1, 2, 3)
    h = history("cut", ["controller-102"], detail={"to": ["controller-103"]})
    e = evidence(tmp_path, h, c)
    assert e["effect"] == "not-seen" and "no quorum leader elected" in e["observed"], e


def test_a_cut_of_a_broker_from_the_controllers_ignores_elections_among_them(
    tmp_path: Path,
) -> None:
    # broker 3 cut from controller 102: controller 101 standing for election is not a
    # node the cut separated
    controller_logs(tmp_path, {101: [raft(12.0, 101, "CandidateState", 2)]})
    h = history("cut", ["broker-3"], detail={"to": ["controller-102"]})
    e = evidence(tmp_path, h, C())
    assert e["effect"] == "not-seen", e


def test_a_partition_with_nothing_to_read_is_not_measured(tmp_path: Path) -> None:
    e = evidence(tmp_path, history("bridge", ["broker-2"]))
    assert e["effect"] == "not-measured"


# -- hold-controller-requests -------------------------------------------------------------
def test_a_hold_is_seen_as_the_connections_it_held(tmp_path: Path) -> None:
    held = {"held_connections": {"broker-2": [40001, 40007]}, "kept_local_ports": {}}
    e = evidence(tmp_path, history("hold-controller-requests", ["broker-2"], detail=held))
    assert e["effect"] == "seen" and "2 connection(s) held" in e["observed"]

    idle = {"held_connections": {"broker-2": []}}
    e = evidence(tmp_path / "b", history("hold-controller-requests", ["broker-2"], detail=idle))
    assert e["effect"] == "not-seen"

    e = evidence(tmp_path / "c", history("hold-controller-requests", ["broker-2"]))
    assert e["effect"] == "not-measured"


def test_a_hold_is_seen_as_the_packets_its_rules_dropped(tmp_path: Path) -> None:
    # every connection known at the start was busy (none idle), but the channel opened
    # later was held: the rules' counters, read at the stop, are what counts (CI, 3.4.1)
    busy = {"held_connections": {"broker-1": []}}
    e = evidence(
        tmp_path,
        history(
            "hold-controller-requests",
            ["broker-1"],
            detail=busy,
            stop_detail={"held_packets": {"broker-1": 14}},
        ),
    )
    assert e["effect"] == "seen" and "14 packet(s) to the controller held" in e["observed"]

    # idle connections at the start, yet nothing was sent on them: the near miss
    idle = {"held_connections": {"broker-1": [40001]}}
    e = evidence(
        tmp_path / "b",
        history(
            "hold-controller-requests",
            ["broker-1"],
            detail=idle,
            stop_detail={"held_packets": {"broker-1": 0}},
        ),
    )
    assert e["effect"] == "not-seen" and "nothing to the controller that was held" in e["observed"]

    # one target counted, the other's node was down at the stop: the count and the
    # fallback are summed (a count of 0 on either would be not-seen)
    two = {"held_connections": {"broker-1": [], "broker-2": [40009]}}
    e = evidence(
        tmp_path / "c",
        history(
            "hold-controller-requests",
            ["broker-1", "broker-2"],
            detail=two,
            stop_detail={"held_packets": {"broker-1": 3}},
        ),
    )
    assert e["effect"] == "seen", e


# -- leadership ---------------------------------------------------------------------------
def test_a_preferred_election_is_seen_as_leaders_moving_to_the_first_replica(
    tmp_path: Path,
) -> None:
    def run(path: Path, new_leader: int | None) -> dict[str, Any]:
        c = C()
        registered(c, 1, 2, 3)
        c.part(0, 2, [1, 2, 3])
        if new_leader is not None:
            # committed inside the fault's start, just before its start line
            c.part(9_900 * MS, new_leader, [1, 2, 3], epoch=1)
        detail = {"election": {"t/0": "elected"}}
        return evidence(path, history("preferred-election", [], 10.0, 10.1, detail=detail), c)

    e = run(tmp_path / "a", 1)
    assert e["effect"] == "seen" and "t-0 2->1" in e["observed"]
    assert run(tmp_path / "b", None)["effect"] == "not-seen"
    assert run(tmp_path / "c", 3)["effect"] == "not-seen"  # not the preferred replica


def test_a_reassignment_is_seen_as_new_replicas_and_a_new_leader(tmp_path: Path) -> None:
    def run(path: Path, leader_after: int) -> dict[str, Any]:
        c = C()
        registered(c, 1, 2, 3)
        c.part(0, 1, [1, 2, 3])
        c.part(8 * S, leader_after, [1, 2, 3], epoch=1, replicas=[2, 3, 1])
        h = history(
            "reassign",
            [],
            10.0,
            10.1,
            params={"topic": "t"},
            detail={"assignment": {"0": [2, 3, 1]}},
        )
        return evidence(path, h, c)

    e = run(tmp_path / "a", 2)
    assert e["effect"] == "seen" and "leader 1->2" in e["observed"]
    assert run(tmp_path / "b", 1)["effect"] == "not-seen"  # replicas moved, leader did not


# -- disk-full ----------------------------------------------------------------------------
ENOSPC = [
    "ERROR Error while appending records to t-0 in dir /var/lib/kafka/data"
    " (org.apache.kafka.storage.internals.log.LogDirFailureChannel)",
    "java.io.IOException: No space left on device",
]


def test_a_full_disk_is_seen_as_enospc_in_the_brokers_log(tmp_path: Path) -> None:
    # the exception's text is on a continuation line: it takes its entry's time
    lines = [f"{stamp(12 * S)} {ENOSPC[0]}", ENOSPC[1]]
    stop = {"restarted": ["broker-2"]}
    h = history("disk-full", ["broker-2"], stop_detail=stop)
    e = evidence(tmp_path, h, logs={2: lines})
    assert e["effect"] == "seen"
    assert "No space left on device' 1 time(s), first at 12.0 s" in e["observed"]
    assert "restarted: broker-2" in e["observed"]


def test_enospc_outside_the_fault_or_on_another_broker_is_not_seen(tmp_path: Path) -> None:
    before = [f"{stamp(3 * S)} {ENOSPC[0]}", ENOSPC[1]]
    during_elsewhere = [f"{stamp(12 * S)} {ENOSPC[0]}", ENOSPC[1]]
    h = history("disk-full", ["broker-2"])
    e = evidence(tmp_path, h, logs={2: before, 3: during_elsewhere})
    assert e["effect"] == "not-seen"


def test_a_full_disk_without_the_brokers_logs_is_not_measured(tmp_path: Path) -> None:
    e = evidence(tmp_path, history("disk-full", ["broker-2"]))
    assert e["effect"] == "not-measured"


# -- latency ------------------------------------------------------------------------------
def latency_history(
    during_ms: float,
    latency_ms: int,
    link: str = "client",
    *,
    fault: str = "latency",
    params: dict[str, Any] | None = None,
) -> H:
    """Sends to partition 0 every 0.5 s: from 3 s on acknowledged after 5 ms, then, inside
    a latency fault (or ``fault`` with ``params``) on broker 1 starting at 10 s, after
    ``during_ms``."""
    h = H()
    values: list[str] = []

    def sends(wait_ms: float) -> None:
        for _ in range(10):
            value = f"v{len(values)}"
            h.invoke(value)
            h.wait(wait_ms / 1000)
            h.ok(value, 0, len(values))
            values.append(value)
            h.wait(0.5)

    if params is None:
        params = {"latency_ms": latency_ms, "link": link}
    h.wait_until(3 * S)
    sends(5.0)
    h.wait_until(10 * S)
    h.fault("start", "f-1", fault, ["broker-1"], params=params)
    sends(during_ms)
    h.fault("stop", "f-1", fault, ["broker-1"])
    h.drain_all(0, values)
    return h


def leaders(c: C, leader: int) -> C:
    registered(c, 1, 2, 3)
    c.part(0, leader, [1, 2, 3])
    return c


def test_latency_is_seen_when_acks_slow_by_half_the_configured_latency(tmp_path: Path) -> None:
    e = evidence(tmp_path, latency_history(300.0, 200), leaders(C(), 1))
    assert e["effect"] == "seen"
    assert "200 ms configured" in e["observed"] and "10 sends" in e["observed"]


def test_a_0_ms_latency_is_not_seen_however_slow_the_acks(tmp_path: Path) -> None:
    e = evidence(tmp_path, latency_history(300.0, 0), leaders(C(), 1))
    assert e["effect"] == "not-seen"


def test_a_latency_whose_acks_barely_slowed_is_not_seen(tmp_path: Path) -> None:
    e = evidence(tmp_path, latency_history(60.0, 200), leaders(C(), 1))
    assert e["effect"] == "not-seen" and "at least 100 ms was needed" in e["observed"]


def test_latency_on_a_broker_that_leads_nothing_sent_to_is_not_seen(tmp_path: Path) -> None:
    e = evidence(tmp_path, latency_history(300.0, 200), leaders(C(), 3))
    assert e["effect"] == "not-seen" and "too few acknowledged" in e["observed"]


def test_latency_on_the_controller_link_is_not_measured(tmp_path: Path) -> None:
    e = evidence(tmp_path, latency_history(300.0, 200, "controller"), leaders(C(), 1))
    assert e["effect"] == "not-measured"


# -- bandwidth ----------------------------------------------------------------------------
def bandwidth_history(during_ms: float, rate_kbps: int, link: str = "client") -> H:
    params = {"rate_kbps": rate_kbps, "link": link}
    return latency_history(during_ms, 0, fault="bandwidth", params=params)


def test_a_rate_limit_is_seen_when_the_acks_wait_in_line(tmp_path: Path) -> None:
    e = evidence(tmp_path, bandwidth_history(40.0, 1), leaders(C(), 1))
    assert e["effect"] == "seen" and "limit 1 KB/s" in e["observed"], e


def test_a_rate_limit_the_link_never_reached_is_not_seen(tmp_path: Path) -> None:
    # near misses: twice as slow but by less than 20 ms; less than twice as slow
    e = evidence(tmp_path, bandwidth_history(12.0, 1), leaders(C(), 1))
    assert e["effect"] == "not-seen" and "twice as slow" in e["observed"], e
    e = evidence(tmp_path / "b", bandwidth_history(9.0, 1), leaders(C(), 1))
    assert e["effect"] == "not-seen", e


def test_a_rate_of_0_is_no_limit_however_slow_the_acks(tmp_path: Path) -> None:
    e = evidence(tmp_path, bandwidth_history(500.0, 0), leaders(C(), 1))
    assert e["effect"] == "not-seen" and "a rate of 0 is no limit" in e["observed"], e


def test_a_rate_limit_elsewhere_is_not_seen_or_not_measured(tmp_path: Path) -> None:
    e = evidence(tmp_path, bandwidth_history(500.0, 1), leaders(C(), 3))
    assert e["effect"] == "not-seen" and "too few acknowledged" in e["observed"], e
    e = evidence(tmp_path / "b", bandwidth_history(500.0, 1, "controller"), leaders(C(), 1))
    assert e["effect"] == "not-measured", e


# -- black holes --------------------------------------------------------------------------
def gap_history(fault: str, stalled: bool, params: dict[str, Any] | None = None) -> H:
    """Sends to partition 0 every 0.5 s from 3 s, acknowledged at once; inside the fault
    (broker 1, 10 s to 20 s) acknowledged only after its stop when ``stalled``."""
    h = H()
    values: list[str] = []
    h.wait_until(3 * S)
    for _ in range(10):
        value = f"v{len(values)}"
        h.send(value, 0, len(values))
        values.append(value)
        h.wait(0.5)
    h.wait_until(10 * S)
    h.fault("start", "f-1", fault, ["broker-1"], params=params)
    held: list[tuple[str, int]] = []
    for _ in range(15):
        value = f"v{len(values)}"
        if stalled:
            h.invoke(value)
            held.append((value, len(values)))
        else:
            h.send(value, 0, len(values))
        values.append(value)
        h.wait(0.6)
    h.wait_until(20 * S)
    h.fault("stop", "f-1", fault, ["broker-1"])
    for value, offset in held:
        h.ok(value, 0, offset)
    h.drain_all(0, values)
    return h


@pytest.mark.parametrize("fault", ["timeout", "client-cut", "reset-peer"])
def test_a_black_hole_is_seen_as_acknowledgements_stopping(tmp_path: Path, fault: str) -> None:
    e = evidence(tmp_path, gap_history(fault, stalled=True), leaders(C(), 1))
    assert e["effect"] == "seen" and "10.0 s of the fault's 10.0 s" in e["observed"]


@pytest.mark.parametrize("fault", ["timeout", "reset-peer"])
def test_acknowledgements_that_kept_flowing_are_not_a_black_hole(
    tmp_path: Path, fault: str
) -> None:
    # e.g. a reset-peer with toxicity 0: no connection was reset
    e = evidence(tmp_path, gap_history(fault, stalled=False), leaders(C(), 1))
    assert e["effect"] == "not-seen" and "15 acknowledged during it" in e["observed"]


def test_a_black_hole_on_a_broker_leading_nothing_is_not_seen(tmp_path: Path) -> None:
    e = evidence(tmp_path, gap_history("client-cut", stalled=True), leaders(C(), 2))
    assert e["effect"] == "not-seen" and "too few acknowledged" in e["observed"]


def test_a_black_hole_on_the_controller_link_is_not_measured(tmp_path: Path) -> None:
    h = gap_history("timeout", stalled=True, params={"link": "controller"})
    assert evidence(tmp_path, h, leaders(C(), 1))["effect"] == "not-measured"


# -- zombie, families not kept, faults that did not start ---------------------------------
def test_a_zombie_is_seen_when_its_replacement_initialised(tmp_path: Path) -> None:
    from txn_hist import TH

    detail = {"process": 4, "transactional_id": "kchaos-t4", "replacement": 5}
    h = TH()
    h.send("a", 0, 0)
    h.init(4, "kchaos-t4")
    h.wait(5)
    h.init(5, "kchaos-t4")
    e = evidence(tmp_path, history("zombie", ["client:txn:kchaos-t4"], detail=detail, h=h))
    assert e["effect"] == "seen" and "process 5 initialised kchaos-t4" in e["observed"]

    h = TH()
    h.send("a", 0, 0)
    h.init(5, "kchaos-t4")  # before the zombie's own init: no fencing of it
    h.init(4, "kchaos-t4")
    e = evidence(tmp_path / "b", history("zombie", ["client:txn:kchaos-t4"], detail=detail, h=h))
    assert e["effect"] == "not-seen"


# -- disk faults: the broker's own flush timer ---------------------------------------------
ORIGIN = 1_790_000_000_000_000_000  # run.json's history_start_unix_ns
TIMER = "kafka_log_logflushstats_logflushrateandtimems"


def flush_metrics(
    tmp_path: Path, by_node: dict[int, list[tuple[float, float, float]]], *, timer: bool = True
) -> None:
    """run.json with a time origin, and broker-metrics.jsonl with each node's flush timer
    scraped at (seconds, 99th percentile ms, max ms); the count goes up by 5 a scrape."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / names.RUN_JSON).write_bytes(
        orjson.dumps({"format": 1, "history_start_unix_ns": ORIGIN})
    )
    lines = []
    for node, samples in by_node.items():
        for i, (at, p99, peak) in enumerate(samples):
            metrics = {"kafka_server_replicamanager_underreplicatedpartitions": 0.0}
            if timer:
                metrics |= {f"{TIMER}_99thpercentile": p99, f"{TIMER}_max": peak}
                metrics[f"{TIMER}_count"] = 5.0 * i
            wall = (ORIGIN + int(at * S)) / 1e9
            lines.append(orjson.dumps({"wall": wall, "node": node, "metrics": metrics}))
    lines.append(b'{"wall": 1790000099.0, "node": 1, "err')  # a torn last line
    (tmp_path / names.BROKER_METRICS_JSONL).write_bytes(b"\n".join(lines))


def steady(ms: float, until: float = 40.0) -> list[tuple[float, float, float]]:
    return [(t, ms, ms) for t in range(0, int(until), 2)]


@pytest.mark.parametrize("fault", ["slow-sync", "disk-stall", "slow-disk"])
def test_a_disk_fault_is_seen_as_the_brokers_slow_flushes(tmp_path: Path, fault: str) -> None:
    # flushes of 3 ms, then one of 16 s timed during the fault (fault from 10 s to 20 s)
    samples = [(t, 3.0, 4.0) for t in range(0, 12, 2)]
    samples += [(t, 16012.0, 16012.0) for t in range(12, 40, 2)]
    flush_metrics(tmp_path, {1: steady(3.0), 2: samples})
    e = evidence(tmp_path, history(fault, ["broker-2"]))
    assert e["effect"] == "seen", e
    assert "broker 2: slowest log flush 16012 ms during the fault" in e["observed"]
    assert "4 ms before it" in e["observed"]


def test_a_flush_frozen_to_the_heal_counts_when_it_ends_just_after(tmp_path: Path) -> None:
    # disk-stall: nothing completes while frozen; the stuck flush is timed at 22 s
    samples = [(t, 3.0, 3.0) for t in range(0, 22, 2)] + [(22.0, 10500.0, 10500.0)]
    flush_metrics(tmp_path, {2: samples})
    assert evidence(tmp_path, history("disk-stall", ["broker-2"]))["effect"] == "seen"


@pytest.mark.parametrize(
    ("before", "during"),
    [
        (3.0, 150.0),  # slower, but a flush of 150 ms is no fault's doing
        (400.0, 1200.0),  # 1.2 s, but the broker already had a 400 ms flush before
    ],
)
def test_near_misses_of_a_disk_fault_are_not_seen(
    tmp_path: Path, before: float, during: float
) -> None:
    samples = [(t, before, before) for t in range(0, 10, 2)]
    samples += [(t, during, during) for t in range(10, 40, 2)]
    flush_metrics(tmp_path, {2: samples})
    e = evidence(tmp_path, history("slow-sync", ["broker-2"]))
    assert e["effect"] == "not-seen", e


def test_another_brokers_slow_flush_is_not_the_targets(tmp_path: Path) -> None:
    slow = steady(3.0, 10) + [(t, 9000.0, 9000.0) for t in range(10, 40, 2)]
    flush_metrics(tmp_path, {1: slow, 2: steady(3.0)})
    e = evidence(tmp_path, history("slow-sync", ["broker-2"]))
    assert e["effect"] == "not-seen" and "broker 2: slowest log flush 3 ms" in e["observed"]


def test_disk_faults_without_flush_times_are_not_measured(tmp_path: Path) -> None:
    # a run with scrapes that lack the timer (an image before its exporter rule)
    flush_metrics(tmp_path / "a", {2: steady(9000.0)}, timer=False)
    e = evidence(tmp_path / "a", history("slow-sync", ["broker-2"]))
    assert e["effect"] == "not-measured" and "has no flush timer" in e["observed"]
    # no broker-metrics.jsonl at all
    e = evidence(tmp_path / "b", history("disk-stall", ["broker-2"]))
    assert e["effect"] == "not-measured" and "flush times unknown" in e["observed"]
    # the broker's scrapes stop before the fault
    flush_metrics(tmp_path / "c", {2: steady(3.0, 8)})
    e = evidence(tmp_path / "c", history("slow-disk", ["broker-2"]))
    assert e["effect"] == "not-measured" and "no flush timer scraped" in e["observed"]


# -- disk-stall, slow-disk: the writes block, not the fsyncs ------------------------------
def freeze_history(fault: str, before_ms: float, during_ms: float) -> H:
    """Sends to partition 0 every 0.5 s: from 2 s on (eight) acknowledged after
    ``before_ms``, then (ten) inside ``fault`` on broker 2 from 10 s, after ``during_ms``."""
    params = {"freeze_ms": 1500, "thaw_ms": 100} if fault == "slow-disk" else {}
    h = H()
    values: list[str] = []
    h.wait_until(2 * S)
    for count, wait_ms, at in ((8, before_ms, None), (10, during_ms, 10 * S)):
        if at is not None:
            h.wait_until(at)
            h.fault("start", "f-1", fault, ["broker-2"], params=params)
        for _ in range(count):
            value = f"v{len(values)}"
            h.invoke(value)
            h.wait(wait_ms / 1000)
            h.ok(value, 0, len(values))
            values.append(value)
            h.wait(0.5)
    h.fault("stop", "f-1", fault, ["broker-2"])
    h.drain_all(0, values)
    return h


@pytest.mark.parametrize("fault", ["disk-stall", "slow-disk"])
def test_a_freeze_is_seen_as_the_acks_waiting_though_every_flush_stayed_fast(
    tmp_path: Path, fault: str
) -> None:
    # the real broker's case (2026-12-07, 4.4.0): broker 2, a follower in the ISR, frozen;
    # its slowest flush 93 ms before and during the fault, the acks 170 ms -> 1,214 ms
    flush_metrics(tmp_path, {2: steady(93.0)})
    e = evidence(tmp_path, freeze_history(fault, 170.0, 1214.0), leaders(C(), 1))
    assert e["effect"] == "seen", e
    assert "broker(s) 2 replicated 1215.0 ms during the fault (10 sends)" in e["observed"]
    assert "171.0 ms before (8)" in e["observed"]  # H adds 1 ms a line
    assert "slowest log flush 93 ms" in e["observed"]


@pytest.mark.parametrize(
    ("before_ms", "during_ms", "isr"),
    [
        (170.0, 360.0, [1, 2, 3]),  # twice as slow, but 190 ms slower: a loose freeze
        (300.0, 590.0, [1, 2, 3]),  # 290 ms slower, but not twice as slow
        (170.0, 2000.0, [1, 3]),  # slow acks, but broker 2 was out of the ISR
    ],
)
def test_near_misses_of_a_freeze_are_not_seen(
    tmp_path: Path, before_ms: float, during_ms: float, isr: list[int]
) -> None:
    flush_metrics(tmp_path, {2: steady(3.0)})
    c = C()
    registered(c, 1, 2, 3)
    c.part(0, 1, isr, replicas=[1, 2, 3])
    e = evidence(tmp_path, freeze_history("disk-stall", before_ms, during_ms), c)
    assert e["effect"] == "not-seen", e
    if 2 in isr:
        assert "at least twice as slow and 200 ms slower" in e["observed"], e
    else:
        assert "too few acknowledged sends to partitions broker(s) 2" in e["observed"], e


def test_a_freeze_too_short_for_a_send_is_judged_by_the_flushes(tmp_path: Path) -> None:
    # a 50 ms disk-stall: no send invoked inside it; the flushes stayed fast
    flush_metrics(tmp_path, {2: steady(48.0)})
    c = C()
    registered(c, 1, 2, 3)
    e = evidence(tmp_path, history("disk-stall", ["broker-2"], 10.0, 10.05), leaders(c, 1))
    assert e["effect"] == "not-seen", e
    assert "too few acknowledged" in e["observed"] and "slowest log flush 48 ms" in e["observed"]


def test_a_slow_close_is_not_measured(tmp_path: Path) -> None:
    fault = "slow-close"
    c = C()
    registered(c, 1, 2, 3)
    c.broker(15 * S, 2, 12, fenced=True)  # whatever else happened, never "seen"
    e = evidence(tmp_path, history(fault, ["broker-2"]), c)
    assert e["effect"] == "not-measured" and e["observed"]


def test_a_fault_that_did_not_start_is_not_seen(tmp_path: Path) -> None:
    c = C()
    registered(c, 1, 2, 3)
    c.broker(21 * S, 2, 400)
    e = evidence(tmp_path, history("kill", ["broker-2"], 10.0, 10.0, error="no such node"), c)
    assert (e["started"], e["effect"]) == (False, "not-seen")
    assert "no such node" in e["observed"]


def test_the_final_heal_is_no_fault(tmp_path: Path) -> None:
    h = history("kill", ["broker-2"], end=30.0)
    h.fault("start", "heal", "heal", ["broker-1"])
    h.fault("stop", "heal", "heal", ["broker-1"])
    h.write(tmp_path / names.HISTORY_JSONL)
    results = check_run(tmp_path, write=False)
    assert [f["name"] for f in results.evidence["faults"]] == ["f-1"]


# -- real runs ----------------------------------------------------------------------------
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(
    ("run", "effects"),
    [
        # kip-501 busy leader on 4.4.0: the kill's broker registered again
        ("busy-440-b", {"f-1": "seen"}),
        # KAFKA-15489 on 3.6.2: the cut active controller's successor fenced two brokers
        ("k15489-362", {"f-1": "seen"}),
        # 3.7.0, a run from before the nodes' logs were kept: the controller failed over,
        # which no record that run kept shows
        ("k15489-370", {"f-1": "not-measured"}),
        # 3.7.0 with the controllers' logs: controller 102 won the quorum after the cut
        ("k15489-370-quorum", {"f-1": "seen"}),
        # KAFKA-15375: no controller.jsonl (epochs unknown), no fsync times; the cut of the
        # starting broker from the controller removed no one from an ISR, but start A's
        # own "fatal error while waiting for the controller" line shows it bit
        (
            "k15375-351",
            {
                "f-1": "not-measured",
                "f-2": "not-measured",
                "f-3": "seen",
                "f-4": "not-measured",
            },
        ),
    ],
)
def test_real_runs(run: str, effects: dict[str, str]) -> None:
    results = check_run(FIXTURES / run, write=False)
    assert {f["name"]: f["effect"] for f in results.evidence["faults"]} == effects


def test_kchaos_check_prints_each_faults_effect() -> None:
    from kchaos.cli.check import summary_lines

    lines = summary_lines(check_run(FIXTURES / "busy-440-b", write=False))
    told = [line for line in lines if line.startswith("  fault ")]
    assert told == [told[0]] and told[0].startswith("  fault f-1 (kill): seen - broker 1")
