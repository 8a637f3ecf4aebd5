"""Verdict vocabulary shared by every checker: anomaly kinds, outcomes, combination."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kchaos.harness.checker.sources import Reading
from kchaos.harness.rundir.anomalies import INVALIDATING, KINDS, UNKNOWN_MAKING
from kchaos.harness.rundir.results import Verdict

MAX_EXAMPLES = 5
# Strings in results.json examples and on the console are cut to this many characters: a
# record value may be megabytes long, and the example only has to let a person find it.
MAX_EXAMPLE_CHARS = 200


def clip(value: Any, limit: int = MAX_EXAMPLE_CHARS) -> Any:
    """A JSON-ready copy of ``value`` with every long string cut, its length said."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        return f"{value[:limit]}... ({len(value)} characters)"
    if isinstance(value, dict):
        return {k: clip(v, limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clip(v, limit) for v in value]
    return value


@dataclass
class Anomaly:
    """How often one kind was found, with a few examples a person can look up.

    ``allowed`` counts the occurrences the run's own settings permit (an unclean election
    where unclean leader election is enabled): reported, but not making the run invalid.
    """

    count: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)
    allowed: int = 0
    # occurrences by what caused them, where the run's evidence tells (a duplicate's
    # copies in the replicas' logs: kchaos.harness.checker.replicas.DUPLICATE_CAUSES)
    causes: dict[str, int] = field(default_factory=dict)

    def add(
        self, example: dict[str, Any] | None = None, n: int = 1, *, allowed: bool = False
    ) -> None:
        self.count += n
        if allowed:
            self.allowed += n
        if example is not None and len(self.examples) < MAX_EXAMPLES:
            self.examples.append(example)

    @property
    def invalidating(self) -> int:
        return self.count - self.allowed

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"count": self.count, "examples": self.examples}
        if self.allowed:
            out["allowed"] = self.allowed
        if self.causes:
            out["causes"] = dict(sorted(self.causes.items()))
        return out


@dataclass
class CheckOutcome:
    """What one checker concluded.

    ``valid`` follows the results.json convention: True, False or "unknown". A checker
    that crashed has ``error`` set and ``valid == "unknown"``. None: the checker judged
    nothing (every kind of it is unjudged, :mod:`.sources`); it takes no part in the
    run's verdict.

    ``sources``: what it said of each source it declares (:meth:`read`,
    :meth:`not_read`); ``unjudged``: kinds it could not judge for a reason of its own
    (not a missing source), with the reason.
    """

    name: str
    valid: Verdict | None = True
    anomalies: dict[str, Anomaly] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    sources: dict[str, Reading] = field(default_factory=dict)
    unjudged: dict[str, str] = field(default_factory=dict)

    def read(self, source: str) -> None:
        """``source`` was read."""
        self.sources[source] = Reading(True)

    def not_read(self, source: str, why: str, *, needed: bool = True) -> None:
        """``source`` was not read, and why; ``needed`` False: the run had nothing it
        could show, so its kinds are judged (absent) all the same."""
        self.sources[source] = Reading(False, why, needed)

    def anomaly(self, kind: str) -> Anomaly:
        if kind not in KINDS:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        return self.anomalies.setdefault(kind, Anomaly())

    def settle(self) -> CheckOutcome:
        """Derive ``valid`` from the anomalies found (kept False if already False)."""
        self.anomalies = {k: a for k, a in self.anomalies.items() if a.count}
        found = set(self.anomalies)
        invalid = {k for k, a in self.anomalies.items() if a.invalidating}
        if self.valid is False or invalid & set(INVALIDATING):
            self.valid = False
        elif found & set(UNKNOWN_MAKING):
            self.valid = "unknown"
        return self


def combine(verdicts: list[Verdict | None]) -> Verdict:
    """Invalid over unknown over valid; None (a checker that judged nothing) counts for
    nothing."""
    if any(v is False for v in verdicts):
        return False
    if any(v == "unknown" for v in verdicts):
        return "unknown"
    return True


def exit_code(verdict: Verdict) -> int:
    """0 valid, 1 invalid, 2 unknown (3 is reserved for unreadable input)."""
    if verdict is True:
        return 0
    if verdict is False:
        return 1
    return 2


@dataclass
class Results:
    """The combined verdict of all checkers; ``to_json()`` is results.json."""

    valid: Verdict
    anomalies: dict[str, Anomaly]
    stats: dict[str, Any]
    checkers: dict[str, CheckOutcome]
    warnings: list[str]
    history: str
    # Why the verdict is "unknown" although no checker found anything (an empty run).
    reasons: list[str] = field(default_factory=list)
    # Errors of the harness itself, not of Kafka (e.g. the independent reader disagrees
    # with the drain), by name; never anomaly kinds.
    harness_errors: dict[str, Anomaly] = field(default_factory=dict)
    # What the verdict rests on (history format 1.3, "Evidence"), by key: ``sources``
    # (which source each checker read) and ``faults`` (each fault's own effect,
    # kchaos.harness.checker.effects), as JSON
    evidence: dict[str, Any] = field(default_factory=dict)
    # Kinds whose source was not read, with the reason: neither present nor absent.
    unjudged: dict[str, str] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return exit_code(self.valid)

    def count(self, kind: str) -> int:
        a = self.anomalies.get(kind)
        return a.count if a else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "reasons": self.reasons,
            "anomalies": {k: clip(a.to_json()) for k, a in self.anomalies.items()},
            "stats": clip(self.stats),
            "checkers": {
                n: {
                    "valid": o.valid,
                    "error": o.error,
                    "anomalies": sorted(o.anomalies),
                    "unjudged": sorted(o.unjudged, key=KINDS.index),
                }
                for n, o in self.checkers.items()
            },
            "warnings": clip(self.warnings),
            "harness_errors": {k: clip(a.to_json()) for k, a in self.harness_errors.items()},
            "evidence": self.evidence,
            "unjudged": dict(self.unjudged),
            "history": self.history,
            "format": 1,
        }
