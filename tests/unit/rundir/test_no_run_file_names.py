"""No product module outside ``kchaos.harness.rundir`` spells a run file's name.

The names live in :mod:`kchaos.harness.rundir.names`; a module that needs a file asks
:class:`~kchaos.harness.rundir.rundir.RunDir` for its path, or uses the constant in a
message. The scan reads every string literal of the product packages (docstrings aside:
they explain, they open nothing) and fails naming ``file:line`` for each one that holds
a run file's name.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from kchaos.harness.rundir.names import FILE_NAMES

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("harness", "faults", "workloads", "reports", "compose", "cli", "bench")
OWNER = Path("harness", "rundir")

# A name as a word of its own: "logs/librdkafka.log" and "analysis/summary.json" count,
# "my-results.json" and "results.json5" do not.
_NAME = re.compile(
    r"(?<![\w.-])(" + "|".join(re.escape(n) for n in sorted(FILE_NAMES, key=len)[::-1]) + r")"
    r"(?![\w-])"
)


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def literal_names(root: Path) -> list[str]:
    """``file:line: 'name' in 'literal'`` for each run file name spelled outside rundir."""
    found: list[tuple[Path, int, str]] = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root)
            if rel.parts[: len(OWNER.parts)] == OWNER.parts:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(rel))
            docs = _docstrings(tree)
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and id(node) not in docs
                ):
                    for match in _NAME.finditer(node.value):
                        shown = f"{match.group(1)!r} in {node.value!r}"
                        found.append((rel, node.lineno, shown))
    return [f"{rel}:{line}: {shown}" for rel, line, shown in sorted(found)]


def test_no_module_outside_rundir_spells_a_run_file_name() -> None:
    found = literal_names(ROOT)
    assert not found, (
        "run file names belong to kchaos.harness.rundir.names (use RunDir or the "
        "constant):\n" + "\n".join(found)
    )


def test_the_scan_finds_a_planted_name_and_only_that(tmp_path: Path) -> None:
    (tmp_path / "harness" / "rundir").mkdir(parents=True)
    (tmp_path / "workloads").mkdir()
    (tmp_path / "harness" / "rundir" / "own.py").write_text('NAME = "results.json"\n')
    (tmp_path / "workloads" / "bad.py").write_text(
        '"""Writes results.json (a docstring: not counted)."""\n'
        "from pathlib import Path\n"
        "\n"
        "\n"
        "def f(run_dir: Path) -> None:\n"
        '    """And history.jsonl here neither."""\n'
        "    # a comment naming run.json is no literal either\n"
        '    (run_dir / "my-results.json").touch()\n'
        '    (run_dir / "results.json").touch()\n'
        '    print(f"see {run_dir}/logs/librdkafka.log")\n'
    )
    assert literal_names(tmp_path) == [
        "workloads/bad.py:9: 'results.json' in 'results.json'",
        "workloads/bad.py:10: 'librdkafka.log' in '/logs/librdkafka.log'",
    ]


def test_every_name_is_spelled_once_in_names() -> None:
    assert len(set(FILE_NAMES)) == len(FILE_NAMES)
    text = (ROOT / OWNER / "names.py").read_text()
    for name in FILE_NAMES:
        assert text.count(f'"{name}"') == 1, name
