"""State triggers: a scripted step that starts when the cluster shows a condition.

A scripted step may carry ``when:`` (one condition, or a list held one after the other)
and ``timeout:`` (seconds, default 60)::

    {"at": 5, "for": 10, "fault": "kill", "target": "broker-3",
     "when": {"in_isr": {"broker": 2, "topic": "rejoin", "partition": 0}}, "timeout": 90}

The step becomes *eligible* at ``at``; from then on the nemesis observes the cluster every
``poll`` seconds (0.15 by default) and starts the fault as soon as the condition holds.
With a list, the first condition is watched from eligibility, the second from the moment
the first held, and so on; ``timeout`` bounds the whole wait. Conditions:

=====================================================  ====================================
``in_isr: {broker, topic, partition}``                 the broker is in the partition's ISR
``out_of_isr: {broker, topic, partition}``             the broker is not in the ISR
``isr_below: {topic, partition, size}``                the ISR has fewer than ``size`` members
``registered: {broker[, unfenced]}``                   the broker registered again (a new
                                                       broker epoch) since it began to be
                                                       watched; with ``unfenced: true`` it must
                                                       also be unfenced (listed as alive)
``log_line: {broker, contains}``                       the broker logged a line containing the
                                                       text ``contains`` (plain text, case
                                                       sensitive) since it began to be watched
``checkpoint_rewritten: {broker, topic, partition}``   the broker replaced the partition's
                                                       leader-epoch-checkpoint (a new file
                                                       renamed over it) since it began to be
                                                       watched
=====================================================  ====================================

In the three ISR conditions, ``coordinator: txn:ID`` or ``coordinator: group:G`` may stand
for ``topic`` and ``partition``: the partition of ``__transaction_state`` (or
``__consumer_offsets``) that holds that id's (or group's) state, whose leader is the
coordinator (``kchaos.faults.coordinators``; the partition count is read live)::

    "when": {"isr_below": {"coordinator": "txn:kchaos-t1", "size": 3}}

How each is observed (never from a sleep), through the cluster's own reads
(``ClusterReads.partition_isr``, ``broker_epoch``, ``alive_brokers``, implemented in
``kchaos.harness.cluster.observe``):

* ISR conditions: a Metadata request through the cluster's client proxies (confluent-kafka
  ``AdminClient.list_topics`` on ``cluster.bootstrap_servers``), the same view a client has.
* ``checkpoint_rewritten``: the file's identity (inode and modification time), read on the
  host on the node's own filesystem (``NodeHandle.mount_path``), where the broker's data
  directory is; Kafka writes the checkpoint to a temporary file and renames it over the
  old one, so every write is a new inode. The identity seen when the condition starts
  being watched (or "no file") is the baseline; the condition holds when it changes. The
  page cache answers the read, so it sees the rename whether or not it reached the disk.
* ``registered``: a KRaft broker logs ``Successfully registered broker B with broker epoch
  E`` when the controller answers its registration, and that answer is sent only once the
  RegisterBrokerRecord is committed; every (re-)registration gets a new, larger epoch (the
  record's offset in the metadata log). The trigger reads the broker's own log through the
  cluster handle (``cluster.logs(node, tail)``; the broker logs to stdout, kept across
  container restarts) and takes the last epoch it finds. The epoch seen when the condition
  starts being watched is the baseline; the condition holds when a different epoch shows
  up. Client metadata cannot do this (it lists unfenced brokers and no epoch), and a
  restart can fence and unfence a broker between two polls. ``unfenced`` adds the client
  metadata's list of alive brokers.
* ``log_line``: the same log, followed with ``LogFollower`` (no line is missed however
  busy the log): the first read is the baseline and is not matched, so a line already
  there when watching began never counts; every later line is. This is the trigger for a
  moment that only the broker itself knows, such as "Recovering 6 logs from
  /var/lib/kafka/data since no clean shutdown file was found" (log loading began).

When the condition holds, the fault's ``start`` line carries ``trigger``: the condition as
written, ``held_at`` (nanoseconds since the run started, the history's clock: the moment the
observation that showed it came back) and ``waited_s`` (from eligibility). A wait that
times out raises :class:`TriggerTimeout` naming the condition and the last observation:
by default (``on_timeout: skip``) the step is then not run and the nemesis records the
error; with ``on_timeout: start`` the fault starts anyway and the start line's ``trigger``
says ``"timed_out": true`` (with ``waited_s`` and ``last_observed``, and no ``held_at``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kchaos.faults.coordinators import coordinator_partition, parse_key
from kchaos.faults.crashscan import CHECKPOINT
from kchaos.faults.params import Where
from kchaos.harness.cluster.api import TriggerReads
from kchaos.harness.cluster.observe import LogFollower
from kchaos.harness.cluster.retry import Poll
from kchaos.harness.errors import ClusterError, FaultError, TriggerCancelled, TriggerTimeout

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_POLL_S = 0.15
ON_TIMEOUT = ("skip", "start")

# condition -> (required fields, optional fields with defaults); field kinds below
_FIELDS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "in_isr": (("broker", "topic", "partition"), {}),
    "out_of_isr": (("broker", "topic", "partition"), {}),
    "isr_below": (("topic", "partition", "size"), {}),
    "registered": (("broker",), {"unfenced": False}),
    "log_line": (("broker", "contains"), {}),
    "checkpoint_rewritten": (("broker", "topic", "partition"), {}),
}
#: ``coordinator`` may replace ``topic`` and ``partition`` in these conditions
_PARTITION_FIELDS = ("topic", "partition")
_WITH_COORDINATOR = ("in_isr", "out_of_isr", "isr_below")
_KINDS = {
    "broker": "int",
    "partition": "int",
    "size": "int",
    "topic": "str",
    "unfenced": "bool",
    "coordinator": "str",
    "contains": "str",
}
_MINIMUM = {"broker": 0, "partition": 0, "size": 1}


@dataclass(frozen=True)
class Condition:
    kind: str
    broker: int | None = None
    topic: str | None = None
    partition: int | None = None
    size: int | None = None
    unfenced: bool = False
    coordinator: str | None = None  # "txn:ID" / "group:G": topic and partition found live
    contains: str | None = None  # log_line: the text a new line of the broker's log holds

    def to_dict(self) -> dict[str, Any]:
        required, optional = _FIELDS[self.kind]
        if self.coordinator is not None:
            required = tuple(n for n in required if n not in _PARTITION_FIELDS)
        body = {name: getattr(self, name) for name in required}
        if self.coordinator is not None:
            body["coordinator"] = self.coordinator
        body.update({k: getattr(self, k) for k, v in optional.items() if getattr(self, k) != v})
        return {self.kind: body}

    def describe(self) -> str:
        where = (
            f"{self.topic}-{self.partition}"
            if self.coordinator is None
            else f"the coordinator partition of {self.coordinator}"
        )
        if self.kind == "in_isr":
            return f"broker {self.broker} in the ISR of {where}"
        if self.kind == "out_of_isr":
            return f"broker {self.broker} out of the ISR of {where}"
        if self.kind == "isr_below":
            return f"ISR of {where} below {self.size}"
        if self.kind == "log_line":
            return f"broker {self.broker} logging a line containing {self.contains!r}"
        if self.kind == "checkpoint_rewritten":
            return f"broker {self.broker} rewrote the leader-epoch checkpoint of {where}"
        extra = " and unfenced" if self.unfenced else ""
        return f"broker {self.broker} registered again{extra}"


@dataclass(frozen=True)
class Trigger:
    conditions: tuple[Condition, ...]
    timeout: float = DEFAULT_TIMEOUT_S
    poll: float = DEFAULT_POLL_S
    on_timeout: str = "skip"  # or "start": run the fault anyway when it never held

    def condition_spec(self) -> Any:
        """The condition(s) in the spec's own shape (a mapping, or a list of them)."""
        if len(self.conditions) == 1:
            return self.conditions[0].to_dict()
        return [c.to_dict() for c in self.conditions]

    def describe(self) -> str:
        return ", then ".join(c.describe() for c in self.conditions)

    @property
    def brokers(self) -> set[int]:
        return {c.broker for c in self.conditions if c.broker is not None}


@dataclass(frozen=True)
class TriggerContext:
    """What a scenario declares, to reject a trigger naming something that is not there.

    ``topics``: name -> (partitions, replication factor); ``brokers``: broker ids. None
    leaves that part unchecked (a Python schedule before it meets a cluster)."""

    topics: Mapping[str, tuple[int, int]] | None = None
    brokers: Collection[int] | None = None


# ------------------------------------------------------------------------------ parsing


def _value(kind: str, value: Any, where: Where, name: str) -> Any:
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise where.error(f"must be an integer, got {value!r}")
        if value < _MINIMUM.get(name, 0):
            raise where.error(f"must be >= {_MINIMUM.get(name, 0)}, got {value!r}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise where.error(f"must be true or false, got {value!r}")
        return value
    if not isinstance(value, str) or not value:
        raise where.error(f"must be a non-empty string, got {value!r}")
    return value


def parse_condition(raw: Any, where: Where, context: TriggerContext | None = None) -> Condition:
    """One ``{kind: {fields}}`` mapping; ConfigError names the field."""
    known = ", ".join(sorted(_FIELDS))
    if not isinstance(raw, Mapping) or len(raw) != 1:
        raise where.error(f"a condition is a mapping with one key ({known}), got {raw!r}")
    ((kind, body),) = raw.items()
    w = where.child(str(kind), raw)
    if kind not in _FIELDS:
        raise w.error(f"unknown condition {kind!r} (known: {known})")
    if not isinstance(body, Mapping):
        raise w.error(f"must be a mapping of fields, got {body!r}")
    required, optional = _FIELDS[kind]
    allowed = set(required) | set(optional)
    if kind in _WITH_COORDINATOR and "coordinator" in body:
        both = [n for n in _PARTITION_FIELDS if n in body]
        if both:
            raise w.child(both[0], body).error(
                "give either coordinator or topic and partition, not both"
            )
        required = tuple(n for n in required if n not in _PARTITION_FIELDS)
        allowed = (allowed - set(_PARTITION_FIELDS)) | {"coordinator"}
    for key in body:
        if key not in allowed:
            raise w.child(str(key), body).error(
                f"unknown field {key!r} (this condition takes: {', '.join(sorted(allowed))})"
            )
    values: dict[str, Any] = dict(optional)
    for name in required:
        if name not in body:
            raise w.child(name, body).error("missing")
    for name in body:
        values[name] = _value(_KINDS[name], body[name], w.child(name, body), name)
    if "coordinator" in values:
        try:
            key = parse_key(values["coordinator"])
        except ValueError as exc:
            raise w.child("coordinator", body).error(str(exc)) from None
        values["topic"] = key.topic
    cond = Condition(str(kind), **values)
    if context is not None:
        _check_context(cond, body, w, context)
    return cond


def _check_context(cond: Condition, body: Any, w: Where, ctx: TriggerContext) -> None:
    if ctx.brokers is not None and cond.broker is not None and cond.broker not in ctx.brokers:
        ids = ", ".join(str(b) for b in sorted(ctx.brokers))
        raise w.child("broker", body).error(f"no broker {cond.broker} (brokers: {ids})")
    if ctx.topics is None or cond.topic is None or cond.coordinator is not None:
        return
    if cond.topic not in ctx.topics:
        names = ", ".join(sorted(ctx.topics)) or "none"
        raise w.child("topic", body).error(f"unknown topic {cond.topic!r} (topics: {names})")
    partitions, rf = ctx.topics[cond.topic]
    if cond.partition is not None and cond.partition >= partitions:
        raise w.child("partition", body).error(
            f"topic {cond.topic!r} has {partitions} partitions, no {cond.partition}"
        )
    if cond.size is not None and cond.size > rf:
        raise w.child("size", body).error(
            f"an ISR of topic {cond.topic!r} (replication factor {rf}) is always below "
            f"{cond.size}: the condition would hold at once"
        )


def parse_trigger(
    when: Any,
    timeout: Any = None,
    where: Where | None = None,
    context: TriggerContext | None = None,
    *,
    timeout_where: Where | None = None,
    on_timeout: Any = None,
    on_timeout_where: Where | None = None,
) -> Trigger:
    """A step's ``when`` (mapping or non-empty list), ``timeout`` (seconds > 0) and
    ``on_timeout`` (``skip``, the default, or ``start``)."""
    where = where or Where(field="when")
    if isinstance(when, Sequence) and not isinstance(when, str):
        if not when:
            raise where.error("an empty list of conditions")
        conds = tuple(parse_condition(c, where.child(i, when), context) for i, c in enumerate(when))
    else:
        conds = (parse_condition(when, where, context),)
    limit = DEFAULT_TIMEOUT_S
    if timeout is not None:
        tw = timeout_where or Where(where.file, "timeout", where.line)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise tw.error(f"must be a number of seconds, got {timeout!r}")
        if timeout <= 0:
            raise tw.error(f"must be more than 0 seconds, got {timeout!r}")
        limit = float(timeout)
    action = "skip"
    if on_timeout is not None:
        ow = on_timeout_where or Where(where.file, "on_timeout", where.line)
        if on_timeout not in ON_TIMEOUT:
            raise ow.error(f"must be one of {', '.join(ON_TIMEOUT)}, got {on_timeout!r}")
        action = str(on_timeout)
    return Trigger(conds, limit, on_timeout=action)


# ---------------------------------------------------------------------------- observing


class ClusterState(Protocol):
    """What the conditions read; raise on a failed observation (it is retried)."""

    def isr(self, topic: str, partition: int) -> list[int]: ...

    def partition_count(self, topic: str) -> int: ...

    def broker_epoch(self, broker: int) -> int | None: ...

    def alive_brokers(self) -> set[int]: ...

    def new_log_lines(self, broker: int) -> list[str]:
        """The broker's log lines since the previous call (the first call: its last tail)."""
        ...

    def checkpoint_identity(self, broker: int, topic: str, partition: int) -> str | None: ...

    def close(self) -> None: ...


class HandleState:
    """The conditions' reads, on the cluster's own members (``partition_isr``,
    ``broker_epoch``, ``alive_brokers``); a failed read is a FaultError (retried)."""

    def __init__(self, cluster: TriggerReads) -> None:
        self.cluster = cluster
        self._followers: dict[int, LogFollower] = {}

    def isr(self, topic: str, partition: int) -> list[int]:
        try:
            return sorted(int(b) for b in self.cluster.partition_isr(topic, partition))
        except ClusterError as exc:
            raise FaultError(str(exc)) from exc

    def partition_count(self, topic: str) -> int:
        try:
            return int(self.cluster.partition_count(topic))
        except ClusterError as exc:
            raise FaultError(str(exc)) from exc

    def alive_brokers(self) -> set[int]:
        try:
            return {int(b) for b in self.cluster.alive_brokers()}
        except ClusterError as exc:
            raise FaultError(str(exc)) from exc

    def broker_epoch(self, broker: int) -> int | None:
        got = self.cluster.broker_epoch(broker)
        return None if got is None else int(got)

    def new_log_lines(self, broker: int) -> list[str]:
        follower = self._followers.get(broker)
        if follower is None:
            node = self.cluster.node(broker)
            follower = LogFollower(lambda tail: self.cluster.logs(node, tail))
            self._followers[broker] = follower
        try:
            return follower.new_lines()
        except ClusterError as exc:
            raise FaultError(str(exc)) from exc

    def checkpoint_identity(self, broker: int, topic: str, partition: int) -> str | None:
        """``inode:mtime_ns`` of the partition's leader-epoch checkpoint on the broker's
        own filesystem, or None when there is none."""
        node = self.cluster.node(broker)
        path = node.mount_path / f"{topic}-{partition}" / CHECKPOINT
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise FaultError(f"{path}: {exc}") from exc
        return f"{st.st_ino}:{st.st_mtime_ns}"

    def close(self) -> None:
        pass


@dataclass
class _Watch:
    """One condition being watched: its baseline (for ``registered``) and last sight."""

    cond: Condition
    baseline: int | str | None = None
    has_baseline: bool = False
    last_seen: str = "nothing observed yet"

    def check(self, state: ClusterState) -> bool:
        c = self.cond
        if c.kind in ("in_isr", "out_of_isr", "isr_below"):
            assert c.topic is not None
            partition = c.partition
            if c.coordinator is not None:
                key = parse_key(c.coordinator)
                partition = coordinator_partition(key.key, state.partition_count(key.topic))
            assert partition is not None
            isr = state.isr(c.topic, partition)
            self.last_seen = f"ISR of {c.topic}-{partition} = {isr}"
            if c.kind == "in_isr":
                return c.broker in isr
            if c.kind == "out_of_isr":
                return c.broker not in isr
            assert c.size is not None
            return len(isr) < c.size
        assert c.broker is not None
        if c.kind == "log_line":
            return self._logged(c.broker, str(c.contains), state)
        if c.kind == "checkpoint_rewritten":
            assert c.topic is not None and c.partition is not None
            ident = state.checkpoint_identity(c.broker, c.topic, c.partition)
            shown = "no file" if ident is None else f"file {ident}"
            if not self.has_baseline:
                self.baseline, self.has_baseline = ident, True
                self.last_seen = f"{shown} when watching began"
                return False
            self.last_seen = f"{shown} (was {self.baseline or 'no file'})"
            return ident is not None and ident != self.baseline
        epoch = state.broker_epoch(c.broker)
        if not self.has_baseline:
            self.baseline, self.has_baseline = epoch, True
            self.last_seen = f"broker {c.broker} epoch {epoch} when watching began"
            return False
        self.last_seen = f"broker {c.broker} epoch {epoch} (was {self.baseline})"
        if epoch is None or epoch == self.baseline:
            return False
        if c.unfenced:
            alive = state.alive_brokers()
            self.last_seen += f", alive brokers {sorted(alive)}"
            return c.broker in alive
        return True

    def _logged(self, broker: int, text: str, state: ClusterState) -> bool:
        lines = state.new_log_lines(broker)
        if not self.has_baseline:
            # what the log held when watching began is the baseline, never a match
            self.has_baseline = True
            self.last_seen = f"broker {broker}: {len(lines)} log lines when watching began"
            return False
        for line in lines:
            if text in line:
                self.last_seen = f"broker {broker} logged: {line.strip()[:300]}"
                return True
        self.last_seen = f"broker {broker}: no line containing {text!r} since watching began"
        return False


@dataclass
class Held:
    """A trigger that held: when (history clock, ns) and after how long a wait."""

    held_at: int
    waited_s: float
    steps: list[dict[str, Any]] = field(default_factory=list)

    def record(self, trigger: Trigger) -> dict[str, Any]:
        out: dict[str, Any] = {
            "condition": trigger.condition_spec(),
            "held_at": self.held_at,
            "waited_s": round(self.waited_s, 3),
        }
        if len(self.steps) > 1:
            out["steps"] = self.steps
        return out


def wait_for(
    trigger: Trigger,
    state: ClusterState,
    *,
    clock_ns: Callable[[], int],
    cancel: threading.Event | None = None,
    label: str = "",
) -> Held:
    """Block until every condition held in turn; TriggerTimeout / TriggerCancelled else."""
    cancel = cancel or threading.Event()
    began = time.monotonic()
    deadline = began + trigger.timeout
    steps: list[dict[str, Any]] = []
    held_at = 0

    def pause(seconds: float) -> bool:  # never past the deadline; True: cancelled
        return cancel.wait(max(0.0, min(seconds, deadline - time.monotonic())))

    for cond in trigger.conditions:
        watch = _Watch(cond)

        def seen(watch: _Watch = watch) -> str | None:
            try:
                held = watch.check(state)
            except Exception as exc:  # noqa: BLE001 - a failed observation is retried
                held = False
                watch.last_seen = f"observation failed: {type(exc).__name__}: {exc}"
            return None if held else watch.last_seen

        polling = Poll(cond.describe(), seen, timeout=trigger.timeout, interval=trigger.poll,
                       sleep=pause)  # fmt: skip
        if polling.wait(deadline):
            held_at = clock_ns()
            steps.append({"condition": cond.to_dict(), "held_at": held_at})
            continue
        if polling.stopped:
            raise TriggerCancelled(
                f"{label}not started: the nemesis stopped while waiting for "
                f"{cond.describe()}; last observed: {watch.last_seen}"
            )
        raise TriggerTimeout(
            f"{label}trigger timed out after {trigger.timeout:g}s waiting for "
            f"{cond.describe()}; last observed: {watch.last_seen}",
            watch.last_seen,
        )
    return Held(held_at, time.monotonic() - began, steps)


def trigger_schema() -> dict[str, Any]:
    """JSON Schema of ``when`` (one condition or a non-empty list)."""
    types = {"int": {"type": "integer", "minimum": 0}, "str": {"type": "string", "minLength": 1}}
    types["bool"] = {"type": "boolean"}
    one = []
    for kind, (required, optional) in sorted(_FIELDS.items()):
        props = {name: dict(types[_KINDS[name]]) for name in (*required, *optional)}
        if "size" in props:
            props["size"]["minimum"] = 1
        body: dict[str, Any] = {
            "type": "object",
            "required": list(required),
            "properties": props,
            "additionalProperties": False,
        }
        if kind in _WITH_COORDINATOR:
            # either topic and partition, or the coordinator whose partition it is
            props["coordinator"] = {"type": "string", "pattern": "^(txn|group):.+"}
            others = [n for n in required if n not in _PARTITION_FIELDS]
            body["required"] = others
            body["oneOf"] = [
                {"required": list(_PARTITION_FIELDS), "not": {"required": ["coordinator"]}},
                {
                    "required": ["coordinator"],
                    "not": {"anyOf": [{"required": ["topic"]}, {"required": ["partition"]}]},
                },
            ]
        one.append(
            {
                "type": "object",
                "properties": {kind: body},
                "required": [kind],
                "additionalProperties": False,
            }
        )
    condition = {"oneOf": one}
    return {"anyOf": [condition, {"type": "array", "items": condition, "minItems": 1}]}
