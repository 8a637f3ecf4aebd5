"""No product module outside ``kchaos.harness.rundir`` spells a run file's name.

The names live in :mod:`kchaos.harness.rundir.names`; a module that needs a file asks
:class:`~kchaos.harness.rundir.rundir.RunDir` for its path, or uses the constant in a
message. The scan reads every string literal of the product packages (docstrings aside:
they explain, they open nothing) and fails naming ``file:line`` for each one that holds
a run file's name, and it looks for two more shapes:

- a name with a varying part (``NAME_PATTERNS``: ``txn-{process}.log``) in an f-string or
  a format string, the varying parts compared as ``{}``;
- a run directory's folder (``RUN_DIR_FOLDERS``: ``logs`` is too common a word to look for
  alone) joined by ``/`` to an expression that names a run (``run_dir / "logs"``, not an
  image cache's ``cache / "logs"``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from kchaos.harness.rundir.names import FILE_NAMES, NAME_PATTERNS, RUN_DIR_FOLDERS

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("harness", "faults", "workloads", "reports", "compose", "cli", "bench")
OWNER = Path("harness", "rundir")

# A name as a word of its own: "logs/librdkafka.log" and "analysis/summary.json" count,
# "my-results.json" and "results.json5" do not.
_NAME = re.compile(
    r"(?<![\w.-])(" + "|".join(re.escape(n) for n in sorted(FILE_NAMES, key=len)[::-1]) + r")"
    r"(?![\w-])"
)

# A pattern with its fields as "{}", as an f-string or a format string reads once its own
# fields are "{}" too: "txn-{process}.log" finds f"txn-{self.process}.log".
_FIELD = re.compile(r"\{[^{}]*\}")
_PATTERN = re.compile(
    r"(?<![\w.-])("
    + "|".join(re.escape(_FIELD.sub("{}", p)) for p in sorted(NAME_PATTERNS, key=len)[::-1])
    + r")(?![\w-])"
)


def _template(node: ast.JoinedStr) -> str:
    """An f-string's text with each of its fields as ``{}``."""
    return "".join(
        str(part.value) if isinstance(part, ast.Constant) else "{}" for part in node.values
    )


def _folder_join(node: ast.BinOp) -> str | None:
    """The folder of ``<a run's path> / "<run-dir folder>"``; None for any other ``/``."""
    if not (
        isinstance(node.op, ast.Div)
        and isinstance(node.right, ast.Constant)
        and node.right.value in RUN_DIR_FOLDERS
    ):
        return None
    left = ast.unparse(node.left)
    return str(node.right.value) if re.search(r"run", left, re.IGNORECASE) else None


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
                    template = _FIELD.sub("{}", node.value)
                    for match in _PATTERN.finditer(template):
                        found.append((rel, node.lineno, f"{match.group(1)!r} in {template!r}"))
                elif isinstance(node, ast.JoinedStr):
                    template = _template(node)
                    for match in _PATTERN.finditer(template):
                        shown = f"{match.group(1)!r} in f{template!r}"
                        found.append((rel, node.lineno, shown))
                elif isinstance(node, ast.BinOp) and (folder := _folder_join(node)):
                    shown = f"{folder!r} in {ast.unparse(node)!r}"
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
        '    (run_dir / "logs" / f"txn-{3}.log").touch()\n'
        '    (cache / "logs" / f"txn-{3}.logs").touch()\n'
        '    (Path(run_dir) / "java-clients" / "{}.out".format("p-1")).touch()\n'
        '    (self.run_dir / f"{name}.output").touch()\n'
    )
    assert literal_names(tmp_path) == [
        "workloads/bad.py:9: 'results.json' in 'results.json'",
        "workloads/bad.py:10: 'librdkafka.log' in '/logs/librdkafka.log'",
        "workloads/bad.py:11: 'logs' in \"run_dir / 'logs'\"",
        "workloads/bad.py:11: 'txn-{}.log' in f'txn-{}.log'",
        "workloads/bad.py:13: 'java-clients' in \"Path(run_dir) / 'java-clients'\"",
        "workloads/bad.py:13: 'java-clients' in 'java-clients'",
        "workloads/bad.py:13: '{}.out' in '{}.out'",
    ]


def test_every_name_is_spelled_once_in_names() -> None:
    assert len(set(FILE_NAMES)) == len(FILE_NAMES)
    text = (ROOT / OWNER / "names.py").read_text()
    for name in FILE_NAMES:
        assert text.count(f'"{name}"') == 1, name
