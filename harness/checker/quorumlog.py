"""The KRaft quorum's own account of who led it: the nodes' ``Completed transition`` lines.

A run records the brokers' registrations and the partitions' states (controller.jsonl) but
not which controller led the metadata quorum. Every node says so itself: KRaft's
``QuorumState`` logs, at INFO, each change of the node's raft state::

    [RaftManager id=102] Completed transition to Leader(localId=102, epoch=3,
    epochStartOffset=67, ...) from CandidateState(localId=102, epoch=3, ...)

(one line, logger ``org.apache.kafka.raft.QuorumState``). The state's name is the first
word after ``to``: ``Leader``, ``ResignedState``, ``CandidateState``, ``FollowerState``,
``Unattached`` on 3.x, and on 4.x also ``ProspectiveState`` (KIP-996's pre-vote); 4.x
prints ``Leader(localVoterNode=...`` where 3.x prints ``Leader(localId=...``. Either way
the line says ``epoch=<n>`` before any other field named so, and it is the node whose log
it is that changed state (checked against the 3.7.0 and 4.4.0 jars and real 3.7.0 logs;
a killed 4.4.0 controller's restart logged its second ``from null`` line, 2026-12-07).

A cut that separates the quorum's leader from the other voters shows here as a failover:
the leader resigns, another controller becomes ``Leader`` with a higher epoch. A cut
voter that did not lead starts elections of its own (``CandidateState``, or
``ProspectiveState`` on 4.x). A node's process logs its first such line ``from null``:
its raft state initialised at start, so a controller that started again after a crash
shows a second one. :func:`quorum_changes` reads these lines for the effect measures of
partition faults and of crashes of controller-only nodes
(:mod:`kchaos.harness.checker.effects`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kchaos.harness.rundir.nodelogs import entry_unix_ms, history_time_ns, timed_node_logs
from kchaos.harness.rundir.rundir import RunDir

_MARK = "Completed transition to "
_TRANSITION = re.compile(r"Completed transition to ([A-Za-z]+)\(")
_EPOCH = re.compile(r"\bepoch=(\d+)")

#: The raft states that say a node lost touch with the quorum it was in (it stood for
#: election or gave up leading), and the one that says it now leads.
ELECTING = frozenset({"Candidate", "Prospective", "Resigned"})
LEADER = "Leader"


@dataclass(frozen=True)
class QuorumChange:
    """One node's change of raft state, on the history's time base."""

    time: int  # ns since the history's start
    node: int
    state: str  # "Leader", "Candidate", "Follower", ... (a trailing "State" dropped)
    epoch: int | None
    where: str  # <container>/server.log:<line>
    fresh: bool = False  # "from null": the node's raft state was just initialised (it started)


def parse_transition(text: str) -> tuple[str, int | None, bool] | None:
    """(state, epoch, fresh) of a ``Completed transition to`` line, ``fresh`` when it is the
    first of the node's process (``from null``: its raft state initialised at start); None
    for any other line."""
    if _MARK not in text:
        return None
    match = _TRANSITION.search(text)
    if match is None:
        return None
    state = match.group(1).removesuffix("State")
    epoch = _EPOCH.search(text, match.end())
    fresh = text.rstrip().rsplit(" from ", 1)[-1].startswith("null")
    return state, int(epoch.group(1)) if epoch else None, fresh


def quorum_changes(rd: RunDir) -> list[QuorumChange] | None:
    """Every node's raft state changes the run's node logs hold, by time; None when the
    run kept no node log or has no time origin (the caller says why)."""
    found = timed_node_logs(rd)
    if found is None:
        return None
    out: list[QuorumChange] = []
    for node in found.nodes:
        if node.node_id is None:
            continue
        for number, text in node.lines():
            said = parse_transition(text)
            if said is None:
                continue
            unix_ms = entry_unix_ms(text)
            if unix_ms is None:
                continue
            time = history_time_ns(unix_ms, found.origin_unix_ns)
            state, epoch, fresh = said
            out.append(QuorumChange(time, node.node_id, state, epoch, node.where(number), fresh))
    out.sort(key=lambda c: (c.time, c.node))
    return out
