"""The drain against an independent reader (``RUN_DIR/reread.jsonl``).

The runner reads every topic a second time with Kafka's own console consumer
(:mod:`kchaos.harness.run.reread`). Where the drain completed a partition, both must hold the
same record at every offset from its log start offset up to its high watermark. A
difference says the harness misread Kafka (its drain, its client, its recording), so it
is a *harness error* of the run, not a Kafka anomaly: it is listed under
``harness_errors`` in results.json, and a run that would otherwise be valid becomes
``unknown`` (its evidence is in doubt).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kchaos.harness.checker.facts import Facts
from kchaos.harness.checker.model import Anomaly
from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.files import json_lines
from kchaos.harness.rundir.where import LineCursor

KIND = "reader-disagrees"


def compare_reread(facts: Facts, path: Path) -> Anomaly | None:
    """Differences between the drain and the reader's records, or None when the file is
    absent. Bad lines are bad input (HistoryError naming file, line and field)."""
    if not path.exists():
        return None
    if not path.is_file():
        raise HistoryError("expected a file", file=str(path))
    found = Anomaly()
    seen: dict[int, set[int]] = {}
    where = LineCursor(str(path))
    for no, rec in json_lines(path):
        if "topic" not in rec:  # the header line naming the reader
            continue
        where.at(no)
        topic = where.expect(rec, "topic", str)
        part = where.expect(rec, "partition", int)
        off = where.expect(rec, "offset", int)
        value = where.expect(rec, "value", str)
        tp = facts.tp_ids.get((topic, part))
        end = facts.drain_ends.get(tp) if tp is not None else None
        if tp is None or end is None:
            continue  # the drain did not complete this partition: nothing to compare
        if not end.log_start_offset <= off < end.high_watermark:
            continue
        seen.setdefault(tp, set()).add(off)
        vid = facts.drained[tp].get(off)
        if vid is None:
            found.add(_example(facts, tp, off, "only the reader has it", value, None))
        elif facts.value_list[vid] != value:
            found.add(_example(facts, tp, off, "different values", value, facts.value_list[vid]))
    for tp, end in facts.drain_ends.items():
        mine = seen.get(tp, set())
        for off, vid in facts.drained[tp].items():
            if end.log_start_offset <= off < end.high_watermark and off not in mine:
                found.add(
                    _example(facts, tp, off, "only the drain has it", None, facts.value_list[vid])
                )
    return found


def _example(
    facts: Facts, tp: int, off: int, what: str, reader: str | None, drain: str | None
) -> dict[str, Any]:
    return {**facts.where(tp, off), "what": what, "reader_value": reader, "drain_value": drain}
