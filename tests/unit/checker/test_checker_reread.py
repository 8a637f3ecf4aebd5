"""The drain checked against an independent reader's records (RUN_DIR/reread.jsonl)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from checker_hist import H

from kchaos.harness.checker import check_run
from kchaos.harness.errors import HistoryError


def _run(tmp_path: Path, reader: list[tuple[int, int, str]]) -> Path:
    h = H()
    for i, v in enumerate(["a", "b", "c"]):
        h.send(v, 0, i)
    h.send("d", 1, 0)
    h.drain_all(0, ["a", "b", "c"])  # partition 1 is not drained completely
    h.write(tmp_path / "history.jsonl")
    lines = [{"reader": "kafka-console-consumer.sh"}]
    lines += [{"topic": "t", "partition": p, "offset": o, "value": v} for p, o, v in reader]
    (tmp_path / "reread.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return tmp_path


def test_agreement_leaves_the_verdict_alone(tmp_path: Path) -> None:
    r = check_run(_run(tmp_path, [(0, 0, "a"), (0, 1, "b"), (0, 2, "c"), (1, 0, "d")]))
    assert r.valid == "unknown"  # partition 1 undrained: its send is unseen
    assert not r.harness_errors and r.stats["independent_reader"] == {"disagreements": 0}


def test_a_corrupted_drained_record_is_a_harness_error(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.send("b", 0, 1)
    h.drain_all(0, ["a", "CORRUPT"])  # the drain recorded a value Kafka does not hold
    h.write(tmp_path / "history.jsonl")
    (tmp_path / "reread.jsonl").write_bytes(
        b"".join(
            orjson.dumps({"topic": "t", "partition": 0, "offset": o, "value": v}) + b"\n"
            for o, v in ((0, "a"), (1, "b"))
        )
    )
    r = check_run(tmp_path)
    errors = r.harness_errors["reader-disagrees"]
    assert errors.count == 1
    ex = errors.examples[0]
    assert ex["offset"] == 1 and ex["reader_value"] == "b" and ex["drain_value"] == "CORRUPT"
    assert r.valid is False  # the drain's wrong value is also a lost write for the checker
    data = orjson.loads((tmp_path / "results.json").read_bytes())
    assert data["harness_errors"]["reader-disagrees"]["count"] == 1
    assert any("independent reader" in reason for reason in data["reasons"])


def test_missing_and_extra_records_on_both_sides(tmp_path: Path) -> None:
    r = check_run(_run(tmp_path, [(0, 0, "a"), (0, 2, "c"), (0, 1, "b"), (0, 7, "x")]))
    assert "reader-disagrees" not in r.harness_errors  # offset 7 is above the high watermark
    r = check_run(_run(tmp_path, [(0, 0, "a"), (0, 2, "c")]))
    ex = r.harness_errors["reader-disagrees"].examples
    assert [(e["offset"], e["what"]) for e in ex] == [(1, "only the drain has it")]


def test_a_valid_run_with_a_disagreement_becomes_unknown(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.drain_all(0, ["a"])
    h.write(tmp_path / "history.jsonl")
    rec = {"topic": "t", "partition": 0, "offset": 0, "value": "zzz"}
    (tmp_path / "reread.jsonl").write_bytes(orjson.dumps(rec) + b"\n")
    r = check_run(tmp_path)
    assert r.valid == "unknown" and r.harness_errors["reader-disagrees"].count == 1


def test_a_bad_reader_line_is_bad_input(tmp_path: Path) -> None:
    _run(tmp_path, [])
    (tmp_path / "reread.jsonl").write_bytes(b'{"topic": "t", "partition": "0"}\n')
    with pytest.raises(HistoryError) as err:
        check_run(tmp_path)
    assert err.value.line == 1 and err.value.field == "partition"
