"""The derived image without tools: built from the offline image, rebuilt when it changes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from images_fakes import FakeTools

from kchaos.harness.images.notools import REMOVED_PACKAGES, ensure_notools_image, notools_tag
from kchaos.harness.images.steps import Reporter


def _ensure(fake: FakeTools, tmp_path: Path, compose: Path) -> str:
    return ensure_notools_image(
        reporter=Reporter(), runner=fake, cache=tmp_path / "cache", compose_dir=compose
    )


def _builds(fake: FakeTools) -> list[tuple[str, ...]]:
    return [c for c in fake.calls if c[:2] == ("docker", "build")]


def test_derived_from_the_offline_image_then_up_to_date(
    tmp_path: Path, fake_tools: FakeTools, compose_copy: Path
) -> None:
    tag = _ensure(fake_tools, tmp_path, compose_copy)
    assert tag == notools_tag("kchaos/kafka:4.4.0") == "kchaos/kafka:4.4.0-notools"
    derived = _builds(fake_tools)[-1]
    assert derived[derived.index("-t") + 1] == tag
    assert "KAFKA_IMAGE=kchaos/kafka:4.4.0" in derived
    assert f"REMOVED_PACKAGES={' '.join(REMOVED_PACKAGES)}" in derived
    assert Path(derived[-1]) == compose_copy / "kafka-notools"
    fake_tools.calls.clear()
    assert _ensure(fake_tools, tmp_path, compose_copy) == tag
    assert _builds(fake_tools) == []


def test_a_rebuilt_parent_rebuilds_the_derived_image(
    tmp_path: Path, fake_tools: FakeTools, compose_copy: Path
) -> None:
    _ensure(fake_tools, tmp_path, compose_copy)
    launcher = compose_copy / "kafka" / "bin" / "kchaos-kafka-run"
    launcher.write_text(launcher.read_text() + "\n# changed\n")
    fake_tools.calls.clear()
    _ensure(fake_tools, tmp_path, compose_copy)
    tags = [c[c.index("-t") + 1] for c in _builds(fake_tools)]
    assert tags == ["kchaos/kafka:4.4.0", "kchaos/kafka:4.4.0-notools"]


def test_notools_with_the_registry_source_is_a_clear_input_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kchaos.cli", "images", "build", "--notools"]
        + ["--source", "registry"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert "--notools" in done.stderr and "apache/kafka" in done.stderr
    assert "Traceback" not in done.stderr
