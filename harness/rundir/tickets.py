"""A library scenario's Kafka ticket: which releases it affects, and what a run on one shows.

A scenario that reproduces a known Kafka bug names it in a ``ticket`` section::

    ticket:
      id: KAFKA-15046
      title: fsync under the log lock leaves a broker registered but not serving
      commit: 1d0c8f9...           # the fixing commit in apache/kafka (the authority)
      fixed_in: ["3.6.2", "3.7.0"] # first fixed release of each line the fix reached
      affected_from: "3.5.0"       # oldest release the scenario can run on (optional)
      runs_before: "4.1.0"         # first release it cannot run on (optional), and why:
      runs_before_why: "its 8 KiB segments are below 4.1's 1 MiB minimum segment.bytes"
      compare: ["3.6.1", "3.7.0"]  # releases `kchaos matrix --tag known-bug` runs by default
      kind: broker-stalled         # the anomaly kind the bug shows on an affected release
      fixed_by: ""                 # what removed it, when not the ticket's own fix (a KIP)

The id is a Kafka ticket (KAFKA-N) or, for a behaviour a KIP removed rather than a
ticket's fix, the KIP (KIP-N); ``fixed_by`` then names what removed it (KIP-501 was never
implemented: its scenario's offline window goes with KIP-966's eligible leader replicas).

A release is *fixed* when it is at or past a ``fixed_in`` release of its own line
(major.minor), or on a line newer than every ``fixed_in`` release; every other release
from ``affected_from`` on is *affected*. A release older than ``affected_from``, or at or
past ``runs_before`` (a release the scenario cannot run on, for the reason given), is
outside the scenario's range, and running it there is bad input.

What a run shows (:meth:`Ticket.status`): on an affected release, ``affected`` when the run
ended as its ``expect`` says (the scenario expects the bug's anomaly there) and ``not
reproduced here`` otherwise; on a fixed release, ``not affected`` when it ended as expected
(valid), ``seen on a fixed release`` when it did not and found the bug's own ``kind``, and
``not as expected on a fixed release`` when it did not for another reason (a fault that did
not start, an SLO): that run says nothing of the bug either way. A run that ended "not
judged" (the kind its ``expect`` names was unjudged, kchaos.harness.rundir.expect) shows
neither: ``not judged`` (:meth:`Ticket.status_of_seeds`).

The run directory keeps the section inside run.json's ``scenario``; the reports read it
from there (``RunJson.scenario.ticket``), so they need nothing but the run directory.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kchaos.harness.errors import ConfigError

#: The tag every scenario with a ticket carries (``kchaos scenarios --tag known-bug``).
KNOWN_BUG_TAG = "known-bug"

AFFECTED = "affected"
NOT_REPRODUCED = "not reproduced here"
#: Runs whose ticket's kind could not be judged (its source was not read).
NOT_JUDGED = "not judged"
NOT_AFFECTED = "not affected"
SEEN_WHEN_FIXED = "seen on a fixed release"
#: A run on a fixed release that did not end as expected, but without the bug's own kind.
OTHER_WHEN_FIXED = "not as expected on a fixed release (not the bug)"
#: A release older than the scenario's ``affected_from``: no run, nothing claimed either way
#: (``kchaos matrix --tag`` lists it instead of refusing the whole table).
OUTSIDE_RANGE = "outside the scenario's range"

_RELEASE = re.compile(r"^([0-9]+)\.([0-9]+)\.([0-9]+)$")
_TICKET_ID = re.compile(r"^(KAFKA|KIP)-[0-9]+$")
_KIND = re.compile(r"^[a-z][a-z0-9-]*$")

#: A release number (3.7.0) as the scenario file's JSON Schema writes it.
RELEASE_PATTERN = r"^[0-9]+\.[0-9]+\.[0-9]+$"
# What the scenario schema (generated from these fields' metadata by
# kchaos.harness.scenario.schemagen) says of a release number.
_A_RELEASE = {"pattern": RELEASE_PATTERN}


#: Makes the error for a field of the section: (path inside ``ticket``, message).
ErrorAt = Callable[[tuple[str | int, ...], str], Exception]


def _plain_error(path: tuple[str | int, ...], message: str) -> Exception:
    field = "ticket" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    return ConfigError(message, field=field)


def release(text: str) -> tuple[int, int, int]:
    """``"3.6.2"`` -> (3, 6, 2); ValueError otherwise."""
    match = _RELEASE.fullmatch(str(text).strip())
    if match is None:
        raise ValueError(f"{text!r} is not a release number such as 3.7.0")
    major, minor, patch = (int(g) for g in match.groups())
    return major, minor, patch


@dataclass(frozen=True)
class Ticket:
    id: str = field(metadata={"pattern": _TICKET_ID.pattern})
    title: str = field(metadata={"minLength": 5})
    fixed_in: tuple[str, ...] = field(metadata={"minItems": 1, "items": _A_RELEASE})
    commit: str = field(default="", metadata={"pattern": "^[0-9a-f]{7,40}$"})
    affected_from: str | None = field(default=None, metadata=_A_RELEASE)
    compare: tuple[str, ...] = field(default=(), metadata={"items": _A_RELEASE})
    kind: str = field(default="", metadata={"pattern": _KIND.pattern})
    fixed_by: str = ""
    runs_before: str | None = field(default=None, metadata=_A_RELEASE)
    runs_before_why: str = ""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], error: ErrorAt = _plain_error) -> Ticket:
        """Build and check one ``ticket`` section; ``error`` makes the exception for a
        field (the scenario loader's names file and line; by default a ConfigError)."""

        def rel(value: Any, *path: str | int) -> tuple[int, int, int]:
            try:
                return release(str(value))
            except ValueError as exc:
                raise error(path, str(exc)) from None

        ident = str(data.get("id", ""))
        if not _TICKET_ID.fullmatch(ident):
            raise error(
                ("id",), f"expected a Kafka ticket or KIP such as KAFKA-15046, got {ident!r}"
            )
        kind = str(data.get("kind") or "")
        if kind and not _KIND.fullmatch(kind):
            raise error(("kind",), f"expected an anomaly kind such as lost-write, got {kind!r}")
        fixed = [str(v) for v in data.get("fixed_in") or ()]
        if not fixed:
            raise error(("fixed_in",), "name the first release with the fix")
        lines: dict[tuple[int, int], str] = {}
        for i, v in enumerate(fixed):
            line = rel(v, "fixed_in", i)[:2]
            if line in lines:
                raise error(("fixed_in", i), f"{lines[line]} is on the same release line")
            lines[line] = v
        first_fix = min(fixed, key=release)
        start = data.get("affected_from")
        if start is not None and rel(start, "affected_from") >= release(first_fix):
            raise error(
                ("affected_from",), f"{start} is not older than the first fix ({first_fix})"
            )
        end = data.get("runs_before")
        why = str(data.get("runs_before_why") or "")
        if end is not None:
            if rel(end, "runs_before") <= release(first_fix):
                raise error(("runs_before",), f"{end} is not past the first fix ({first_fix})")
            if not why:
                raise error(("runs_before_why",), "say why the scenario cannot run there")
        compare = [str(v) for v in data.get("compare") or ()]
        for i, v in enumerate(compare):
            if rel(v, "compare", i) < release(str(start or "0.0.0")):
                raise error(("compare", i), f"{v} is older than affected_from ({start})")
            if end is not None and release(v) >= release(str(end)):
                raise error(("compare", i), f"{v} is not before runs_before ({end})")
        return cls(
            id=ident,
            title=str(data.get("title", "")),
            fixed_in=tuple(sorted(fixed, key=release)),
            commit=str(data.get("commit", "")),
            affected_from=None if start is None else str(start),
            compare=tuple(compare),
            kind=kind,
            fixed_by=str(data.get("fixed_by") or ""),
            runs_before=None if end is None else str(end),
            runs_before_why=why,
        )

    def covers(self, version: str) -> bool:
        """Whether the scenario can run on ``version`` (not older than ``affected_from``,
        older than ``runs_before``)."""
        v = release(version)
        if self.affected_from is not None and v < release(self.affected_from):
            return False
        return self.runs_before is None or v < release(self.runs_before)

    def is_fixed(self, version: str) -> bool:
        v = release(version)
        fixes = [release(f) for f in self.fixed_in]
        same_line = [f for f in fixes if f[:2] == v[:2]]
        if same_line:
            return v >= same_line[0]
        return v[:2] > max(fixes)[:2]

    def range_note(self) -> str:
        """The scenario's range in words, for a release it does not cover."""
        why = f": {self.runs_before_why}" if self.runs_before else ""
        return f"the scenario runs {self.range_text()}{why}"

    def range_text(self) -> str:
        """The releases the scenario runs on, in words."""
        if self.affected_from and self.runs_before:
            return f"from Kafka {self.affected_from} to before {self.runs_before}"
        if self.runs_before:
            return f"on releases before Kafka {self.runs_before}"
        if self.affected_from:
            return f"from Kafka {self.affected_from} on"
        return "on every release"

    def check_release(self, version: str, scenario: str) -> None:
        """ConfigError when ``version`` is outside the scenario's range."""
        if not self.covers(version):
            why = f": {self.runs_before_why}" if self.runs_before else ""
            raise ConfigError(
                f"{scenario} reproduces {self.id} {self.range_text()} ({self.fix_note()}); "
                f"Kafka {version} is outside that range{why}",
                field="kafka-version",
            )

    def fix_note(self) -> str:
        """The fix in words: "fixed in 3.6.2, 3.7.0", or for a behaviour removed by
        something else (``fixed_by``) "gone from 4.1.0 on: KIP-966's ..."."""
        if self.fixed_by:
            return f"gone from {', '.join(self.fixed_in)} on: {self.fixed_by}"
        return f"fixed in {', '.join(self.fixed_in)}"

    def saw_bug(self, kinds: Collection[str]) -> bool:
        """Whether a run that found ``kinds`` (anomaly kinds with a count above 0) found
        the bug's own kind. A ticket without ``kind`` cannot tell: any kind counts."""
        return bool(kinds) if not self.kind else self.kind in kinds

    def status(self, version: str, expected: bool, kinds: Collection[str] | None = None) -> str:
        """What a run on ``version`` that ended as expected (or not) says of the ticket;
        ``kinds``: the anomaly kinds the run found (None: unknown, taken as the bug's)."""
        if self.is_fixed(version):
            if expected:
                return NOT_AFFECTED
            if kinds is None or self.saw_bug(kinds):
                return SEEN_WHEN_FIXED
            return OTHER_WHEN_FIXED
        return AFFECTED if expected else NOT_REPRODUCED

    def status_of_seeds(
        self,
        version: str,
        expected: Sequence[bool],
        kinds: Sequence[Collection[str]] | None = None,
        not_judged: int = 0,
    ) -> str:
        """What several seeds on one release show together: on an affected release one
        seed in which the bug happened is enough (it did happen there), on a fixed release
        one seed that saw the bug's kind is enough to say so (``kinds``: each seed's
        anomaly kinds, in the order of ``expected``). ``not_judged`` of the seeds not as
        expected ended "not judged": they show nothing either way, so where no other seed
        decides, the release is ``not judged``."""
        if not self.is_fixed(version):
            if not any(expected) and not_judged:
                return NOT_JUDGED
            return self.status(version, any(expected))
        if all(expected):
            return NOT_AFFECTED
        if expected.count(False) <= not_judged:
            return NOT_JUDGED
        if kinds is None:
            return SEEN_WHEN_FIXED
        missed = [k for ok, k in zip(expected, kinds, strict=True) if not ok]
        return SEEN_WHEN_FIXED if any(self.saw_bug(k) for k in missed) else OTHER_WHEN_FIXED

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "title": self.title, "fixed_in": list(self.fixed_in)}
        if self.commit:
            out["commit"] = self.commit
        if self.affected_from is not None:
            out["affected_from"] = self.affected_from
        if self.compare:
            out["compare"] = list(self.compare)
        if self.kind:
            out["kind"] = self.kind
        if self.fixed_by:
            out["fixed_by"] = self.fixed_by
        if self.runs_before is not None:
            out["runs_before"] = self.runs_before
            out["runs_before_why"] = self.runs_before_why
        return out
