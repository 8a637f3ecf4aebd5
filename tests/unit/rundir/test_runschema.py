"""run.json's published schema is generated from RunJson (kchaos.harness.rundir.runschema)."""

from __future__ import annotations

import dataclasses

import jsonschema
import pytest

from kchaos.harness.rundir import runschema, schemagen
from kchaos.harness.rundir.runjson import RunJson, schema


def test_the_published_file_is_what_the_model_generates() -> None:
    jsonschema.Draft202012Validator.check_schema(runschema.generate())
    on_disk = runschema.SCHEMA_FILE.read_text(encoding="utf-8")
    regenerate = "regenerate: python -m kchaos.harness.rundir.runschema"
    assert on_disk == schemagen.render(runschema.generate()), regenerate
    assert schema() == runschema.generate()  # what load_run validates with


def test_every_typed_field_is_a_key_of_the_file_but_the_reader_s_own() -> None:
    keys = set(runschema.generate()["properties"])
    fields = {f.name for f in dataclasses.fields(RunJson)}
    assert fields - keys == {"raw", "source", "settings", "kafka_image"}
    assert "image" in keys  # kafka_image is image.kafka
    assert not keys & {"raw", "source", "settings"}


def test_a_key_both_typed_and_kept_as_written_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(runschema.KEPT_AS_WRITTEN, "seed", {"type": "integer"})
    with pytest.raises(ValueError, match="seed"):
        runschema.generate()
