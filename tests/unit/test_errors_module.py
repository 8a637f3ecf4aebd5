"""kchaos.harness.errors is the one place exception classes are defined (issue 23).

Two checks: no product module defines an exception class of its own (none at all: even a
private control-flow signal is drawn in errors.py's tree), and the hierarchy drawn in
errors.py's docstring is the hierarchy of its classes, so the drawing can be trusted.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

from kchaos.harness import errors

REPO_ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("harness", "faults", "workloads", "reports", "compose", "cli", "bench")
ERRORS_FILE = Path("harness") / "errors.py"


def _module_name(path: Path) -> str:
    relative = path.relative_to(REPO_ROOT).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return "kchaos." + ".".join(parts)


def _product_files() -> list[Path]:
    return sorted(
        path
        for folder in PRODUCT
        for path in (REPO_ROOT / folder).rglob("*.py")
        if "__pycache__" not in path.parts
    )


def _exception_names() -> set[str]:
    """Names a base may have that make a class an exception: the built-in exception
    classes, the classes of errors.py, and any name ending in Error or Exception."""
    names = {
        name
        for name, value in vars(builtins).items()
        if inspect.isclass(value) and issubclass(value, BaseException)
    }
    names |= {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, BaseException)
    }
    return names


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _looks_like_exception(base: str, known: set[str]) -> bool:
    return base in known or base.endswith(("Error", "Exception"))


def _defined_by_source() -> list[str]:
    """Every class statement (at any depth) whose base is an exception, outside errors.py."""
    known = _exception_names()
    found = []
    for path in _product_files():
        if path.relative_to(REPO_ROOT) == ERRORS_FILE:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        module = _module_name(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                _looks_like_exception(_base_name(base), known) for base in node.bases
            ):
                found.append(f"{module}.{node.name}")
    return found


def _defined_by_import() -> list[str]:
    """Every module-level exception class, found by importing each product module (this
    catches a class whose base is an exception under a name that does not say so)."""
    found = []
    for folder in PRODUCT:
        package = importlib.import_module(f"kchaos.{folder}")
        names = [package.__name__] + [
            info.name for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
        ]
        for name in names:
            # __main__ runs the CLI when imported; the source scan covers its file
            if name == errors.__name__ or name.endswith(".__main__"):
                continue
            module = importlib.import_module(name)
            for attr, value in vars(module).items():
                if (
                    inspect.isclass(value)
                    and issubclass(value, BaseException)
                    and value.__module__ == module.__name__
                ):
                    found.append(f"{module.__name__}.{attr}")
    return found


def test_the_scan_sees_a_class_it_must_refuse() -> None:
    """The source scan recognises an exception class written with each kind of base."""
    known = _exception_names()
    source = (
        "class A(ValueError): pass\n"
        "class B(errors.FaultError): pass\n"
        "class C(SomethingError): pass\n"
        "class D(object): pass\n"
    )
    tree = ast.parse(source)
    hits = [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and any(_looks_like_exception(_base_name(b), known) for b in node.bases)
    ]
    assert hits == ["A", "B", "C"]


@pytest.mark.parametrize("scan", [_defined_by_source, _defined_by_import])
def test_no_exception_class_outside_errors_py(scan) -> None:  # type: ignore[no-untyped-def]
    stray = sorted(set(scan()))
    assert not stray, (
        "exception classes belong in kchaos.harness.errors (draw them in its docstring): "
        + ", ".join(stray)
    )


def test_the_import_scan_sees_a_private_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    """A private signal class defined in a product module is found too (as the three that
    used to live in metadata_records and txn were)."""
    from kchaos.workloads import txn

    class _Jump(Exception):
        pass

    _Jump.__module__ = txn.__name__
    monkeypatch.setattr(txn, "_Jump", _Jump, raising=False)
    assert "kchaos.workloads.txn._Jump" in _defined_by_import()


_TREE_LINE = re.compile(r"^(?P<indent>[ │├└─]*?)(?P<name>[A-Z][A-Za-z]+)(?:\s{2,}.*)?$")


def _drawn_parents() -> dict[str, str]:
    """{class: parent} as drawn in errors.py's docstring (the name's column is its depth)."""
    doc = errors.__doc__ or ""
    parents: dict[str, str] = {}
    for block in doc.split("\n\n"):
        lines = [line[4:] for line in block.splitlines() if line.startswith("    ")]
        if not lines:
            continue
        stack: list[tuple[int, str]] = []
        for line in lines:
            match = _TREE_LINE.match(line)
            assert match, f"errors.py docstring: a tree line it cannot read: {line!r}"
            column, name = len(match.group("indent")), match.group("name")
            while stack and stack[-1][0] >= column:
                stack.pop()
            if stack:
                parents[name] = stack[-1][1]
            elif name != "Exception":  # a root drawn alone derives from Exception
                parents[name] = "Exception"
            stack.append((column, name))
    return parents


def test_the_docstring_draws_the_real_hierarchy() -> None:
    classes = {
        name: value
        for name, value in vars(errors).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == errors.__name__
    }
    drawn = _drawn_parents()
    assert set(drawn) == set(classes), (
        f"drawn but not defined: {sorted(set(drawn) - set(classes))}; "
        f"defined but not drawn: {sorted(set(classes) - set(drawn))}"
    )
    for name, cls in classes.items():
        assert len(cls.__bases__) == 1, f"{name}: one base, so that the drawing is a tree"
        assert drawn[name] == cls.__bases__[0].__name__, (
            f"{name} is drawn under {drawn[name]} but derives from {cls.__bases__[0].__name__}"
        )


def test_signals_are_not_kchaos_errors() -> None:
    """The signals passed between parts of kchaos must not be caught by the CLI's
    ``except KchaosError`` (they are handled where they are raised)."""
    for cls in (errors.BudgetExhausted, errors.SendRefused, errors.ClientFatal, errors.TxnError):
        assert not issubclass(cls, errors.KchaosError), cls
