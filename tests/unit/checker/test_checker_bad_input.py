"""Issue 16 on the checker side: bad input never passes silently, never crashes.

One test (or a parametrized group) per class of the issue: empty runs are ``unknown``
with a reason, impossible values are exit-3 errors naming file, line and field, a run
directory holding the wrong kinds of files is an error rather than a traceback, and a
huge record value is shown truncated without the checker's memory exploding.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from checker_hist import H, good

from kchaos.cli.main import main
from kchaos.harness.checker import RunSettings, check_history, check_run
from kchaos.harness.errors import HistoryError


def _write(path: Path, h: H) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return h.write(path)


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out, out.err


# -- a run that recorded nothing is not valid ------------------------------------------


@pytest.mark.parametrize(
    ("content", "reasons"),
    [
        (b"", ["no sends recorded", "nothing drained"]),
        (b'{"index":0,"time":1,"proc', ["no sends recorded", "nothing drained"]),
    ],
)
def test_an_empty_or_torn_only_history_is_unknown_with_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, reasons: list[str]
) -> None:
    (tmp_path / "history.jsonl").write_bytes(content)
    code, out, _ = _cli(["check", str(tmp_path)], capsys)
    assert code == 2
    assert out.startswith("UNKNOWN")
    for reason in reasons:
        assert f"reason: {reason}" in out
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["valid"] == "unknown" and saved["reasons"] == reasons


def test_a_garbage_only_line_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "history.jsonl").write_bytes(b"\x00\x01garbage")
    with pytest.raises(HistoryError) as err:
        check_run(tmp_path)
    assert err.value.exit_code == 3 and err.value.line == 1
    assert "\x00" not in str(err.value)  # shown escaped


def test_sends_without_any_drain_are_unknown(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.poll(5, (0, 0, "a"))
    r = h.check(tmp_path)
    assert r.valid == "unknown" and r.reasons == ["nothing drained"]


def test_reads_and_a_drain_without_sends_are_unknown(tmp_path: Path) -> None:
    h = H()
    h.drain_all(0, [])
    r = h.check(tmp_path)
    assert r.valid == "unknown" and r.reasons == ["no sends recorded"]


def test_a_real_run_with_sends_and_a_drain_stays_valid(tmp_path: Path) -> None:
    r = good().check(tmp_path)
    assert r.valid is True and r.reasons == []


def test_an_invalid_run_stays_invalid_without_a_drain(tmp_path: Path) -> None:
    h = H()
    h.invoke("a")
    h.done("a", "fail")
    h.poll(5, (0, 0, "a"))  # a failed send read back: aborted-read, whatever else
    r = h.check(tmp_path)
    assert r.valid is False and r.reasons == []


# -- impossible values -------------------------------------------------------------------


def _mutated(tmp_path: Path, line: int, **changes: object) -> HistoryError:
    h = good()
    h.events[line - 1].update(changes)
    path = _write(tmp_path / "history.jsonl", h)
    with pytest.raises(HistoryError) as err:
        check_history(path)
    assert err.value.exit_code == 3 and err.value.line == line
    assert str(err.value).startswith(f"{path}:{line}: ")
    return err.value


@pytest.mark.parametrize(
    ("line", "changes", "field"),
    [
        (2, {"offset": -2}, "offset"),  # -1 is "no offset" (acks=0); below that is nothing
        (2, {"partition": -1}, "partition"),
        (6, {"partition": -3}, "partition"),
        (6, {"high_watermark": -1}, "high_watermark"),
        (6, {"log_start_offset": 5, "high_watermark": 2}, "log_start_offset"),
    ],
)
def test_negative_positions_and_an_inverted_drain_end(
    tmp_path: Path, line: int, changes: dict[str, object], field: str
) -> None:
    assert _mutated(tmp_path, line, **changes).field == field


@pytest.mark.parametrize("key", ["offset", "partition"])
def test_negative_positions_in_read_records(tmp_path: Path, key: str) -> None:
    h = good()
    h.events[4]["records"][1][key] = -1  # the drain line
    path = _write(tmp_path / "history.jsonl", h)
    with pytest.raises(HistoryError) as err:
        check_history(path)
    assert (err.value.line, err.value.field) == (5, f"records.{key}")


def test_an_unknown_fault_phase(tmp_path: Path) -> None:
    h = good()
    h.fault("begin")
    path = _write(tmp_path / "history.jsonl", h)
    with pytest.raises(HistoryError) as err:
        check_history(path)
    assert (err.value.line, err.value.field) == (7, "phase")
    assert "'begin'" in str(err.value)


@pytest.mark.parametrize("value", ["zero", 0, "0", 1.5, "1.5", -2, True, "2.0"])
@pytest.mark.parametrize("where", ["broker", "topic"])
def test_min_insync_replicas_in_run_json_must_be_a_positive_integer(
    tmp_path: Path, value: object, where: str
) -> None:
    if where == "broker":
        data: dict[str, object] = {"broker_config": {"min.insync.replicas": value}}
    else:
        data = {"topics": [{"name": "t", "configs": {"min.insync.replicas": value}}]}
    (tmp_path / "run.json").write_text(json.dumps(data))
    with pytest.raises(HistoryError) as err:
        RunSettings.load(tmp_path)
    assert err.value.exit_code == 3
    assert err.value.field is not None and err.value.field.endswith("min.insync.replicas")


def test_a_valid_min_insync_replicas_is_read(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps({"broker_config": {"min.insync.replicas": "2"}}))
    assert RunSettings.load(tmp_path).min_insync == 2


# -- wrong kinds of files: errors, not tracebacks ---------------------------------------


def test_run_json_that_is_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path / "history.jsonl", good())
    (tmp_path / "run.json").mkdir()
    code, _, err = _cli(["check", str(tmp_path)], capsys)
    assert code == 3 and "run.json" in err and "Traceback" not in err


def test_results_json_that_is_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "history.jsonl", good())
    (tmp_path / "results.json").mkdir()
    code, _, err = _cli(["check", str(tmp_path)], capsys)
    assert code == 3 and "results.json" in err
    assert not (tmp_path / "results.json.tmp").exists()


def test_a_results_tmp_that_cannot_be_written_leaves_nothing(tmp_path: Path) -> None:
    _write(tmp_path / "history.jsonl", good())
    (tmp_path / "results.json.tmp").mkdir()  # in the way of the atomic write
    with pytest.raises(HistoryError) as err:
        check_run(tmp_path)
    assert "results.json" in str(err.value)
    assert not (tmp_path / "results.json").exists()


def test_a_file_given_as_the_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "history.jsonl", good())
    code, _, err = _cli(["check", str(path)], capsys)
    assert code == 3 and "not a directory" in err


def test_history_that_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "history.jsonl").mkdir()
    with pytest.raises(HistoryError) as err:
        check_run(tmp_path)
    assert "not a regular file" in str(err.value)


# -- memory and truncation with one huge record value -----------------------------------

_MEASURE = """
import resource, subprocess, sys
cmd = [sys.executable, "-c", "from kchaos.cli.main import main; main()"]
subprocess.run(cmd + ["check", sys.argv[1]],
               stdout=open(sys.argv[2], "wb"), check=False)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def _pythonpath() -> str:
    """The repository first, then whatever import path this test run has."""
    parts = [str(Path(__file__).parents[3]), os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(p for p in parts if p)


def _peak_kb(run_dir: Path, out: Path) -> int:
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(run_dir), str(out)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": _pythonpath()},
    )
    return int(done.stdout.strip().splitlines()[-1])


def test_one_huge_value_is_truncated_and_memory_stays_near_the_line(tmp_path: Path) -> None:
    size = 30 * 1024 * 1024
    big = "v" * size
    h = H()
    h.send("a", 0, 0)
    h.poll(5, (0, 1, big))  # read at an offset the drain does not hold: uncommitted-read
    h.drain_all(0, ["a"])
    big_dir = tmp_path / "big"
    _write(big_dir / "history.jsonl", h)
    small_dir = tmp_path / "small"
    _write(small_dir / "history.jsonl", good())
    base = _peak_kb(small_dir, tmp_path / "small.out")
    peak = _peak_kb(big_dir, tmp_path / "big.out")
    above_line_mb = (peak - base) / 1024 - size / 2**20
    assert above_line_mb < 200, f"{above_line_mb:.0f} MB above the line's own size"
    out = (tmp_path / "big.out").read_text()
    assert "uncommitted-read" in out and len(out) < 4000
    results = orjson.loads((big_dir / "results.json").read_bytes())
    assert len(orjson.dumps(results)) < 20_000
    example = results["anomalies"]["uncommitted-read"]["examples"][0]
    assert example["value"].endswith(f"({size} characters)")
    assert 3 in example["index"]  # the poll line found, by the value's first bytes
