"""The scenario schema is generated from the model (issue 23): the published file is the
generator's output, and the generated schema judges scenario files as the hand-written one
did (every library scenario accepted; the loader tests' bad inputs refused with the same
errors, recorded in tests/unit/fixtures/scenario_schema_refusals.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
from ruamel.yaml import YAML

from kchaos.harness.rundir import schemagen as generator
from kchaos.harness.scenario import library, loader, schemagen
from kchaos.harness.scenario.yamlsrc import load_yaml

FIXTURE = Path(__file__).parents[1] / "fixtures" / "scenario_schema_refusals.yaml"
REFUSALS: list[dict[str, Any]] = YAML(typ="safe").load(FIXTURE.read_text(encoding="utf-8"))
LIBRARY = sorted(library.library_dir().glob("*.yaml"))

# the schema the loader validates with (the published file), and the generator's
VALIDATORS = {
    "published": jsonschema.Draft202012Validator(loader.schema()),
    "generated": jsonschema.Draft202012Validator(schemagen.generate()),
}


def errors(validator: jsonschema.Draft202012Validator, data: Any) -> list[list[Any]]:
    """Every error as [path in the document, keyword, path in the schema], sorted."""
    found = validator.iter_errors(data)
    return sorted([list(e.absolute_path), e.validator, list(e.schema_path)] for e in found)


def test_the_published_file_is_what_the_model_generates() -> None:
    jsonschema.Draft202012Validator.check_schema(schemagen.generate())
    on_disk = schemagen.SCHEMA_FILE.read_text(encoding="utf-8")
    regenerate = "regenerate: python -m kchaos.harness.scenario.schemagen"
    assert on_disk == generator.render(schemagen.generate()), regenerate
    assert loader.schema() == schemagen.generate()  # what the loader validates with


@pytest.mark.parametrize("which", sorted(VALIDATORS))
@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.stem)
def test_both_schemas_accept_every_library_scenario(path: Path, which: str) -> None:
    data = load_yaml(path.read_text(encoding="utf-8"), str(path)).data
    assert errors(VALIDATORS[which], data) == []


def test_the_refusals_cover_the_schema_keywords() -> None:
    assert len(LIBRARY) >= 19
    keywords = {e[1] for case in REFUSALS for e in case["errors"]}
    assert keywords >= {"additionalProperties", "enum", "maximum", "minimum", "oneOf"}
    assert keywords >= {"pattern", "required", "type"}


@pytest.mark.parametrize("which", sorted(VALIDATORS))
@pytest.mark.parametrize("case", REFUSALS, ids=lambda c: ".".join(map(str, c["errors"][0][0])))
def test_both_schemas_refuse_each_bad_input_with_the_recorded_errors(
    case: dict[str, Any], which: str
) -> None:
    data = YAML(typ="safe").load(case["scenario"])
    assert errors(VALIDATORS[which], data) == case["errors"]
