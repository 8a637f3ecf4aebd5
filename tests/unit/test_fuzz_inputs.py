"""Fuzzing the two inputs users hand to kchaos (issue 16): scenario files and histories.

Malformed scenarios are made from the published JSON Schema (any field it names, set to
a hostile value), from a good scenario (a field deleted or replaced), and at the text
level (hostile characters spliced in). Malformed histories are made from a good history
by changes the history format forbids. The properties checked for every example:

- no traceback: the only exception is kchaos's own bad-input error (exit code 3);
- a history malformed by construction is never judged ``valid``;
- memory stays bounded over the whole run of examples.

Examples are few and small, so the whole module runs in a few seconds.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import tempfile
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from kchaos.cli.check import summary_lines
from kchaos.harness.checker import check_history
from kchaos.harness.errors import HistoryError, InputError
from kchaos.harness.rundir.scenario_model import Scenario
from kchaos.harness.scenario import load_scenario
from kchaos.harness.scenario.loader import schema

pytestmark = pytest.mark.filterwarnings("ignore")

SETTINGS = settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

GOOD_SCENARIO = """\
name: fuzz
description: The good scenario every fuzzed one starts from, long enough.
seed: 3
cluster:
  brokers: 3
  server_properties:
    replica.lag.time.max.ms: 5000
  broker_properties:
    2: {broker.rack: r2}
topics:
  - name: t
    partitions: 2
    replication_factor: 3
    configs: {min.insync.replicas: 2}
workload:
  duration: 60s
  producers: {count: 1, rate: 50, acks: all}
  consumers: {count: 1}
nemesis:
  steps:
    - {fault: pause, at: 10s, for: 5s, target: random}
    - {fault: kill, at: 20s, for: 5s, target: leader:t:1}
checks: {max_offline_seconds: 20}
expect: {valid: true, allowed: [offline]}
"""

HOSTILE: list[Any] = [
    math.nan,
    math.inf,
    -math.inf,
    -1,
    0,
    1.5,
    -0.5,
    10**30,
    "",
    "zero",
    "random:99",
    "broker-42",
    "none",
    "controller-1",
    "leader:nope:0",
    "\x00",
    "1e999s",
    "9" * 40 + "h",
    None,
    True,
    [],
    {},
    [[[[[]]]]],
    {"x": {"y": None}},
]
hostile = st.one_of(
    st.sampled_from(HOSTILE),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)


def _schema_paths() -> list[tuple[str | int, ...]]:
    """Every field the scenario schema names, as a path (list items at index 0)."""
    out: list[tuple[str | int, ...]] = []

    def walk(node: dict[str, Any], path: tuple[str | int, ...]) -> None:
        node = _deref(node)
        for key, sub in node.get("properties", {}).items():
            out.append((*path, key))
            walk(sub, (*path, key))
        items = node.get("items")
        if isinstance(items, dict):
            walk(items, (*path, 0))

    walk(schema(), ())
    return out


def _deref(node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return dict(schema()["$defs"][ref.split("/")[-1]])
    return node


SCHEMA_PATHS = _schema_paths()


def _good_data() -> dict[str, Any]:
    data = YAML(typ="safe").load(GOOD_SCENARIO)
    assert isinstance(data, dict)
    return data


def _leaf_paths(node: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    out = [path] if path else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += _leaf_paths(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _leaf_paths(value, (*path, i))
    return out


def _set(data: Any, path: tuple[str | int, ...], value: Any, delete: bool = False) -> None:
    node = data
    for key in path[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(key, {} if isinstance(key, str) else [])
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            return
    last = path[-1]
    if isinstance(node, dict):
        if delete:
            node.pop(last, None)
        else:
            node[last] = value
    elif isinstance(node, list) and isinstance(last, int) and last < len(node):
        if delete:
            del node[last]
        else:
            node[last] = value


def _dump(data: Any) -> str:
    out = io.StringIO()
    yaml = YAML(typ="safe")
    yaml.allow_unicode = False
    yaml.dump(data, out)
    return out.getvalue()


def _judge_scenario(text: str) -> Scenario | None:
    try:
        sc = load_scenario("fuzz.yaml", text=text)
    except InputError as exc:
        assert exc.exit_code == 3
        assert len(str(exc)) < 1000 and "\x00" not in str(exc)
        return None
    w = sc.workload
    for seconds in (w.duration, w.monitor_interval, w.drain_timeout):
        assert math.isfinite(seconds) and seconds >= 0
    assert w.duration > 0
    for step in sc.nemesis.steps:
        assert math.isfinite(step.at) and step.at + (step.for_ or 0) <= w.duration
    return sc


@contextlib.contextmanager
def _memory_is_bounded() -> Iterator[None]:
    """Peak Python allocation while the body runs, measured by tracemalloc.

    Every fuzzed input here is a few kilobytes, so judging it must stay far below the
    bound. The process's own peak RSS is not used: it belongs to whichever earlier test
    in the same pytest process allocated the most, not to this input.
    """
    tracemalloc.start()
    try:
        yield
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, f"judging one small input peaked at {peak / 2**20:.0f} MB"


def test_the_good_scenario_loads() -> None:
    assert _judge_scenario(GOOD_SCENARIO) is not None
    assert _judge_scenario(_dump(_good_data())) is not None


@SETTINGS
@given(st.sampled_from(SCHEMA_PATHS), hostile)
def test_any_schema_field_set_to_a_hostile_value(path: tuple, value: Any) -> None:
    data = _good_data()
    _set(data, path, value)
    text = _dump(data)
    with _memory_is_bounded():
        _judge_scenario(text)


@SETTINGS
@given(st.data())
def test_a_field_of_the_good_scenario_deleted_or_replaced(data: st.DataObject) -> None:
    scenario = _good_data()
    path = data.draw(st.sampled_from(_leaf_paths(scenario)))
    if data.draw(st.booleans()):
        _set(scenario, path, None, delete=True)
    else:
        _set(scenario, path, data.draw(hostile))
    _judge_scenario(_dump(scenario))


@SETTINGS
@given(st.data())
def test_hostile_text_spliced_into_the_file(data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(GOOD_SCENARIO)))
    piece = data.draw(
        st.one_of(
            st.text(max_size=8),
            st.sampled_from(
                ["\x00", "&a [*a]", "[" * 300, "{" * 300, ": :", "\t", "*x", "!!python"]
            ),
        )
    )
    _judge_scenario(GOOD_SCENARIO[:at] + piece + GOOD_SCENARIO[at:])


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(SCHEMA_PATHS), hostile), min_size=1, max_size=3))
def test_hostile_set_overrides(overrides: list[tuple[tuple, Any]]) -> None:
    sets = []
    for path, value in overrides:
        text = json.dumps(value) if value is not None else "~"
        if isinstance(value, float) and not math.isfinite(value):
            text = ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
        sets.append(".".join(str(p) for p in path) + "=" + text)
    try:
        load_scenario("fuzz.yaml", text=GOOD_SCENARIO, overrides=sets)
    except InputError as exc:
        assert exc.exit_code == 3


# -- histories ---------------------------------------------------------------------------


def _event(index: int, **fields: Any) -> dict[str, Any]:
    return {"index": index, "time": (index + 1) * 1000, **fields}


def _good_history() -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []

    def add(**fields: Any) -> None:
        lines.append(_event(len(lines), **fields))

    add(
        process="monitor",
        type="ok",
        f="metadata",
        topic="t",
        partition=0,
        leader=1,
        isr=[1, 2, 3],
        replicas=[1, 2, 3],
        min_insync=2,
    )
    add(process=0, type="invoke", f="send", topic="t", key="k", value="a")
    add(process=0, type="ok", f="send", topic="t", partition=0, offset=0, value="a")
    add(
        process="nemesis",
        type="info",
        f="fault",
        phase="start",
        id="f-1",
        fault="pause",
        targets=["broker-2"],
        params={},
    )
    add(process=0, type="invoke", f="send", topic="t", key="k", value="b")
    add(process=0, type="ok", f="send", topic="t", partition=0, offset=1, value="b")
    add(
        process="nemesis",
        type="info",
        f="fault",
        phase="stop",
        id="f-1",
        fault="pause",
        targets=["broker-2"],
    )
    add(process=7, type="ok", f="assign", partitions=[["t", 0]])
    add(process=7, type="invoke", f="poll")
    add(
        process=7,
        type="ok",
        f="poll",
        records=[{"topic": "t", "partition": 0, "offset": 0, "value": "a"}],
    )
    add(
        process="drain",
        type="ok",
        f="drain",
        records=[
            {"topic": "t", "partition": 0, "offset": 0, "value": "a"},
            {"topic": "t", "partition": 0, "offset": 1, "value": "b"},
        ],
    )
    add(
        process="drain",
        type="ok",
        f="drain-end",
        topic="t",
        partition=0,
        log_start_offset=0,
        high_watermark=2,
    )
    return lines


def _bytes(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(e) + b"\n" for e in lines)


def _judge_history(data: bytes) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.jsonl"
        path.write_bytes(data)
        try:
            results = check_history(path)
        except HistoryError as exc:
            assert exc.exit_code == 3 and exc.line is not None or exc.file is not None
            assert len(str(exc)) < 1000
            return "error"
    orjson.dumps(results.to_json())  # results.json can be written
    summary_lines(results)  # and the console summary printed
    assert not any(o.error for o in results.checkers.values()), "a checker crashed"
    return results.valid


def test_the_good_history_is_valid() -> None:
    assert _judge_history(_bytes(_good_history())) is True


# Each makes a history the format forbids, or one that is no evidence of a valid run.
def _no_lines(lines: list, d: st.DataObject) -> bytes:
    return b""


def _torn_only(lines: list, d: st.DataObject) -> bytes:
    one = orjson.dumps(lines[d.draw(st.integers(0, len(lines) - 1))])
    return one[: d.draw(st.integers(1, len(one) - 1))]


def _garbage_line(lines: list, d: st.DataObject) -> bytes:
    raw = _bytes(lines).splitlines(keepends=True)
    junk = d.draw(st.binary(min_size=1, max_size=20).filter(lambda b: b"\n" not in b))
    raw.insert(d.draw(st.integers(0, len(raw) - 1)), junk + b"\n")
    return b"".join(raw)


def _bad_position(lines: list, d: st.DataObject) -> bytes:
    i = d.draw(st.sampled_from([2, 5, 11]))
    key = d.draw(
        st.sampled_from(["partition", "offset"] if i != 11 else ["partition", "high_watermark"])
    )
    lines[i][key] = d.draw(
        st.one_of(st.integers(-(2**40), -2), st.sampled_from(["0", 1.5, None, True]))
    )
    return _bytes(lines)


def _bad_record(lines: list, d: st.DataObject) -> bytes:
    i = d.draw(st.sampled_from([9, 10]))
    key = d.draw(st.sampled_from(["partition", "offset", "value", "topic"]))
    lines[i]["records"][0][key] = d.draw(st.sampled_from([-1, -(2**62), "x", None, [], 2.5]))
    if (
        key in ("value", "topic")
        and isinstance(lines[i]["records"][0][key], int)
        and lines[i]["records"][0][key] < 0
    ):
        lines[i]["records"][0][key] = None
    return _bytes(lines)


def _inverted_drain_end(lines: list, d: st.DataObject) -> bytes:
    lines[11]["log_start_offset"] = lines[11]["high_watermark"] + d.draw(st.integers(1, 2**40))
    return _bytes(lines)


def _unknown_phase(lines: list, d: st.DataObject) -> bytes:
    lines[d.draw(st.sampled_from([3, 6]))]["phase"] = d.draw(
        st.text(min_size=0, max_size=8).filter(lambda p: p not in ("start", "stop"))
    )
    return _bytes(lines)


def _broken_header(lines: list, d: st.DataObject) -> bytes:
    i = d.draw(st.integers(0, len(lines) - 1))
    key = d.draw(st.sampled_from(["index", "time", "type", "process"]))
    lines[i][key] = d.draw(st.sampled_from([None, "1", 1.5, [], {}, "bogus"]))
    if key == "process" and lines[i][key] in ("1", "bogus"):
        lines[i][key] = None
    if key == "index" and i > 0:
        lines[i][key] = d.draw(st.sampled_from([None, "1", 1.5, lines[i - 1]["index"]]))
    return _bytes(lines)


def _no_sends(lines: list, d: st.DataObject) -> bytes:
    return _bytes([e for e in lines if e.get("f") != "send"])


def _no_drain_end(lines: list, d: st.DataObject) -> bytes:
    return _bytes([e for e in lines if e.get("f") != "drain-end"])


MALFORMED: list[Callable[[list, st.DataObject], bytes]] = [
    _no_lines,
    _torn_only,
    _garbage_line,
    _bad_position,
    _bad_record,
    _inverted_drain_end,
    _unknown_phase,
    _broken_header,
    _no_sends,
    _no_drain_end,
]


@SETTINGS
@given(st.sampled_from(MALFORMED), st.data())
def test_a_malformed_history_is_never_valid(make: Callable, data: st.DataObject) -> None:
    history = make(_good_history(), data)
    with _memory_is_bounded():
        verdict = _judge_history(history)
    assert verdict is not True, make.__name__


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@SETTINGS
@given(st.data())
def test_any_field_of_any_line_replaced_never_crashes(data: st.DataObject) -> None:
    lines = _good_history()
    for _ in range(data.draw(st.integers(1, 3))):
        event = lines[data.draw(st.integers(0, len(lines) - 1))]
        key = data.draw(st.sampled_from(sorted(event)))
        event[key] = data.draw(json_values)
    history = _bytes(lines)
    with _memory_is_bounded():
        verdict = _judge_history(history)
    assert verdict in ("error", True, False, "unknown")
