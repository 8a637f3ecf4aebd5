"""KRaft's raft state lines as the quorum reader (`checker/quorumlog.py`) parses them: the
3.x and 4.x spellings of a leader, the pre-vote state of 4.x, a node's first line after it
started, and lines that are none of these."""

from __future__ import annotations

import pytest

from kchaos.harness.checker.quorumlog import parse_transition

T = "[2026-12-07 03:34:14,874] INFO [RaftManager id=102] Completed transition to "
LOGGER = " (org.apache.kafka.raft.QuorumState)"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # 3.7.0, as a real run logged it
        (
            T + "Leader(localId=102, epoch=3, epochStartOffset=67, highWatermark=Optional.empty,"
            " voterStates={101=ReplicaState(nodeId=101, endOffset=Optional.empty)}) from"
            " CandidateState(localId=102, epoch=3, retries=2)" + LOGGER,
            ("Leader", 3, False),
        ),
        # 4.x: the leader names its voter node, whose own fields come before the epoch
        (
            T + "Leader(localVoterNode=VoterNode(voterKey=ReplicaKey(id=102, directoryId=abc),"
            " listeners=Endpoints(endpoints={ListenerName(CONTROLLER)=kc-102/1.2.3.4:9094})),"
            " epoch=7, epochStartOffset=90, highWatermark=Optional.empty, voterStates={}) from"
            " ProspectiveState(epoch=6, leaderId=OptionalInt.empty)" + LOGGER,
            ("Leader", 7, False),
        ),
        (
            T + "ProspectiveState(epoch=6, leaderId=OptionalInt.empty, retries=1) from"
            " FollowerState(fetchTimeoutMs=2000, epoch=6, leaderId=101)" + LOGGER,
            ("Prospective", 6, False),
        ),
        # a node's first raft line after it started: its state initialised, from nothing
        (
            T
            + "Unattached(epoch=0, voters=[101, 102, 103], electionTimeoutMs=1375) from null"
            + LOGGER,
            ("Unattached", 0, True),
        ),
        (
            T + "ResignedState(localId=101, epoch=1, voters=[101, 102, 103]) from"
            " Leader(localId=101, epoch=1, epochStartOffset=0)" + LOGGER,
            ("Resigned", 1, False),
        ),
    ],
)
def test_transitions_are_read_with_their_state_epoch_and_start(
    line: str, expected: tuple[str, int, bool]
) -> None:
    assert parse_transition(line) == expected


@pytest.mark.parametrize(
    "line",
    [
        "[2026-12-07 03:34:14,683] INFO [RaftManager id=101] Did not receive fetch request from"
        " the majority of the voters within 3000ms. (org.apache.kafka.raft.LeaderState)",
        "[2026-12-07 03:34:14,683] INFO [RaftManager id=101] Attempting durable transition to"
        " Leader(localId=101, epoch=2) from CandidateState(localId=101, epoch=2)",
        "",
    ],
)
def test_other_lines_are_no_transition(line: str) -> None:
    assert parse_transition(line) is None
