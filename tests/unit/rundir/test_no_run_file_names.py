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


# -- joins: a name constant used to build a run directory's path ----------------------
# The literal scan above cannot see ``run_dir / HISTORY_JSONL``: the constant is spelled
# once, in names.py, yet the path is built outside kchaos.harness.rundir. These shapes
# join a path: ``a / NAME``, ``a.joinpath(NAME)``, ``Path(a, NAME)``, ``os.path.join(a,
# NAME)``, ``a.with_name(NAME)``. A join counts when it names a run (``run`` in the
# expression, as for the folders above): Prometheus's own home, the compose folder and
# the cross-run analysis folder share a file name with a run directory but are none.
_JOIN_CALLS = {"joinpath", "join", "Path", "with_name"}
_NAMES_MODULE = "kchaos.harness.rundir.names"


def _name_constants(tree: ast.AST) -> tuple[set[str], set[str]]:
    """The names this module binds to a constant of names.py, and its aliases of names."""
    constants: set[str] = set()
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == _NAMES_MODULE:
            constants.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "kchaos.harness.rundir":
            modules.update(a.asname or a.name for a in node.names if a.name == "names")
        elif isinstance(node, ast.Import):
            modules.update(a.asname for a in node.names if a.name == _NAMES_MODULE and a.asname)
    return constants, modules


def _is_constant(node: ast.AST, constants: set[str], modules: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in constants
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in modules
    )


def _joined(node: ast.AST, constants: set[str], modules: set[str]) -> bool:
    """Whether ``node`` joins a names.py constant onto a path (any of the shapes above)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _is_constant(node.right, constants, modules)
    if isinstance(node, ast.Call):
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return called in _JOIN_CALLS and any(
            _is_constant(arg, constants, modules) for arg in node.args
        )
    return False


def name_joins(root: Path) -> list[str]:
    """``file:line: expression`` for each run-directory path built from a names.py
    constant outside kchaos.harness.rundir."""
    found: list[tuple[Path, int, str]] = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root)
            if rel.parts[: len(OWNER.parts)] == OWNER.parts:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(rel))
            constants, modules = _name_constants(tree)
            if not constants and not modules:
                continue
            for node in ast.walk(tree):
                if _joined(node, constants, modules):
                    text = ast.unparse(node)
                    if re.search(r"run", text, re.IGNORECASE):
                        found.append((rel, getattr(node, "lineno", 0), text))
    return [f"{rel}:{line}: {text}" for rel, line, text in sorted(found)]


def test_no_module_outside_rundir_joins_a_run_file_name_to_a_path() -> None:
    found = name_joins(ROOT)
    assert not found, (
        "a run directory's paths come from RunDir (kchaos.harness.rundir.rundir), not from "
        "joining a names.py constant:\n" + "\n".join(found)
    )


def test_the_join_scan_finds_each_shape_and_only_runs(tmp_path: Path) -> None:
    (tmp_path / "harness" / "rundir").mkdir(parents=True)
    (tmp_path / "reports").mkdir()
    (tmp_path / "harness" / "rundir" / "own.py").write_text(
        "from kchaos.harness.rundir.names import RUN_JSON\n"
        "def f(run_dir):\n"
        "    return run_dir / RUN_JSON\n"
    )
    (tmp_path / "reports" / "bad.py").write_text(
        "import os\n"
        "from pathlib import Path\n"
        "\n"
        "from kchaos.harness.rundir import names as n\n"
        "from kchaos.harness.rundir.names import HISTORY_JSONL, RESULTS_JSON as RJ\n"
        "\n"
        "\n"
        "def f(run_dir, run, home):\n"
        "    a = run_dir / HISTORY_JSONL\n"
        "    b = Path(run) / RJ\n"
        "    c = run.path.joinpath(n.RUN_JSON)\n"
        "    d = os.path.join(run_dir, HISTORY_JSONL)\n"
        "    e = run_dir.with_name(n.CONTROLLER_JSONL)\n"
        "    print(f'no {HISTORY_JSONL} in {run_dir}')\n"
        "    return home / n.PROMETHEUS_YML, home / 'run.json'\n"
    )
    assert name_joins(tmp_path) == [
        "reports/bad.py:9: run_dir / HISTORY_JSONL",
        "reports/bad.py:10: Path(run) / RJ",
        "reports/bad.py:11: run.path.joinpath(n.RUN_JSON)",
        "reports/bad.py:12: os.path.join(run_dir, HISTORY_JSONL)",
        "reports/bad.py:13: run_dir.with_name(n.CONTROLLER_JSONL)",
    ]


def test_every_name_is_spelled_once_in_names() -> None:
    assert len(set(FILE_NAMES)) == len(FILE_NAMES)
    text = (ROOT / OWNER / "names.py").read_text()
    for name in FILE_NAMES:
        assert text.count(f'"{name}"') == 1, name
