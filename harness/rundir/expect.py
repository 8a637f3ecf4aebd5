"""Did a run end as its scenario said it should? (verdict and anomalies vs ``expect``)

Works on plain data (the ``expect`` section of run.json and results.json), so the runner,
the reports and ``kchaos report`` of an old run directory all judge the same way.

Exit codes of ``kchaos run`` (and the per-scenario outcome of ``kchaos suite``):

    0  the run ended as expected (verdict, required anomalies, no unexpected anomaly, no
       forbidden one, SLOs)
    1  it did not: an unexpected anomaly or verdict, a negative control that found
       nothing, a forbidden anomaly (``forbid``: the one way to fail a run on a
       reported-only kind), or a failed SLO threshold
    2  the verdict is "unknown" (nothing proven either way) where the scenario expected a
       definite one
    5  not judged: the scenario requires (``anomalies``) or forbids (``forbid``) a kind
       that results.json lists under ``unjudged`` (its source was not read, history
       format 1.3 "Evidence"), and nothing else went wrong. Never "as expected": a
       fixed release whose forbidden kind could not be looked for is no evidence of the
       fix. A definite failure beside it wins (1); an unknown verdict beside it does not.

    6  not exercised: a fault the scenario lists in ``expect.effects`` did not show its
       own effect (results.json ``evidence.faults``: ``not-seen``, ``not-measured``, or
       no such fault started), or a line of ``expect.log_lines`` (Kafka's own log of
       its defence) is not in the nodes' logs (``evidence.lines``), so the run proves
       nothing either way, whatever the checker found (it wins over every other outcome)

(3 is bad input and 4 a harness failure, :mod:`kchaos.harness.errors`.) Each outcome has
its own label (:data:`LABELS`): "as expected", "NOT as expected", "not judged", "not exercised".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kchaos.harness.rundir.anomalies import REPORTED_ONLY
from kchaos.harness.rundir.loglines import unseen_lines

EXIT_EXPECTED = 0
EXIT_UNEXPECTED = 1
EXIT_UNKNOWN = 2
EXIT_NOT_JUDGED = 5
EXIT_NOT_EXERCISED = 6

#: What the reports call an outcome, by exit code ("NOT as expected" for any other).
LABELS: dict[int, str] = {
    EXIT_EXPECTED: "as expected",
    EXIT_NOT_JUDGED: "not judged",
    EXIT_NOT_EXERCISED: "not exercised",
}
NOT_EXPECTED = "NOT as expected"

#: A batch's exit code from its runs' (:func:`worst_exit`), most telling first: an
#: interruption, a run that failed (4), a red run (1), then the runs that prove nothing
#: (not exercised, not judged, unknown). A red run is never hidden behind a blind one.
SEVERITY: tuple[int, ...] = (
    130,
    4,
    3,
    EXIT_UNEXPECTED,
    EXIT_NOT_EXERCISED,
    EXIT_NOT_JUDGED,
    EXIT_UNKNOWN,
)


def worst_exit(codes: Sequence[int]) -> int:
    """The exit code of a batch (suite, matrix, soak, merge, SRE validation): 0 when every
    run's is, else the first of :data:`SEVERITY` among them (an unknown code counts as
    the most severe)."""
    bad = {c for c in codes if c != EXIT_EXPECTED}
    if not bad:
        return EXIT_EXPECTED
    unknown = bad - set(SEVERITY)
    if unknown:
        return max(unknown)
    return next(c for c in SEVERITY if c in bad)


# Reported, never a correctness failure: availability is judged by SLO thresholds, and a
# last-known-leader election is Kafka's designed recovery (its losses are lost writes).
INFORMATIONAL = frozenset(REPORTED_ONLY)


@dataclass(frozen=True)
class Outcome:
    expected: bool
    exit_code: int
    verdict: Any  # True, False, "unknown" or None (no results)
    reasons: tuple[str, ...] = ()
    found: tuple[str, ...] = ()
    slo: Mapping[str, bool] = field(default_factory=dict)
    # every kind results.json lists under ``unjudged`` (the reasons name those the
    # expectation needed)
    unjudged: tuple[str, ...] = ()
    # the ``expect.effects`` entries whose fault did not show its effect, and the
    # ``expect.log_lines`` not seen (``log line '...' in node N's log``)
    not_exercised: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``as expected``, ``NOT as expected``, ``not judged`` or ``not exercised``
        (:data:`LABELS`)."""
        return LABELS.get(self.exit_code, NOT_EXPECTED)


def verdict_text(verdict: Any) -> str:
    if verdict is True:
        return "valid"
    if verdict is False:
        return "invalid"
    if verdict == "unknown":
        return "unknown"
    return "no verdict"


def slo_results(results: Mapping[str, Any]) -> dict[str, bool]:
    """Threshold name -> passed, from results.json (``stats.availability.slo``)."""
    stats = results.get("stats") or {}
    availability = stats.get("availability") if isinstance(stats, Mapping) else None
    raw = (
        (availability.get("slo") if isinstance(availability, Mapping) else None)
        or stats.get("thresholds")
        or stats.get("slo")
        or {}
    )
    out: dict[str, bool] = {}
    if isinstance(raw, Mapping):
        for name, value in raw.items():
            if isinstance(value, Mapping):
                passed = value.get("pass", value.get("passed", value.get("ok")))
            else:
                passed = value
            if isinstance(passed, bool):
                out[str(name)] = passed
    elif isinstance(raw, list):
        for item in raw:
            if isinstance(item, Mapping) and "name" in item:
                passed = item.get("pass", item.get("passed", item.get("ok")))
                if isinstance(passed, bool):
                    out[str(item["name"])] = passed
    return out


def slo_unknown(results: Mapping[str, Any]) -> list[str]:
    """Threshold names whose check could not be made (``"pass": "unknown"`` in
    ``stats.availability.slo``): never a pass."""
    stats = results.get("stats") or {}
    availability = stats.get("availability") if isinstance(stats, Mapping) else None
    raw = availability.get("slo") if isinstance(availability, Mapping) else None
    if not isinstance(raw, Mapping):
        return []
    return sorted(
        str(name)
        for name, value in raw.items()
        if isinstance(value, Mapping) and value.get("pass") == "unknown"
    )


def evaluate(expect: Mapping[str, Any] | None, results: Mapping[str, Any] | None) -> Outcome:
    """Compare a run's results with its scenario's ``expect`` section."""
    expect = expect or {}
    if results is None:
        return Outcome(False, EXIT_UNEXPECTED, None, ("the run has no results.json",))
    verdict = results.get("valid")
    anomalies = results.get("anomalies") or {}
    raw_unjudged = results.get("unjudged")
    unjudged: Mapping[str, Any] = raw_unjudged if isinstance(raw_unjudged, Mapping) else {}
    found = tuple(sorted(k for k, v in anomalies.items() if _count(v) > 0))
    # kinds whose every occurrence the run's own settings allow (an unclean election with
    # unclean leader election enabled) are reported, never unexpected
    permitted = {k for k, v in anomalies.items() if allowed_everywhere(v)}
    # kinds whose every occurrence has a cause the expectation excuses (a duplicate the
    # client re-sent under a new producer epoch, in an SRE validation)
    causes = set(expect.get("allowed_causes") or ())
    permitted |= {k for k, v in anomalies.items() if excused_by_cause(v, causes)}
    want_valid = expect.get("valid", True)
    if want_valid == "any":
        want_valid = None
    required = tuple(expect.get("anomalies") or ())
    allowed = set(expect.get("allowed") or ()) | set(required) | INFORMATIONAL | permitted
    reasons: list[str] = []
    unknowns = 0  # reasons that are "could not tell", not "it went wrong"
    judged = verdict  # an allowed kind is found "without failing the run":
    if want_valid is not False:
        judged = _excused(verdict, found, set(expect.get("allowed") or ()) | permitted)
    if want_valid is not None and judged != want_valid:
        reasons.append(f"verdict {verdict_text(judged)}, expected {verdict_text(want_valid)}")
        unknowns += judged == "unknown"
    missing = [k for k in required if k not in found and k not in unjudged]
    if missing:
        reasons.append(f"expected anomalies not found: {', '.join(missing)}")
    # a kind the expectation requires or forbids whose source was not read: neither
    # found nor absent (a found one is judged, whatever else was not read)
    needed = dict.fromkeys([*required, *(expect.get("forbid") or ())])
    blind = [k for k in needed if k in unjudged and k not in found]
    for kind in blind:
        reasons.append(f"not judged: {kind} ({unjudged[kind]})")
    # forbidden kinds fail the run whatever else says they may occur (a reported-only
    # kind, a permitted or cause-excused one), and whatever verdict is expected
    forbidden = [k for k in found if k in set(expect.get("forbid") or ())]
    if forbidden:
        reasons.append(f"forbidden anomalies found: {', '.join(forbidden)}")
    if want_valid is not None:
        # "unseen" is what makes a verdict unknown: the verdict comparison covers it.
        extra = [k for k in found if k not in allowed and k != "unseen"]
        if extra:
            reasons.append(f"unexpected anomalies: {', '.join(extra)}")
    slo = slo_results(results)
    failed = [name for name, ok in slo.items() if not ok]
    if failed:
        reasons.append(f"SLO failed: {', '.join(failed)}")
    at_least = expect.get("offline_at_least")
    if isinstance(at_least, int | float) and not isinstance(at_least, bool):
        longest = longest_offline(results)
        if longest is None:
            reasons.append("offline windows unknown (results.json has none)")
            unknowns += 1
        elif longest < at_least:
            reasons.append(
                f"longest offline window {longest:.1f} s, expected at least {at_least:g} s"
            )
    not_measured = slo_unknown(results)
    if not_measured:
        reasons.append(f"SLO unknown (could not be measured): {', '.join(not_measured)}")
        unknowns += 1
    all_unjudged = tuple(str(k) for k in unjudged)
    idle = not_exercised(expect.get("effects") or (), results)
    # a defence Kafka logs (expect.log_lines) not in the logs: the mechanism did not
    # demonstrably run, as with a fault that did not bite
    idle += [
        (f"log line {label}", why) for label, why in unseen_lines(expect.get("log_lines"), results)
    ]
    if expect.get("elected_from_elr"):
        why = no_elr_election(results)
        if why is not None:
            idle.append(("elected_from_elr", why))
    if idle:
        # over every other reason: a run whose fault did not bite shows nothing about
        # the fault, whether the checker found something or not
        said = "; ".join(f"{name}: {why}" for name, why in idle)
        reasons.insert(0, f"not exercised: {said}")
        names = tuple(name for name, _ in idle)
        return Outcome(
            False, EXIT_NOT_EXERCISED, verdict, tuple(reasons), found, slo, all_unjudged, names
        )
    if not reasons:
        return Outcome(True, EXIT_EXPECTED, verdict, (), found, slo, all_unjudged)
    definite = len(reasons) - unknowns - len(blind)
    if definite:
        code = EXIT_UNEXPECTED
    elif blind:
        code = EXIT_NOT_JUDGED
    else:
        code = EXIT_UNKNOWN
    return Outcome(False, code, verdict, tuple(reasons), found, slo, all_unjudged)


def not_exercised(wanted: Any, results: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The ``expect.effects`` entries whose fault did not bite, each with why.

    An entry names a fault by its id in the schedule (``f-2``) or by its fault name
    (``slow-sync``: every such fault of the run). It is exercised when results.json's
    ``evidence.faults`` has such a fault and every one of them has effect ``seen``; a
    fault missing from the evidence (it never started, a trigger that never held, a
    results.json from before evidence existed) is not."""
    evidence = results.get("evidence")
    faults = evidence.get("faults") if isinstance(evidence, Mapping) else None
    entries = [f for f in faults if isinstance(f, Mapping)] if isinstance(faults, list) else []
    out = []
    for name in wanted if isinstance(wanted, list | tuple) else [wanted]:
        name = str(name)
        matches = [f for f in entries if name in (f.get("name"), f.get("family"))]
        if not matches:
            why = "no such fault in results.json's evidence (never started, or not checked)"
            out.append((name, why))
            continue
        idle = [f for f in matches if f.get("effect") != "seen"]
        if idle:
            why = "; ".join(
                f"{f.get('name')} {f.get('effect', 'not-measured')}: {f.get('observed', '')}"
                for f in idle
            )
            out.append((name, why))
    return out


def no_elr_election(results: Mapping[str, Any]) -> str | None:
    """Why results.json shows no election of a leader from the ELR (``stats.isr.elections
    .from_elr``: a clean election of a replica outside the ISR, KIP-966's defence), or
    None when it shows one."""
    stats = results.get("stats")
    isr = stats.get("isr") if isinstance(stats, Mapping) else None
    elections = isr.get("elections") if isinstance(isr, Mapping) else None
    if not isinstance(elections, Mapping) or "from_elr" not in elections:
        return "no election counts from controller.jsonl in results.json"
    count = elections["from_elr"]
    if isinstance(count, int) and count > 0:
        return None
    told = ", ".join(f"{k} {v}" for k, v in elections.items() if k != "from_elr")
    return f"no leader elected from the ELR (elections: {told})"


def longest_offline(results: Mapping[str, Any]) -> float | None:
    """The longest offline window of a run in seconds (0 when there was none), None when
    results.json does not say (``stats.availability.offline_windows``)."""
    stats = results.get("stats")
    availability = stats.get("availability") if isinstance(stats, Mapping) else None
    windows = availability.get("offline_windows") if isinstance(availability, Mapping) else None
    if not isinstance(windows, list):
        return None
    lengths = [
        float(w["length_s"])
        for w in windows
        if isinstance(w, Mapping) and isinstance(w.get("length_s"), int | float)
    ]
    return max(lengths, default=0.0)


def _excused(verdict: Any, found: tuple[str, ...], allowed: set[str]) -> Any:
    """The verdict the run would have without the explicitly allowed kinds: an invalid
    verdict whose every invalidating kind is allowed counts as valid (or unknown, with
    unseen records). An invalid verdict with no anomaly behind it stays invalid."""
    invalidating = [k for k in found if k not in INFORMATIONAL and k != "unseen"]
    if verdict is not False or not invalidating or not set(invalidating) <= allowed:
        return verdict
    return "unknown" if "unseen" in found else True


def allowed_everywhere(value: Any) -> bool:
    """Whether every occurrence of an anomaly (results.json's entry) is allowed by the
    run's own settings (an unclean election with unclean leader election enabled)."""
    return _count(value) > 0 and _allowed(value) >= _count(value)


def _allowed(value: Any) -> int:
    if isinstance(value, Mapping):
        n = value.get("allowed", 0)
        return int(n) if isinstance(n, int | float) else 0
    return 0


def excused_by_cause(value: Any, causes: set[str]) -> bool:
    """Whether every occurrence of an anomaly (results.json's entry) has one of ``causes``
    (an expectation's ``allowed_causes``)."""
    return bool(causes) and _count(value) > 0 and _caused(value, causes) >= _count(value)


def _caused(value: Any, causes: set[str]) -> int:
    """Occurrences of an anomaly put down to one of ``causes`` (its ``causes`` counts)."""
    by_cause = value.get("causes") if isinstance(value, Mapping) else None
    if not isinstance(by_cause, Mapping):
        return 0
    return sum(int(n) for c, n in by_cause.items() if c in causes and isinstance(n, int))


def _count(value: Any) -> int:
    if isinstance(value, Mapping):
        count = value.get("count", 1)
        return int(count) if isinstance(count, int | float) else 1
    if isinstance(value, int):
        return value
    return 1
