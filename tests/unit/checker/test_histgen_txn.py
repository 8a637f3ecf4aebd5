"""The shared generator's transactional histories (kchaos.harness.histgen.txn), judged
by the checker: each kind of format 1.2 injected on request is found with the count the
generator states, and a history without injections is valid although it holds the near
misses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from kchaos.harness.checker import check_history
from kchaos.harness.histgen import TXN_INJECTABLE, generate_run, generate_txn
from kchaos.harness.rundir.anomalies import INVALIDATING, TXN_EXTENDED, TXN_KINDS


def lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines()]


def counts(path: Path) -> tuple[object, dict[str, int]]:
    r = check_history(path)
    return r.valid, {k: a.count for k, a in r.anomalies.items()}


def test_the_injectable_kinds_are_the_vocabularys() -> None:
    assert set(TXN_INJECTABLE) == {*TXN_EXTENDED, *TXN_KINDS}
    assert set(TXN_INJECTABLE) <= set(INVALIDATING)


def test_a_clean_history_is_valid_and_holds_the_near_misses(tmp_path: Path) -> None:
    gen = generate_txn(tmp_path / "h.jsonl", events=6000, seed=4)
    assert gen.expected == {} and gen.expected_valid is True and gen.injected == ()
    assert counts(gen.path) == (True, {})
    ev = lines(gen.path)
    assert gen.events == len(ev)
    txns = [e for e in ev if e["f"] == "txn" and e["type"] != "invoke"]
    assert {e["type"] for e in txns} == {"ok", "fail", "info"}
    assert gen.outcomes == {
        t: sum(1 for e in txns if e["type"] == t) for t in ("ok", "fail", "info")
    }
    inits = [e for e in ev if e["f"] == "txn-init" and e["type"] == "ok"]
    by_id: dict[str, set[object]] = {}
    for e in inits:
        by_id.setdefault(e["transactional_id"], set()).add(e["process"])
    assert len(inits) > len(by_id)  # a producer initialised its own id again ...
    assert all(len(p) == 1 for p in by_id.values())  # ... which fenced nobody
    copies = [e for e in ev if e["f"] == "txn" and e["type"] == "invoke" and "consumed" in e]
    assert copies and all(s["copy_of"] for e in copies for s in e["sends"])
    assert all(e["offsets"]["group"] for e in copies)
    isolation = {e["process"]: e["isolation"] for e in ev if e["f"] == "assign"}
    assert sorted(isolation.values()) == ["read_committed", "read_uncommitted"]
    # the read_uncommitted reader saw aborted values: no anomaly
    aborted = {
        s["value"] for e in ev if e["f"] == "txn" and e["type"] == "invoke" for s in e["sends"]
    } - {r["value"] for e in ev if e["f"] in ("drain",) for r in e["records"]}
    ru = next(p for p, i in isolation.items() if i == "read_uncommitted")
    rc = next(p for p, i in isolation.items() if i == "read_committed")
    polled = {p: set() for p in (ru, rc)}  # type: dict[object, set[str]]
    for e in ev:
        if e["f"] == "poll" and e["type"] == "ok":
            polled[e["process"]].update(r["value"] for r in e["records"])
    assert aborted & polled[ru] and not aborted & polled[rc]
    ends = [e for e in ev if e["f"] == "drain-end"]
    assert ends and all(
        e["isolation"] == "read_committed" and e["last_stable_offset"] == e["high_watermark"]
        for e in ends
    )


@pytest.mark.parametrize("kind", TXN_INJECTABLE)
def test_each_kind_injected_is_judged_with_exactly_that_kind(tmp_path: Path, kind: str) -> None:
    gen = generate_txn(tmp_path / "h.jsonl", events=5000, seed=11, partitions=4, inject=(kind,))
    assert gen.expected == {kind: 1} and gen.expected_valid is False
    assert counts(gen.path) == (False, gen.expected)
    (inj,) = gen.injected
    line = lines(gen.path)[inj.index]  # the injection names its key line
    if inj.value is not None and line["f"] == "txn":
        invoke = [e for e in lines(gen.path) if e.get("txn") == line["txn"]][0]
        sent = {s["value"] for s in invoke["sends"]} | {
            c["value"] for c in invoke.get("consumed", [])
        }
        assert inj.value in sent
    else:
        assert line["f"] == "drain-end" and (line["topic"], line["partition"]) == (
            inj.topic,
            inj.partition,
        )


def test_every_kind_at_once_and_the_same_bytes_for_the_same_seed(tmp_path: Path) -> None:
    a = generate_txn(tmp_path / "a.jsonl", events=3000, seed=2, inject=TXN_INJECTABLE)
    b = generate_txn(tmp_path / "b.jsonl", events=3000, seed=2, inject=TXN_INJECTABLE)
    assert a.path.read_bytes() == b.path.read_bytes()
    assert a.expected == dict.fromkeys(TXN_INJECTABLE, 1)
    assert counts(a.path) == (False, a.expected)
    c = generate_txn(tmp_path / "c.jsonl", events=3000, seed=3, inject=TXN_INJECTABLE)
    assert c.path.read_bytes() != a.path.read_bytes()


def test_the_size_follows_events(tmp_path: Path) -> None:
    small = generate_txn(tmp_path / "s.jsonl", events=1000, seed=1)
    big = generate_txn(tmp_path / "b.jsonl", events=20_000, seed=1)
    assert 1000 <= small.events < 2000 and 20_000 <= big.events < 24_000


@pytest.mark.parametrize(
    "kwargs",
    [{"inject": ("duplicate",)}, {"inject": ("eos-lost", "eos-lost")}, {"partitions": 0}],
)
def test_bad_arguments_are_refused(tmp_path: Path, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        generate_txn(tmp_path / "h.jsonl", **kwargs)


def test_generate_run_writes_a_transactional_run_directory(tmp_path: Path) -> None:
    gen = generate_run(tmp_path / "run", transactional=True, events=2000, inject=("eos-lost",))
    run = orjson.loads((tmp_path / "run" / "run.json").read_bytes())
    assert [t["name"] for t in run["topics"]] == ["t", "t-in", "t-out"]
    assert counts(tmp_path / "run" / "history.jsonl") == (False, gen.expected)
