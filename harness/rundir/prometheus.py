"""``prometheus.json``: what the run's Prometheus server scraped (``--prometheus``).

One JSON object: ``format`` (:data:`FORMAT`), ``url``, ``start_unix``, ``end_unix``,
``time0_unix`` (the wall clock of the history's time 0), ``step_s``, ``errors`` (queries
that failed) and ``series``: ``[{"name", "title", "unit", "query", "labels": {...},
"points": [[seconds since the history's time 0, value], ...]}]``, one entry per label set
(a broker's ``node``, a fault kind). The runner writes it when the run ends
(:mod:`kchaos.harness.run.prometheus`, through :meth:`RunDir.write_prometheus`); the
report draws one figure per ``name`` (:mod:`kchaos.reports.prometheus`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from kchaos.harness.rundir.names import PROMETHEUS_JSON

#: The version of prometheus.json this kchaos writes.
FORMAT = 1


def document(
    *,
    url: str,
    start_unix: float,
    end_unix: float,
    time0_unix: float,
    step_s: float,
    series: Sequence[dict[str, Any]],
    errors: Sequence[str],
) -> dict[str, Any]:
    """The file's content, keys in the order people read them."""
    return {
        "format": FORMAT,
        "url": url,
        "start_unix": round(start_unix, 3),
        "end_unix": round(end_unix, 3),
        "time0_unix": round(time0_unix, 6),
        "step_s": step_s,
        "series": list(series),
        "errors": list(errors),
    }


def load_prometheus(path: str | Path) -> dict[str, Any] | None:
    """A prometheus.json, or None when there is none (the run had no Prometheus server)
    or it is not an object. Lenient, for the report: a file that is not JSON gives no
    series and one error saying so, instead of failing the page."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        doc = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError:
        return {"series": [], "errors": [f"{PROMETHEUS_JSON} is not valid JSON"]}
    return doc if isinstance(doc, dict) else None
