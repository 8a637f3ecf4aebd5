"""Who may write run.json: a scan of the product's code.

A run's run.json is written twice, by :class:`kchaos.harness.run.record.RunRecord`:
``started()`` once the run has started and ``finished()`` in the run's ``finally`` path
(the module docstring of ``record`` has the order). The orchestrator test counts the
writes of one faked run; this scan covers the paths that test does not take. No product
module calls ``write_run`` (``rundir.runjson``'s or ``RunDir``'s) or a record's
``_write_run_json`` but the record itself and the two that make run directories of
their own (synthetic histories, the pytest plugin's fixture); the runner starts its
record once and finishes it once, in a ``finally`` block.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("harness", "faults", "workloads", "reports", "compose", "cli", "bench")
# modules allowed to call write_run, and why
WRITERS = {
    Path("harness/run/record.py"): "the runner's record: its two writes",
    Path("harness/histgen/__init__.py"): "a synthetic run directory, not a run",
    Path("harness/pytest_plugin.py"): "a test fixture's run directory, not a run",
}
OWNER = Path("harness", "rundir")  # defines write_run
WRITE_CALLS = {"write_run", "_write_run_json"}
ORCHESTRATE = Path("harness/run/orchestrate.py")


def _called(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def writers(root: Path) -> list[str]:
    """``file:line: name()`` for each call that writes run.json outside :data:`WRITERS`."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root)
            if rel in WRITERS or rel.parts[: len(OWNER.parts)] == OWNER.parts:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(rel))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and _called(node) in WRITE_CALLS:
                    found.append(f"{rel}:{node.lineno}: {_called(node)}()")
    return found


def record_calls(source: str) -> dict[str, list[bool]]:
    """For ``started`` and ``finished``: one entry per call, whether it is in a
    ``finally`` block."""
    tree = ast.parse(source)
    in_finally: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            for stmt in node.finalbody:
                in_finally.update(id(n) for n in ast.walk(stmt))
    calls: dict[str, list[bool]] = {"started": [], "finished": []}
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _called(n) in calls]
    for node in sorted(found, key=lambda n: (n.lineno, n.col_offset)):
        calls[_called(node)].append(id(node) in in_finally)
    return calls


def test_only_the_record_writes_a_runs_run_json() -> None:
    found = writers(ROOT)
    assert not found, "run.json is written by RunRecord only:\n" + "\n".join(found)


def test_the_runner_starts_once_and_finishes_once_in_its_finally_path() -> None:
    calls = record_calls((ROOT / ORCHESTRATE).read_text(encoding="utf-8"))
    assert calls == {"started": [False], "finished": [True]}


def test_the_scans_find_what_they_look_for(tmp_path: Path) -> None:
    (tmp_path / "harness" / "run").mkdir(parents=True)
    (tmp_path / "harness" / "rundir").mkdir()
    (tmp_path / "harness" / "rundir" / "runjson.py").write_text("def write_run(): pass\n")
    (tmp_path / "harness" / "run" / "record.py").write_text("write_run(p, d)\n")
    (tmp_path / "harness" / "run" / "other.py").write_text(
        "rd.write_run(data)\nrec.update(x=1)\nrec._write_run_json()\n"
    )
    assert writers(tmp_path) == [
        "harness/run/other.py:1: write_run()",
        "harness/run/other.py:3: _write_run_json()",
    ]
    source = (
        "def run():\n"
        "    rec.started()\n"
        "    try:\n"
        "        rec.started()\n"
        "    finally:\n"
        "        rec.finished('x')\n"
        "    rec.finished('y')\n"
    )
    assert record_calls(source) == {"started": [False, False], "finished": [True, False]}
