"""History format 1.2 and 1.3 in the Spark job: the hand-written histories of
tests/unit/fixtures/txn (every transactional kind with its near misses, a clean run, and
1.3's txn-end, copier reads and unknown partitions) give the counts in their
expected.json, from JSON lines and from the Parquet export.

Every run goes through the test session's ONE run_job call (conftest.py ``one_job``).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kchaos.harness.analysis.job import run_job
from kchaos.harness.analysis.lines import event_problem
from kchaos.harness.analysis.load import txn_line_bad
from kchaos.harness.analysis.schema import history_schema
from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.anomalies import DATA_KINDS, TXN_KINDS

from corpus import data_counts, run_dir  # isort: skip

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "txn"


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("txn_fixture_build", FIXTURES / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fixture_files_are_what_build_py_writes() -> None:
    for name, text in _builder().files().items():
        assert (FIXTURES / name).read_text() == text, f"{name}: run build.py again"


def test_txn_kinds_are_data_kinds() -> None:
    assert set(TXN_KINDS) <= set(DATA_KINDS)


@pytest.fixture(scope="module")
def analysed(one_job: Any) -> dict[str, Any]:
    return {name: one_job.of(path) for name, path in one_job.txn.items()}


@pytest.mark.spark
@pytest.mark.parametrize(
    ("run", "fixture"),
    [
        ("many", "many.jsonl"),
        ("clean", "clean.jsonl"),
        ("many-parquet", "many.jsonl"),
        ("v13", "v13.jsonl"),
    ],
)
def test_counts_per_kind_are_the_expected_ones(
    analysed: dict[str, Any], run: str, fixture: str
) -> None:
    expected = json.loads((FIXTURES / "expected.json").read_text())[fixture]
    summary = analysed[run].summary
    assert data_counts(summary["anomalies"]) == expected["anomalies"]
    assert summary["valid"] == expected["valid"]


@pytest.mark.spark
def test_parquet_copy_was_read(analysed: dict[str, Any]) -> None:
    assert analysed["many-parquet"].summary["stats"]["input"] == "parquet"


def _examples(analysed: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return list(analysed["many"].summary["anomalies"][kind]["examples"])


@pytest.mark.spark
def test_examples_name_the_transaction_and_its_values(analysed: dict[str, Any]) -> None:
    lost = {
        (e["value"], e["txn"], e["transactional_id"]) for e in _examples(analysed, "lost-write")
    }
    assert lost == {
        ("b2", "T2", "tp1"),
        ("c1", "T3", "tp1"),
        ("c2", "T3", "tp1"),
        ("g2", "T7", "tp1"),
    }
    torn = {e["txn"]: (e["present"], e["missing"]) for e in _examples(analysed, "torn-transaction")}
    assert torn == {"T2": (["b1"], ["b2"]), "T5": (["e1"], ["e2"]), "T7": (["g1"], ["g2"])}
    (zombie,) = _examples(analysed, "zombie-commit")
    assert (zombie["txn"], zombie["process"], zombie["fenced_by_process"]) == ("T9", "3", "4")
    assert zombie["values"] == ["z2"]
    aborted = {e["value"]: e["reader"] for e in _examples(analysed, "aborted-read")}
    assert aborted == {"d1": "poll", "e1": "drain"}
    (hanging,) = _examples(analysed, "hanging-transaction")
    assert (hanging["topic"], hanging["partition"], hanging["last_stable_offset"]) == ("h", 1, 2)
    assert hanging["timeout_ms"] == 60_000 and hanging["waited_ms"] > 60_000
    (dup,) = _examples(analysed, "eos-duplicate")
    assert (dup["value"], dup["copy_values"]) == ("i3", ["o3a", "o3b"])
    (lost_in,) = _examples(analysed, "eos-lost")
    assert (lost_in["value"], lost_in["offset"], lost_in["committed_position"]) == ("i4", 3, 4)


@pytest.mark.spark
def test_format_1_3_examples(analysed: dict[str, Any]) -> None:
    """v13.jsonl: the zombie dated by its txn-end, the copier's reads, and the values
    whose partition is unknown (build.py says why each is what it is)."""
    anomalies = analysed["v13"].summary["anomalies"]
    (zombie,) = anomalies["zombie-commit"]["examples"]
    assert (zombie["txn"], zombie["fenced_by_process"]) == ("T20", "2")
    assert zombie["commit_called_index"] > zombie["fencing_init_index"] > zombie["invoke_index"]
    (aborted,) = anomalies["aborted-read"]["examples"]
    assert (aborted["value"], aborted["reader"], aborted["txn"]) == ("x1", "consumed", "IN1")
    assert [e["value"] for e in anomalies["uncommitted-read"]["examples"]] == ["x3"]
    lost = sorted(e["value"] for e in anomalies["lost-write"]["examples"])
    assert lost == ["c-y1", "q2"]
    unseen = sorted(e["value"] for e in anomalies["unseen"]["examples"])
    assert unseen == ["c-y2", "r2", "s2"]


@pytest.mark.spark
def test_transaction_stats(analysed: dict[str, Any]) -> None:
    tx = analysed["many"].summary["stats"]["transactions"]
    assert (tx["ok"], tx["fail"], tx["info"], tx["in_flight"]) == (15, 3, 1, 0)
    assert tx["values"]["fail"] == 5 and tx["values"]["info"] == 2
    assert tx["by_transactional_id"]["tz"] == {"zombie-commit": 1}
    assert tx["by_transactional_id"]["tp1"]["torn-transaction"] == 3
    assert "transactions" in analysed["clean"].summary["stats"]


@pytest.mark.spark
def test_timeout_from_run_json(analysed: dict[str, Any]) -> None:
    anomalies = analysed["many-long-timeout"].summary["anomalies"]
    assert "hanging-transaction" not in anomalies
    assert anomalies["eos-lost"]["count"] == 1


# Bad transactional input is named. Line rules: checked without a job (event_problem)
# and, all at once, by the Spark expression that finds such lines; table rules: each in
# a job of its own (a job stops at the first).
def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def _text(events: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


def _bad_lines() -> list[tuple[str, dict[str, Any], str]]:
    events = _lines((FIXTURES / "many.jsonl").read_text())
    assign = next(e for e in events if e["f"] == "assign")
    invoke = next(e for e in events if e["f"] == "txn" and e.get("offsets"))
    end = {"index": 0, "time": 0, "process": 1, "type": "invoke", "f": "txn-end", "txn": "T1"}
    return [
        ("txn-end-action", {**end, "action": "rollback"}, "action"),
        ("txn-end-no-action", end, "action"),
        ("txn-end-no-txn", {**end, "action": "commit", "txn": None}, "txn"),
        ("txn-end-not-invoke", {**end, "action": "commit", "type": "ok"}, "type"),
        ("isolation", {**assign, "isolation": "serializable"}, "isolation"),
        ("no-sends", {**invoke, "sends": []}, "sends"),
        ("send-without-value", {**invoke, "sends": [{"topic": "t"}]}, "sends[0].value"),
        (
            "position",
            {**invoke, "offsets": {"group": "g", "positions": [["in", 0]]}},
            "offsets.positions[0]",
        ),
    ]


@pytest.mark.parametrize(("name", "event", "field"), _bad_lines())
def test_bad_transactional_line_is_named(name: str, event: dict[str, Any], field: str) -> None:
    problem = event_problem(event)
    assert problem is not None and problem[0] == field, (name, problem)


@pytest.mark.spark
def test_spark_finds_every_bad_transactional_line(spark: Any, tmp_path: Path) -> None:
    good = _lines((FIXTURES / "many.jsonl").read_text())
    bad = [event for _, event, _ in _bad_lines()]
    path = tmp_path / "lines.jsonl"
    path.write_text(_text(good + bad))
    df = spark.read.schema(history_schema(with_corrupt=False)).json(str(path))
    flagged = df.filter(txn_line_bad()).select("index").collect()
    assert len(flagged) == len(bad)


def _spoil_orphan(ev: list[dict[str, Any]]) -> None:
    first = next(i for i, e in enumerate(ev) if e["f"] == "txn")
    ev[first]["txn"] = "T-renamed"  # its completion is now without an invoke


def _spoil_txn_end(ev: list[dict[str, Any]]) -> None:
    last = ev[-1]
    ev.append({"index": last["index"] + 1, "time": last["time"], "process": 1,
               "type": "invoke", "f": "txn-end", "txn": "T1", "action": "commit"})  # fmt: skip


def _spoil_copy(ev: list[dict[str, Any]]) -> None:
    sends = next(e for e in ev if e["f"] == "txn" and e.get("consumed"))["sends"]
    sends[0]["copy_of"] = "never-consumed"


@pytest.mark.spark
@pytest.mark.parametrize(
    ("name", "spoil", "field"),
    [
        ("orphan", _spoil_orphan, "txn"),
        ("stray-copy", _spoil_copy, "copy_of"),
        ("txn-end-after-completion", _spoil_txn_end, "txn"),
    ],
)
def test_bad_transactional_input_is_named(
    spark: Any, tmp_path: Path, name: str, spoil: Any, field: str
) -> None:
    events = _lines((FIXTURES / "many.jsonl").read_text())
    spoil(events)
    run = run_dir(tmp_path, name, _text(events))
    with pytest.raises(HistoryError) as err:
        run_job([run], spark=spark, write=False)
    text = str(err.value)
    assert "history.jsonl" in text and field in text, text


def test_fixtures_readme_lists_every_file() -> None:
    readme = (FIXTURES / "README.md").read_text()
    for name in ("many.jsonl", "clean.jsonl", "v13.jsonl", "expected.json", "build.py"):
        assert name in readme
