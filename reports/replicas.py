"""The "Replicas" section of report.html: the checker's replica-by-replica comparison.

Shown from ``results.json`` (``stats.replicas``, written by
:mod:`kchaos.harness.checker.replicas` from ``replicas.jsonl``), so the page says what
the verdict rests on: per partition, the replicas compared, the offsets compared below
the high watermark, the disagreements (the first few) and producer sequences written
twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from typing import Any

from kchaos.harness.rundir.names import REPLICAS_JSONL

SHOWN = 3  # disagreements and duplicate sequences listed per partition


def _ids(ids: Any) -> str:
    if ids is None:
        return "unknown"
    return "[" + ",".join(str(i) for i in ids) + "]"


def _held(rec: Mapping[str, Any]) -> str:
    if rec.get("held") is False:
        return f"broker {rec.get('broker')}: nothing"
    return (
        f"broker {rec.get('broker')}: {rec.get('value')!s} (leader epoch "
        f"{rec.get('leader_epoch')}, producer {rec.get('producer_id')}/"
        f"{rec.get('producer_epoch')} seq {rec.get('sequence')})"
    )


def _details(part: Mapping[str, Any]) -> str:
    items = []
    for d in (part.get("first_disagreements") or [])[:SHOWN]:
        held = "; ".join(_held(r) for r in d.get("replicas") or [])
        items.append(f"<li>offset {d.get('offset')}: {escape(held)}</li>")
    for d in (part.get("first_duplicate_sequences") or [])[:SHOWN]:
        text = (
            f"producer {d.get('producer_id')}/{d.get('producer_epoch')} sequence "
            f"{d.get('sequence')} at offsets {d.get('offsets')} on brokers {_ids(d.get('brokers'))}"
        )
        items.append(f"<li>{escape(text)}</li>")
    return "<ul>" + "".join(items) + "</ul>" if items else ""


def render(results: Mapping[str, Any] | None) -> str:
    """The section ("" when the run has no replica comparison)."""
    from kchaos.reports.html import table  # the page's own table helper

    stats = ((results or {}).get("stats") or {}).get("replicas")
    if not isinstance(stats, Mapping):
        return ""
    parts = [
        "<h2>Replicas</h2>",
        "<p class='muted'>Every replica's log read from its segment files after the run "
        f"(<a href='{REPLICAS_JSONL}'>{REPLICAS_JSONL}</a>) and compared offset by offset below "
        "the drain's high watermark. A disagreement between two replicas of the final ISR "
        "is a <code>replica-divergence</code>; one involving a replica outside it is "
        "shown as evidence only.</p>",
    ]
    down = stats.get("brokers_unavailable") or {}
    if down:
        text = "; ".join(f"broker {b}: {e}" for b, e in down.items())
        parts.append(f"<p class='warn'>Not read: {escape(text)}</p>")
    rows, css = [], []
    for p in stats.get("partitions") or []:
        disagreements = p.get("disagreements")
        bad = bool(disagreements) or bool(p.get("duplicate_sequences"))
        rows.append(
            [
                escape(f"{p.get('topic')}/{p.get('partition')}"),
                escape(_ids(p.get("replicas"))),
                escape(_ids(p.get("in_sync"))),
                escape(_ids(p.get("unavailable"))) if p.get("unavailable") else "",
                p.get("high_watermark", ""),
                p.get("offsets_compared", escape(str(p.get("compared", "")))),
                "" if disagreements is None else disagreements,
                p.get("duplicate_sequences", ""),
                _details(p),
            ]
        )
        css.append("bad" if bad else "")
    parts.append(
        table(
            [
                "partition",
                "replicas",
                "final ISR",
                "not read",
                "high watermark",
                "offsets compared",
                "disagreements",
                "duplicate producer sequences",
                "first few",
            ],
            rows,
            css,
        )
    )
    totals = {k: stats.get(k) for k in ("offsets_compared", "disagreements", "duplicate_sequences")}
    parts.append(f"<p class='muted'>Totals: {escape(json.dumps(totals))}</p>")
    return "\n".join(parts)
