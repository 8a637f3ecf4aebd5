"""Fault schedules: scripted (at t for d) or random with a seed.

Both come from a plain mapping (a scenario's ``nemesis:`` section or a dict in Python)::

    {"type": "scripted", "faults": [
        {"at": 10, "for": 20, "fault": "pause", "target": "leader:t:0",
         "params": {"mode": "freezer"}}]}

    {"type": "random", "seed": 42, "start_s": 5, "duration_s": 120,
     "fault_s": [5, 15], "quiet_s": [3, 10], "concurrency": 1, "stagger_s": 0,
     "faults": [
        {"fault": "pause", "weight": 2, "target": ["random", "controller"],
         "params": {"mode": {"choice": ["sigstop", "freezer"]}}},
        {"fault": "latency", "for": [2, 4],
         "params": {"latency_ms": {"randint": [50, 500]}, "link": "replication"}}]}

Scripted steps may also start on a condition of the cluster instead of a time: ``when``
(one condition or a list) and ``timeout`` (s), see :mod:`kchaos.faults.trigger`; ``at`` (default
0 with ``when``) is then the moment the step becomes eligible, and ``for`` counts from the
moment the condition held. A step's length is ``for`` here as in a scenario file, run.json's
``schedule`` and the pytest plugin; ``duration`` is read as its old spelling (not both).

Random schedules: each of ``concurrency`` lanes (lane k starting ``k * stagger_s`` later)
draws a fault by weight, a duration from the entry's ``for`` (number or [lo, hi]) or
``fault_s``, a target when ``target`` is a list, and param values written as
``{"choice": [...]}``, ``{"uniform": [lo, hi]}`` or ``{"randint": [lo, hi]}``; then waits a
quiet period drawn from ``quiet_s``; no fault runs past ``start_s + duration_s``. Ids are
``f-1``, ``f-2``, ... in order of start. Everything is drawn from RNGs seeded by the
schedule's seed, so the same seed gives the same faults, target specs, params and times;
targets such as ``random`` are resolved at start with the fault's own seeded RNG.

The mapping is parsed into typed steps (:class:`Step`, :class:`RandomSpec`) that
:func:`scripted_schedule` and :func:`random_schedule` turn into a :class:`Schedule`. A
scenario file does not come through the mapping: its loader builds those typed steps
itself (with its own file, line and field in every error) and calls the same two
functions, so a scenario's fault is validated once, at load.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kchaos.faults.base import FaultSpec, fault_spec
from kchaos.faults.params import Where
from kchaos.faults.trigger import Trigger, TriggerContext, parse_trigger
from kchaos.harness.errors import ConfigError

SCRIPTED_KEYS = {"type", "seed", "faults"}
STEP_KEYS = {
    "at",
    "for",
    "duration",
    "fault",
    "target",
    "params",
    "when",
    "timeout",
    "on_timeout",
}
RANDOM_KEYS = {
    "type",
    "seed",
    "start_s",
    "duration_s",
    "fault_s",
    "quiet_s",
    "concurrency",
    "stagger_s",
    "faults",
}


@dataclass(frozen=True)
class ScheduledFault:
    at: float  # seconds after the nemesis starts (with a trigger: when it is eligible)
    duration: float
    spec: FaultSpec
    trigger: Trigger | None = None  # start when this holds, at or after ``at``

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def end(self) -> float:
        """When the fault stops; for a triggered step the earliest it can."""
        return self.at + self.duration

    def to_dict(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "at": round(self.at, 6),
            "for": round(self.duration, 6),
            "fault": self.spec.fault,
            "target": self.spec.target,
            "params": dict(self.spec.params),
        }
        if self.trigger is not None:
            out["when"] = self.trigger.condition_spec()
            out["timeout"] = self.trigger.timeout
            if self.trigger.on_timeout != "skip":
                out["on_timeout"] = self.trigger.on_timeout
        return out


@dataclass(frozen=True)
class Schedule:
    faults: tuple[ScheduledFault, ...]
    seed: int | str = 0

    @property
    def length(self) -> float:
        return max((f.end for f in self.faults), default=0.0)

    def to_list(self) -> list[dict[str, Any]]:
        return [f.to_dict() for f in self.faults]


@dataclass(frozen=True)
class Step:
    """One scripted fault, validated: start ``at`` (or when ``trigger`` holds, from ``at``)
    and stop ``duration`` seconds later. ``spec``'s id and seed are set by
    :func:`scripted_schedule`."""

    at: float
    duration: float
    spec: FaultSpec
    trigger: Trigger | None = None


@dataclass(frozen=True)
class RandomEntry:
    """One fault family of a random schedule: ``targets`` are the choices, ``params`` are
    values or draws (``{"choice": [...]}``, ``{"uniform": [lo, hi]}``, ``{"randint": ...}``),
    ``duration`` the [lo, hi] of its faults (None: the schedule's ``fault_s``)."""

    fault: str
    targets: tuple[Any, ...] = (None,)
    params: Mapping[str, Any] = field(default_factory=dict)
    weight: float = 1.0
    duration: tuple[float, float] | None = None
    where: Where = Where()


@dataclass(frozen=True)
class RandomSpec:
    """A random schedule's shape; :func:`random_schedule` draws it with a seed."""

    entries: tuple[RandomEntry, ...]
    start: float = 0.0
    duration: float = 60.0
    fault_s: tuple[float, float] = (5.0, 15.0)
    quiet_s: tuple[float, float] = (5.0, 10.0)
    concurrency: int = 1
    stagger: float = 0.0


def scripted_schedule(steps: Sequence[Step], seed: int | str = 0) -> Schedule:
    """The steps in order of start (equal times keep their order), numbered ``f-1``,
    ``f-2``, ... and given the schedule's seed; nothing is validated again."""
    ordered = sorted(steps, key=lambda s: s.at)
    faults = [
        ScheduledFault(s.at, s.duration, replace(s.spec, id=f"f-{i}", seed=seed), s.trigger)
        for i, s in enumerate(ordered, start=1)
    ]
    return Schedule(tuple(faults), seed)


def _number(value: Any, where: Where, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise where.error(f"must be a number, got {value!r}")
    if value < minimum:
        raise where.error(f"must be >= {minimum:g}, got {value!r}")
    return float(value)


def _range(value: Any, where: Where, minimum: float = 0.0) -> tuple[float, float]:
    """A number or a [lo, hi] pair."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        if len(value) != 2:
            raise where.error(f"must be a number or [lo, hi], got {value!r}")
        lo = _number(value[0], where.child(0, value), minimum)
        hi = _number(value[1], where.child(1, value), minimum)
        if hi < lo:
            raise where.error(f"[lo, hi] with hi < lo: {value!r}")
        return lo, hi
    v = _number(value, where, minimum)
    return v, v


def _mapping(value: Any, where: Where) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise where.error(f"must be a mapping, got {type(value).__name__}")
    return value


def _check_keys(spec: Mapping[str, Any], allowed: set[str], where: Where) -> None:
    for key in spec:
        if key not in allowed:
            raise where.child(str(key), spec).error(
                f"unknown key {key!r} (allowed: {', '.join(sorted(allowed))})"
            )


def _entries(spec: Mapping[str, Any], where: Where) -> list[tuple[Mapping[str, Any], Where]]:
    faults = spec.get("faults")
    w = where.child("faults", spec)
    if not isinstance(faults, Sequence) or isinstance(faults, str) or not faults:
        raise w.error("must be a non-empty list of faults")
    return [(_mapping(e, w.child(i, faults)), w.child(i, faults)) for i, e in enumerate(faults)]


def _seed(spec: Mapping[str, Any], default: int | str | None, where: Where) -> int | str:
    seed = spec.get("seed", default if default is not None else 0)
    if isinstance(seed, bool) or not isinstance(seed, int | str):
        raise where.child("seed", spec).error(f"must be an integer or string, got {seed!r}")
    return seed


def from_spec(
    spec: Mapping[str, Any],
    seed: int | str | None = None,
    where: Where | None = None,
    context: TriggerContext | None = None,
) -> Schedule:
    """Build a Schedule; ``seed`` (e.g. the run's) applies when the spec has none;
    ``context`` (topics, broker ids) lets triggers be checked against what exists."""
    where = where or Where(field="nemesis")
    spec = _mapping(spec, where)
    kind = spec.get("type", "scripted")
    if kind == "scripted":
        return _scripted(spec, _seed(spec, seed, where), where, context)
    if kind == "random":
        return _random(spec, _seed(spec, seed, where), where)
    raise where.child("type", spec).error(f"must be scripted or random, got {kind!r}")


def _scripted(
    spec: Mapping[str, Any], seed: int | str, where: Where, context: TriggerContext | None
) -> Schedule:
    _check_keys(spec, SCRIPTED_KEYS, where)
    steps = []
    for entry, w in _entries(spec, where):
        _check_keys(entry, STEP_KEYS, w)
        trigger = None
        if "when" in entry:
            trigger = parse_trigger(
                entry["when"],
                entry.get("timeout"),
                w.child("when", entry),
                context,
                timeout_where=w.child("timeout", entry),
                on_timeout=entry.get("on_timeout"),
                on_timeout_where=w.child("on_timeout", entry),
            )
        else:
            for key in ("timeout", "on_timeout"):
                if key in entry:
                    raise w.child(key, entry).error(f"{key} needs a `when` condition")
        if "at" not in entry and trigger is None:
            raise w.child("at").error("missing (seconds after the nemesis starts)")
        at = _number(entry.get("at", 0), w.child("at", entry))
        # ``for``; ``duration`` is its old spelling, still read, but not both
        if "for" in entry and "duration" in entry:
            raise w.child("duration", entry).error(
                "the step gives its length twice: duration is the old spelling of for; "
                "keep for only"
            )
        dur_key = "for" if "for" in entry else "duration"
        dur = _number(entry.get(dur_key, 0), w.child(dur_key, entry))
        fs = fault_spec(
            entry.get("fault"),  # type: ignore[arg-type]
            entry.get("target"),
            entry.get("params"),
            where=w,
        )
        steps.append(Step(at, dur, fs, trigger))
    return scripted_schedule(steps, seed)


def draw_param(value: Any, rng: random.Random, where: Where) -> Any:
    """One draw of a random fault's param (``choice``/``uniform``/``randint``), else as given."""
    if isinstance(value, Mapping) and len(value) == 1:
        ((how, arg),) = value.items()
        if how == "choice":
            if not isinstance(arg, Sequence) or isinstance(arg, str) or not arg:
                raise where.error("choice needs a non-empty list")
            return arg[rng.randrange(len(arg))]
        if how in ("uniform", "randint"):
            lo, hi = _range(arg, where, float("-inf"))
            return rng.uniform(lo, hi) if how == "uniform" else rng.randint(int(lo), int(hi))
    return value


def _random(spec: Mapping[str, Any], seed: int | str, where: Where) -> Schedule:
    _check_keys(spec, RANDOM_KEYS, where)
    start = _number(spec.get("start_s", 0), where.child("start_s", spec))
    duration = _number(spec.get("duration_s", 60), where.child("duration_s", spec))
    fault_s = _range(spec.get("fault_s", [5, 15]), where.child("fault_s", spec))
    quiet_s = _range(spec.get("quiet_s", [5, 10]), where.child("quiet_s", spec))
    lanes = int(_number(spec.get("concurrency", 1), where.child("concurrency", spec), 1))
    stagger = _number(spec.get("stagger_s", 0), where.child("stagger_s", spec))
    if max(fault_s[0], 0) + max(quiet_s[0], 0) <= 0:
        raise where.child("quiet_s", spec).error("fault_s and quiet_s cannot both be 0")
    entries = []
    for entry, w in _entries(spec, where):
        _check_keys(entry, {"fault", "weight", "target", "params", "for"}, w)
        weight = _number(entry.get("weight", 1), w.child("weight", entry))
        dur = _range(entry["for"], w.child("for", entry)) if "for" in entry else None
        targets = entry.get("target")
        listed = isinstance(targets, Sequence) and not isinstance(targets, str)
        if listed:
            if not targets:
                raise w.child("target", entry).error("an empty list of targets")
            choices: tuple[Any, ...] = tuple(targets)
        else:
            choices = (targets,)
        params = entry.get("params") or {}
        pw = w.child("params", entry)
        _mapping(params, pw)
        # Validate every target choice and one draw of the params now, not mid-run.
        probe = random.Random(0)
        tw = w.child("target", entry)
        for j, c in enumerate(choices):
            sample = {k: draw_param(v, probe, pw.child(k, params)) for k, v in params.items()}
            try:
                fault_spec(entry.get("fault"), c, sample, where=w)  # type: ignore[arg-type]
            except ConfigError as exc:
                if not listed or exc.field != tw.field:
                    raise
                raise tw.child(j, targets).error(exc.detail) from None  # that choice
        entries.append(RandomEntry(entry["fault"], choices, params, weight, dur, w))
    if sum(e.weight for e in entries) <= 0:
        raise where.child("faults", spec).error("weights must not all be 0")
    shape = RandomSpec(tuple(entries), start, duration, fault_s, quiet_s, lanes, stagger)
    return random_schedule(shape, seed)


def random_schedule(spec: RandomSpec, seed: int | str = 0) -> Schedule:
    """Draw the faults of a random schedule (its entries already checked): the same seed
    gives the same faults, targets, params and times. A drawn param value out of its
    range is a ConfigError at the entry's ``where``."""
    drawn: list[tuple[float, int, Any]] = []
    end = spec.start + spec.duration
    weights = [e.weight for e in spec.entries]
    for lane in range(spec.concurrency):
        rng = random.Random(f"{seed}/lane-{lane}")
        t = spec.start + lane * spec.stagger
        while True:
            entry = rng.choices(spec.entries, weights=weights)[0]
            d = rng.uniform(*(entry.duration or spec.fault_s))
            if t + d > end:
                break
            target = entry.targets[rng.randrange(len(entry.targets))]
            pw = entry.where.child("params", entry.params)
            values = {
                k: draw_param(v, rng, pw.child(k, entry.params)) for k, v in entry.params.items()
            }
            drawn.append((t, lane, (d, entry, target, values)))
            t += d + rng.uniform(*spec.quiet_s)
    drawn.sort(key=lambda x: (x[0], x[1]))
    faults = []
    for i, (t, _, (d, entry, target, values)) in enumerate(drawn, start=1):
        fs = fault_spec(entry.fault, target, values, id=f"f-{i}", seed=seed, where=entry.where)
        faults.append(ScheduledFault(round(t, 6), round(d, 6), fs))
    return Schedule(tuple(faults), seed)


def scripted(*entries: tuple[float, float, str, str | None, Mapping[str, Any]]) -> Schedule:
    """Python shorthand: ``scripted((10, 5, "pause", "broker-2", {}), ...)``."""
    return from_spec(
        {
            "type": "scripted",
            "faults": [
                {"at": a, "for": d, "fault": f, "target": t, "params": dict(p)}
                for a, d, f, t, p in entries
            ],
        }
    )
