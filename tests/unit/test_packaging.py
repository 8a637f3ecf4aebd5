"""The distribution installs the design card's folders under one ``kchaos`` namespace."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("harness", "faults", "workloads", "reports", "compose", "cli", "bench")


def _config() -> dict:
    with (REPO_ROOT / "pyproject.toml").open("rb") as fh:
        return tomllib.load(fh)["tool"]["setuptools"]


def test_every_package_folder_is_listed_under_the_namespace() -> None:
    found = {
        "kchaos." + ".".join(init.parent.relative_to(REPO_ROOT).parts)
        for folder in FOLDERS
        for init in (REPO_ROOT / folder).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert set(_config()["packages"]) == found


def test_each_folder_maps_to_its_kchaos_name() -> None:
    assert _config()["package-dir"] == {f"kchaos.{f}": f for f in FOLDERS}


def test_the_installed_names_are_the_namespaced_ones() -> None:
    import kchaos.compose
    import kchaos.harness.paths as paths

    assert Path(kchaos.compose.__file__).parent == REPO_ROOT / "compose"
    assert (paths.COMPOSE_DIR / "kafka" / "Dockerfile").is_file()
