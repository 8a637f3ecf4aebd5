"""The histories the analysis tests run through Spark, with the counts expected of them.

Every run of the agreement, transaction and Parquet-input tests goes through ONE run_job
call of the test session (conftest.py ``one_job``: one session, every run unioned, as
``kchaos analyze`` does with many run directories), so their keys must not mix. The
agreement cases come from three sources:
- hand-written histories (tests/unit/analysis/hist.py, and the transactional ones of
  tests/unit/fixtures/txn);
- histories from the shared generator (harness.histgen), clean and with each injection,
  plain (format 1.1) and transactional (1.2);
- every history the checker's own unit tests write (captured by wrapping their
  ``H.write``), compared with ``kchaos.harness.checker.check_history`` on the same file.
"""

from __future__ import annotations

import contextlib
import inspect
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kchaos.harness.histgen import INJECTABLE, TXN_INJECTABLE, generate_run
from kchaos.harness.rundir.anomalies import DATA_KINDS

CHECKER_TESTS = Path(__file__).resolve().parents[1] / "checker"
CHECKER_MODULES = (
    "test_checker_durability",
    "test_checker_reads",
    "test_checker_ordering",
    "test_checker_isr",
    "test_checker_availability",
)
# Transactional ones (format 1.3): for the Spark job only (the DuckDB baseline of
# bench_duck_kinds counts format v1's kinds, not transactions)
TXN_CHECKER_MODULES = ("test_checker_txn13",)
TXN_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "txn"


@dataclass
class Case:
    name: str
    run_dir: Path
    expected: dict[str, int] | None = None  # data kinds -> count, from the case itself
    expected_valid: Any = None


def data_counts(anomalies: dict[str, Any]) -> dict[str, int]:
    out = {}
    for kind in DATA_KINDS:
        entry = anomalies.get(kind)
        count = entry["count"] if isinstance(entry, dict) else getattr(entry, "count", 0)
        if count:
            out[kind] = int(count)
    return out


def histgen_cases(root: Path) -> list[Case]:
    cases = []
    shapes: list[tuple[str, dict[str, Any]]] = [
        ("gen-clean", {}),
        ("gen-lso", {"log_start_offset": 40, "seed": 5}),
        ("gen-all-data", {"inject": [k for k in DATA_KINDS if k in INJECTABLE], "seed": 9}),
    ]
    shapes += [(f"gen-{kind}", {"inject": (kind,), "seed": i}) for i, kind in enumerate(INJECTABLE)]
    # format 1.2: transactional histories from the same generator, clean, with every
    # transactional kind at once, and with each kind alone
    txn: list[tuple[str, dict[str, Any]]] = [
        ("gentxn-clean", {"seed": 3}),
        ("gentxn-all", {"inject": TXN_INJECTABLE, "seed": 11}),
    ]
    txn += [(f"gentxn-{kind}", {"inject": (kind,), "seed": 20 + i})
            for i, kind in enumerate(TXN_INJECTABLE)]  # fmt: skip
    shapes += [(name, {**kwargs, "transactional": True}) for name, kwargs in txn]
    for name, kwargs in shapes:
        gen = generate_run(root / name, events=2500, partitions=3, **kwargs)
        expected = {k: v for k, v in gen.expected.items() if k in DATA_KINDS}
        valid = gen.expected_valid if set(gen.expected) <= set(DATA_KINDS) else None
        cases.append(Case(name, root / name, expected, valid))
    return cases


def txn_fixture_cases(root: Path) -> list[Case]:
    """The hand-written transactional histories of tests/unit/fixtures/txn (formats 1.2
    and 1.3), with the counts their expected.json gives."""
    import json

    expected = json.loads((TXN_FIXTURES / "expected.json").read_text())
    cases = []
    for name, want in sorted(expected.items()):
        run = root / f"txn-{Path(name).stem}"
        run.mkdir(parents=True)
        shutil.copy(TXN_FIXTURES / name, run / "history.jsonl")
        cases.append(Case(f"txn-{Path(name).stem}", run, want["anomalies"], want["valid"]))
    return cases


def _checker_reads(path: Path) -> bool:
    """Whether the checker takes ``path`` as a history (not bad input)."""
    from kchaos.harness.checker import check_history
    from kchaos.harness.errors import HistoryError

    try:
        check_history(path)
    except HistoryError:
        return False
    return True


def checker_test_histories(root: Path, modules: tuple[str, ...] = CHECKER_MODULES) -> list[Case]:
    """Run the checker's own unit tests (of ``modules``) that take only tmp_path; keep
    what they write."""
    if not CHECKER_TESTS.is_dir():
        return []
    sys.path.insert(0, str(CHECKER_TESTS))
    try:
        import checker_hist
    except ImportError:
        return []
    written: list[Path] = []
    original = checker_hist.H.write

    def recording_write(self: Any, path: Path) -> Path:
        out = original(self, path)
        written.append(Path(out))
        return out

    cases: list[Case] = []
    checker_hist.H.write = recording_write  # type: ignore[method-assign]
    try:
        for module_name in modules:
            try:
                module = __import__(module_name)
            except ImportError:
                continue
            for name, fn in sorted(vars(module).items()):
                if not name.startswith("test_") or not callable(fn):
                    continue
                if list(inspect.signature(fn).parameters) != ["tmp_path"]:
                    continue
                work = root / "work" / f"{module_name}-{name}"
                work.mkdir(parents=True)
                written.clear()
                # the checker's own assertions are not ours to judge here
                with contextlib.suppress(Exception):
                    fn(work)
                for i, path in enumerate(list(written)):
                    if not _checker_reads(path):
                        continue  # bad input: not comparable, and it would stop the job
                    run = root / f"{module_name[13:]}-{name[5:]}-{i}"
                    run.mkdir()
                    shutil.copy(path, run / "history.jsonl")
                    cases.append(Case(f"checker:{run.name}", run))
    finally:
        checker_hist.H.write = original  # type: ignore[method-assign]
    return cases


def agreement_cases(root: Path) -> list[Case]:
    """test_analysis_agreement's runs: hand-written, generated, the transactional
    fixtures and the checker tests' histories."""
    from hist import every_kind, near_misses

    cases: list[Case] = []
    h, expected = every_kind()
    cases.append(Case("hand-every-kind", h.write(root / "hand-every-kind"), expected, False))
    cases.append(Case("hand-near-misses", near_misses().write(root / "hand-near"), {}, True))
    # a torn last line (no newline, not JSON) is ignored and reported
    torn_dir = root / "hand-torn"
    near_misses().write(torn_dir, tail=b'{"index":99,"time":9')
    cases.append(Case("hand-torn", torn_dir, {}, True))
    cases += histgen_cases(root / "gen")
    cases += txn_fixture_cases(root / "txn")  # format 1.2 and 1.3's transactions
    cases += checker_test_histories(root / "checker", CHECKER_MODULES + TXN_CHECKER_MODULES)
    return cases


def run_dir(root: Path, name: str, text: str) -> Path:
    """A run directory ``root/name`` holding only ``text`` as its history.jsonl."""
    run = root / name
    run.mkdir(parents=True)
    (run / "history.jsonl").write_text(text)
    return run


def txn_runs(root: Path, spark: Any) -> dict[str, Path]:
    """test_analysis_txn's runs: the transactional fixtures, one of them as a Parquet
    export only, and one with a longer transaction timeout in its run.json."""
    import json

    from kchaos.harness.analysis.export import export_parquet

    runs = {
        name: run_dir(root, name, (TXN_FIXTURES / f"{name}.jsonl").read_text())
        for name in ("many", "clean", "v13")
    }
    parquet = run_dir(root, "many-parquet", (TXN_FIXTURES / "many.jsonl").read_text())
    export_parquet([parquet], spark=spark)
    (parquet / "history.jsonl").unlink()  # only the Parquet copy is left to read
    runs["many-parquet"] = parquet
    # a longer transaction timeout in run.json: h:1 is no longer hanging
    long = run_dir(root, "many-long-timeout", (TXN_FIXTURES / "many.jsonl").read_text())
    producer = {"producer": {"transaction.timeout.ms": 90_000}}
    (long / "run.json").write_text(json.dumps({"workload": producer}))
    runs["many-long-timeout"] = long
    return runs


PARQUET_HISTORIES = ("bad", "good", "txn")
PARQUET_SHAPES = ("json", "end", "end-alone", "export")


def _parquet_history(name: str) -> bytes:
    from hist import every_kind, near_misses

    if name == "txn":
        return (TXN_FIXTURES / "many.jsonl").read_bytes()
    h = every_kind()[0] if name == "bad" else near_misses()
    return h.lines()


def parquet_runs(root: Path, spark: Any) -> dict[tuple[str, str], Path]:
    """test_analysis_parquet_input's runs: each history in each shape: json
    (history.jsonl only), end (the run-end copy beside the JSON lines), end-alone (the
    run-end copy, the JSON lines gone) and export (kchaos export's copy)."""
    from kchaos.harness.analysis.export import export_parquet
    from kchaos.harness.rundir import RunDir

    dirs: dict[tuple[str, str], Path] = {}
    for name in PARQUET_HISTORIES:
        for shape in PARQUET_SHAPES:
            run = RunDir(root / f"{name}-{shape}").create()
            run.history.write_bytes(_parquet_history(name))
            dirs[(name, shape)] = run.path
            if shape.startswith("end"):
                assert run.write_history_parquet()
            if shape == "end-alone":
                run.history.unlink()
    export_parquet([dirs[(name, "export")] for name in PARQUET_HISTORIES], spark=spark)
    return dirs
