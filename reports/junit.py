"""junit.xml: one test case per anomaly family, per SLO threshold, and the expectation.

A kind results.json lists under ``unjudged`` (its source was not read) fails its test
case where the scenario requires or forbids it, and says so in the case's output
otherwise; a run that ended "not judged" fails the expectation case, as does any run
that did not end as expected.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

from kchaos.harness.rundir.anomalies import KINDS as ANOMALY_KINDS
from kchaos.harness.rundir.expect import (
    INFORMATIONAL,
    Outcome,
    allowed_everywhere,
    evaluate,
    excused_by_cause,
    verdict_text,
)
from kchaos.harness.rundir.names import RESULTS_JSON
from kchaos.reports.rundata import RunData


def _case(suite: ET.Element, cls: str, name: str, failure: str | None, out: str = "") -> None:
    case = ET.SubElement(suite, "testcase", classname=cls, name=name, time="0")
    if failure is not None:
        ET.SubElement(case, "failure", message=failure, type="kchaos").text = failure
    if out:
        ET.SubElement(case, "system-out").text = out


def _count(body: Any) -> int:
    if isinstance(body, dict):
        return int(body.get("count", 1))
    return int(body or 0)


def run_suite(data: RunData, outcome: Outcome | None = None) -> ET.Element:
    """A <testsuite> for one run."""
    outcome = outcome or evaluate(data.expect, data.results)
    cls = f"kchaos.{data.scenario_name}"
    suite = ET.Element("testsuite", name=cls, timestamp=str(data.run.start or ""))
    expect = data.expect
    required = set(expect.get("anomalies") or ())
    anomalies = (data.results or {}).get("anomalies") or {}
    # what the expectation's judgement (harness.rundir.expect.evaluate) lets a run have:
    # the allowed kinds, the reported-only ones, those the run's own settings permit at
    # every occurrence and those whose every occurrence has an excused cause
    allowed = set(expect.get("allowed") or ()) | INFORMATIONAL
    causes = set(expect.get("allowed_causes") or ())
    allowed |= {
        k for k, v in anomalies.items() if allowed_everywhere(v) or excused_by_cause(v, causes)
    }
    definite = expect.get("valid", True) not in (None, "any")
    unjudged = (data.results or {}).get("unjudged")
    unjudged = unjudged if isinstance(unjudged, dict) else {}
    forbidden = set(expect.get("forbid") or ())
    results_missing = data.results is None
    for kind in ANOMALY_KINDS:
        count = _count(anomalies.get(kind))
        failure = None
        blind = f"not judged: {unjudged[kind]}" if kind in unjudged and not count else None
        if results_missing:
            failure = f"no {RESULTS_JSON}: the history was not checked"
        elif blind is not None and (kind in required or kind in forbidden):
            failure = blind
        elif kind in required and count == 0:
            failure = f"negative control: expected {kind}, none found"
        elif count and kind in forbidden:
            failure = f"{count} {kind} found (forbidden)"
        elif count and kind not in required and kind not in allowed and definite:
            failure = f"{count} {kind} found"
        out = f"{count} found" if count else (blind or "")
        if kind == "offline" and data.offline:
            out = "; ".join(
                f"{o.name} from {o.start_s:.1f}s for {o.length_s:.1f}s" for o in data.offline
            )
        _case(suite, cls, f"anomaly {kind}", failure, out)
    for name, passed in sorted(outcome.slo.items()):
        _case(suite, cls, f"slo {name}", None if passed else f"threshold {name} not met")
    verdict = f"verdict {verdict_text(outcome.verdict)}"
    failed = None if outcome.expected else f"{outcome.label}: {'; '.join(outcome.reasons)}"
    _case(suite, cls, "expectation", failed, verdict)
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    suite.set("errors", "0")
    suite.set("time", f"{data.end:.3f}")
    return suite


def document(suites: Sequence[ET.Element], name: str = "kchaos") -> bytes:
    root = ET.Element("testsuites", name=name)
    for s in suites:
        root.append(s)
    root.set("tests", str(sum(int(s.get("tests", "0")) for s in suites)))
    root.set("failures", str(sum(int(s.get("failures", "0")) for s in suites)))
    root.set("errors", str(sum(int(s.get("errors", "0")) for s in suites)))
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)
