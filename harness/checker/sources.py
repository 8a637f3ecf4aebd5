"""What each verdict rests on: the sources the checkers read, and the kinds left unjudged.

A checker declares, once, the sources it reads and the kinds that rest on each
(:class:`Source`, its module's ``SOURCES``); at every run it says of each whether it was
read (:meth:`CheckOutcome.read`, :meth:`CheckOutcome.not_read`). A kind whose source
was needed and not read is neither present nor absent: it is *unjudged*, with the
reason (results.json's ``unjudged``), unless the declaration names a ``fallback`` that
was read (elections from the monitor's samples where controller.jsonl is absent). A
source is not needed where the run had nothing it could show (no crash fault: no
crash-time files to read); its kinds are judged, and found absent. A kind found
present is present, whatever else could not be read. docs/checker.md, "Evidence".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kchaos.harness.rundir.anomalies import KINDS
from kchaos.harness.rundir.names import (
    CONTROLLER_JSONL,
    HISTORY_JSONL,
    REPLICAS_JSONL,
    REREAD_JSONL,
)

if TYPE_CHECKING:
    from kchaos.harness.checker.facts import Facts
    from kchaos.harness.checker.model import CheckOutcome

#: The sources, by the name results.json gives them.
HISTORY = HISTORY_JSONL
CONTROLLER = CONTROLLER_JSONL
#: the monitor's ``metadata`` lines in the history (leaders and ISRs as sampled)
SAMPLES = "metadata-samples"
#: ``logs/<container>/server.log``, the brokers' own logs
BROKER_LOGS = "broker-logs"
REPLICAS = REPLICAS_JSONL
#: the independent re-read of every drained topic (a check of the harness, no kind)
REREAD = REREAD_JSONL
#: what a page-cache-losing crash left on disk, scanned by the fault before the restart
CRASH_FILES = "crash-time-files"


@dataclass(frozen=True)
class Source:
    """One source a checker reads, the kinds that rest on it, and where they are judged
    from instead when it was not read (``fallback``, another source's name)."""

    name: str
    kinds: tuple[str, ...]
    fallback: str | None = None

    def __post_init__(self) -> None:
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown:
            raise ValueError(f"unknown anomaly kind(s) {unknown} for source {self.name!r}")


@dataclass(frozen=True)
class Reading:
    """Whether a source was read in this run; why not; whether the run needed it."""

    read: bool
    why: str | None = None
    needed: bool = True


def unjudged_of(
    declared: Iterable[Source], readings: Mapping[str, Reading], extra: Mapping[str, str]
) -> dict[str, str]:
    """The kinds one checker could not judge, with the reason: those of a needed source
    not read (and no fallback read), and ``extra`` (what the checker said itself)."""
    out: dict[str, str] = {}
    for src in declared:
        reading = readings.get(src.name)
        if reading is None or reading.read or not reading.needed:
            continue
        if src.fallback is not None:
            other = readings.get(src.fallback)
            if other is not None and other.read:
                continue
        for kind in src.kinds:
            _add(out, kind, f"{src.name} not read: {reading.why or 'no reason given'}")
    for kind, why in extra.items():
        _add(out, kind, why)
    return out


def _add(out: dict[str, str], kind: str, why: str) -> None:
    if kind not in out:
        out[kind] = why
    elif why not in out[kind]:
        out[kind] = f"{out[kind]}; {why}"


def sources_json(uses: Iterable[tuple[Iterable[Source], Mapping[str, Reading]]]) -> list[dict]:
    """results.json's ``evidence.sources``: one entry per source over every checker
    (``uses``: each checker's declaration with its readings), in first-use order."""
    merged: dict[str, dict[str, Any]] = {}
    for declared, readings in uses:
        for src in declared:
            reading = readings.get(src.name)
            if reading is None:
                continue  # the checker failed before it said (its verdict is unknown)
            entry = merged.setdefault(
                src.name, {"source": src.name, "read": True, "kinds": [], "needed": False}
            )
            entry["kinds"].extend(k for k in src.kinds if k not in entry["kinds"])
            entry["needed"] = entry["needed"] or reading.needed
            if not reading.read:
                entry["read"] = False
                entry.setdefault("why", reading.why)
                other = readings.get(src.fallback) if src.fallback else None
                if other is not None and other.read and src.fallback is not None:
                    kinds = entry.setdefault("fallback", {}).setdefault(src.fallback, [])
                    kinds.extend(k for k in src.kinds if k not in kinds)
    out = []
    for entry in merged.values():
        entry["kinds"] = sorted(entry["kinds"], key=KINDS.index)
        if entry["read"] or entry["needed"]:
            del entry["needed"]  # said only of a source the run did not need
        out.append(entry)
    return out


def read_controller(out: CheckOutcome, facts: Facts) -> None:
    """Say whether controller.jsonl was read (it is loaded beside the history)."""
    if facts.controller is None:
        out.not_read(CONTROLLER, f"no {CONTROLLER_JSONL} beside the history")
    else:
        out.read(CONTROLLER)


def read_samples(out: CheckOutcome, facts: Facts) -> None:
    """Say whether the monitor's samples were read: needed for every partition
    controller.jsonl does not describe."""
    record = facts.controller
    if any(len(obs.index) for obs in facts.observations):
        out.read(SAMPLES)
    elif any(record is None or not record.covers(*key) for key in facts.tps):
        out.not_read(SAMPLES, "the history has no metadata sample")
    else:
        why = f"no metadata sample; {CONTROLLER_JSONL} describes every partition"
        out.not_read(SAMPLES, why, needed=False)
