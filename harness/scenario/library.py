"""The incident library shipped with kchaos (harness/scenarios/*.yaml), and name lookup."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from kchaos.harness.errors import ConfigError
from kchaos.harness.rundir.scenario_model import Scenario
from kchaos.harness.scenario.loader import load_scenario

SUFFIXES = (".yaml", ".yml")
# Suite names that mean "the whole library".
LIBRARY_SUITES = ("nightly", "library", "all")


def library_dir() -> Path:
    return Path(str(resources.files("kchaos.harness").joinpath("scenarios")))


def library_names() -> list[str]:
    return sorted(p.stem for p in library_dir().iterdir() if p.suffix in SUFFIXES)


def names_with_tag(tag: str) -> list[str]:
    """The library scenarios tagged ``tag`` (read from their files' ``tags`` only);
    ConfigError when none is."""
    from kchaos.harness.scenario.yamlsrc import load_yaml

    names = []
    known: set[str] = set()
    for name in library_names():
        path = library_dir() / f"{name}.yaml"
        data = load_yaml(path.read_text(encoding="utf-8"), str(path)).data
        tags = [str(t) for t in (data.get("tags") or ())] if isinstance(data, dict) else []
        known.update(tags)
        if tag in tags:
            names.append(name)
    if not names:
        raise ConfigError(
            f"no library scenario is tagged {tag!r} (tags: {', '.join(sorted(known))})",
            field="tag",
        )
    return names


def resolve(ref: str) -> Path:
    """A scenario reference: a path to a file, or the name of a library scenario."""
    path = Path(ref)
    if path.suffix in SUFFIXES or "/" in ref:
        if path.is_dir():
            raise ConfigError("is a directory, not a scenario file", file=ref)
        if path.exists() and not path.is_file():
            raise ConfigError("is not a regular file", file=ref)
        if not path.is_file():
            raise ConfigError("no such scenario file", file=ref)
        return path
    for suffix in SUFFIXES:
        candidate = library_dir() / (ref + suffix)
        if candidate.is_file():
            return candidate
    if path.is_file():
        return path
    if path.is_dir():
        raise ConfigError("is a directory, not a scenario file", file=ref)
    raise ConfigError(
        f"no scenario named {ref!r} in the library ({', '.join(library_names())}) and no such file",
        file=ref,
    )


def load(ref: str, **kwargs: object) -> Scenario:
    """Resolve and load a scenario (keyword arguments as for load_scenario)."""
    return load_scenario(resolve(ref), **kwargs)  # type: ignore[arg-type]


def suite_members(ref: str) -> list[Path]:
    """The scenario files of a suite: a library suite name, or a directory of YAML files."""
    if ref in LIBRARY_SUITES:
        return [library_dir() / f"{n}.yaml" for n in library_names()]
    path = Path(ref)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in SUFFIXES)
        if not files:
            raise ConfigError("no *.yaml scenario in this directory", file=ref)
        return files
    if path.is_file():
        return [path]
    raise ConfigError(f"not a directory nor a suite name ({', '.join(LIBRARY_SUITES)})", file=ref)


def load_all(names: Sequence[str] | None = None) -> list[Scenario]:
    return [load(n) for n in (names if names is not None else library_names())]
