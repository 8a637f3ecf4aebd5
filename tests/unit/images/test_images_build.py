"""ensure_images decisions: build what is stale, nothing when up to date, clear failures."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from images_fakes import FakeTools

from kchaos.harness.errors import ConfigError, ImageBuildError
from kchaos.harness.images import ImageSet, ensure_images
from kchaos.harness.images.steps import Completed, Reporter, check, subprocess_runner, tail


def _ensure(fake: FakeTools, tmp_path: Path, compose: Path, **kw: object) -> ImageSet:
    return ensure_images(
        reporter=Reporter(), runner=fake, cache=tmp_path / "cache", compose_dir=compose, **kw
    )  # type: ignore[arg-type]


def _builds(fake: FakeTools) -> list[str]:
    out = []
    for call in fake.calls:
        if call[:2] == ("docker", "build"):
            out.append(call[call.index("-t") + 1])
        elif call[:2] == ("docker", "import"):
            out.append(call[-1])
    return out


def test_fresh_machine_builds_all_three_then_nothing(
    tmp_path: Path, fake_tools: FakeTools, compose_copy: Path
) -> None:
    images = _ensure(fake_tools, tmp_path, compose_copy)
    assert images == ImageSet("kchaos/kafka:4.4.0", "kchaos/toxiproxy:2.12.0", "4.4.0")
    assert _builds(fake_tools) == [
        "kchaos/base:bookworm",
        "kchaos/kafka:4.4.0",
        "kchaos/toxiproxy:2.12.0",
    ]
    builds = [c for c in fake_tools.calls if c[:2] == ("docker", "build")]
    assert all("--force-rm" in c and "--pull=false" in c for c in builds)
    programs = [Path(c[0]).name for c in fake_tools.calls]
    for tool in ("debootstrap", "tar", "mvn", "go"):
        assert tool in programs
    assert (tmp_path / "cache" / "go" / "bin" / "toxiproxy-server-2.12.0").exists()
    fake_tools.calls.clear()
    again = _ensure(fake_tools, tmp_path, compose_copy)
    assert again == images
    assert [c[:3] for c in fake_tools.calls] == [("docker", "image", "inspect")]


def test_changed_launcher_rebuilds_kafka_only_from_cached_jars(
    tmp_path: Path, fake_tools: FakeTools, compose_copy: Path
) -> None:
    _ensure(fake_tools, tmp_path, compose_copy)
    old_id = fake_tools.images["kchaos/kafka:4.4.0"]["Id"]
    launcher = compose_copy / "kafka" / "bin" / "kchaos-kafka-run"
    launcher.write_text(launcher.read_text() + "\n# changed\n")
    fake_tools.calls.clear()
    _ensure(fake_tools, tmp_path, compose_copy)
    assert _builds(fake_tools) == ["kchaos/kafka:4.4.0"]
    assert not any(Path(c[0]).name in ("mvn", "go", "debootstrap") for c in fake_tools.calls)
    # the image the rebuild replaced is removed (it was kchaos's and is unused)
    assert fake_tools.removed == [old_id]


def test_replaced_image_in_use_is_kept(
    tmp_path: Path, fake_tools: FakeTools, compose_copy: Path
) -> None:
    _ensure(fake_tools, tmp_path, compose_copy)
    old_id = str(fake_tools.images["kchaos/kafka:4.4.0"]["Id"])
    fake_tools.in_use.add(old_id)
    (compose_copy / "kafka" / "config" / "jmx-exporter.yaml").write_text("rules: []\n")
    _ensure(fake_tools, tmp_path, compose_copy)  # no error although rmi is refused
    assert ("docker", "rmi", old_id) in fake_tools.calls
    assert fake_tools.removed == []
    # once the container is gone, the next build removes it
    fake_tools.in_use.clear()
    (compose_copy / "kafka" / "config" / "jmx-exporter.yaml").write_text("rules: [{}]\n")
    _ensure(fake_tools, tmp_path, compose_copy)
    assert old_id in fake_tools.removed


def test_new_base_rebuilds_both_images_and_force_rebuilds_all(
    tmp_path: Path, fake_tools: FakeTools, compose_copy: Path
) -> None:
    _ensure(fake_tools, tmp_path, compose_copy)
    del fake_tools.images["kchaos/base:bookworm"]
    fake_tools.calls.clear()
    _ensure(fake_tools, tmp_path, compose_copy)
    # the rootfs tarball is cached: import only, no debootstrap
    assert _builds(fake_tools) == [
        "kchaos/base:bookworm",
        "kchaos/kafka:4.4.0",
        "kchaos/toxiproxy:2.12.0",
    ]
    assert not any(Path(c[0]).name == "debootstrap" for c in fake_tools.calls)
    fake_tools.calls.clear()
    _ensure(fake_tools, tmp_path, compose_copy, force=True)
    assert len(_builds(fake_tools)) == 3


def test_other_version_builds_its_kafka_image_only(
    tmp_path: Path, fake_tools: FakeTools, compose_copy: Path
) -> None:
    _ensure(fake_tools, tmp_path, compose_copy)
    fake_tools.calls.clear()
    images = _ensure(fake_tools, tmp_path, compose_copy, kafka_version="3.3.2")
    assert images.kafka == "kchaos/kafka:3.3.2" and images.kafka_version == "3.3.2"
    assert _builds(fake_tools) == ["kchaos/kafka:3.3.2"]
    build = next(c for c in fake_tools.calls if c[:2] == ("docker", "build"))
    assert "KCHAOS_LOG4J=1" in build and "KAFKA_VERSION=3.3.2" in build


def test_bad_version_fails_before_any_tool_runs(
    tmp_path: Path, fake_tools: FakeTools, compose_copy: Path
) -> None:
    with pytest.raises(ConfigError):
        _ensure(fake_tools, tmp_path, compose_copy, kafka_version="3.2.0")
    assert fake_tools.calls == []


def test_docker_build_failure_names_the_image_and_tail(
    tmp_path: Path, fake_tools: FakeTools, compose_copy: Path
) -> None:
    fake_tools.fail["build kchaos/toxiproxy:2.12.0"] = (1, "Step 3/5 : COPY x\nno such file: x")
    with pytest.raises(ImageBuildError) as info:
        _ensure(fake_tools, tmp_path, compose_copy)
    assert "docker build kchaos/toxiproxy:2.12.0 failed" in str(info.value)
    assert "no such file: x" in str(info.value)
    assert "Traceback" not in str(info.value)


def test_registry_pulls_only_missing_images(
    tmp_path: Path, fake_tools: FakeTools, compose_copy: Path
) -> None:
    fake_tools.add_image("ghcr.io/shopify/toxiproxy:2.12.0")
    images = _ensure(fake_tools, tmp_path, compose_copy, source="registry")
    assert images == ImageSet("apache/kafka:4.4.0", "ghcr.io/shopify/toxiproxy:2.12.0", "4.4.0")
    pulls = [c[2] for c in fake_tools.calls if c[:2] == ("docker", "pull")]
    assert pulls == ["apache/kafka:4.4.0"]
    fake_tools.calls.clear()
    _ensure(fake_tools, tmp_path, compose_copy, source="registry", force=True)
    assert len([c for c in fake_tools.calls if c[:2] == ("docker", "pull")]) == 2


def test_registry_unreachable_says_so_and_points_offline(
    tmp_path: Path, fake_tools: FakeTools, compose_copy: Path
) -> None:
    fake_tools.fail["docker pull"] = (
        1,
        'Error response from daemon: Get "https://registry-1.docker'
        '.io/v2/": dial tcp: lookup registry-1.docker.io: no such host',
    )
    with pytest.raises(ImageBuildError) as info:
        _ensure(fake_tools, tmp_path, compose_copy, source="registry")
    message = str(info.value)
    assert "could not pull apache/kafka:4.4.0" in message
    assert "kchaos images build" in message and "no such host" in message


def test_every_step_reports_its_duration(
    tmp_path: Path, fake_tools: FakeTools, compose_copy: Path
) -> None:
    reporter = Reporter()
    ensure_images(
        reporter=reporter, runner=fake_tools, cache=tmp_path / "c", compose_dir=compose_copy
    )
    finished = [line for line in reporter.lines if line.endswith("s)")]
    assert any("debootstrap" in line for line in finished)
    assert any("docker build kchaos/kafka:4.4.0" in line for line in finished)
    assert reporter.lines[-1].startswith("[images] images ready")


def test_check_and_tail_helpers(tmp_path: Path) -> None:
    ok = Completed(("true",), 0, "fine")
    assert check(ok, "x", tmp_path / "log") is ok
    assert (tmp_path / "log").read_text() == "true\nfine"
    assert tail("\n".join(str(i) for i in range(50)), 3) == "47\n48\n49"
    missing = subprocess_runner(["/nonexistent/program-kchaos"])
    assert missing.returncode == 127


def test_cli_build_and_list(monkeypatch: pytest.MonkeyPatch, fake_tools: FakeTools) -> None:
    from kchaos.cli import images as commands

    seen: dict[str, object] = {}

    def fake_ensure(kafka_version: str | None, source: str, *, force: bool) -> ImageSet:
        seen.update(version=kafka_version, source=source, force=force)
        return ImageSet("kchaos/kafka:3.3.2", "kchaos/toxiproxy:2.12.0", "3.3.2")

    monkeypatch.setattr(commands, "ensure_images", fake_ensure)
    result = CliRunner().invoke(
        commands.images_cmd,
        ["build", "--kafka-version", "3.3.2", "--source", "offline", "--force"],
        standalone_mode=False,
    )
    assert result.exception is None, result.output
    assert seen == {"version": "3.3.2", "source": "offline", "force": True}
    assert "kafka=kchaos/kafka:3.3.2" in result.output
    bad = CliRunner().invoke(commands.images_cmd, ["build", "--source", "hub"])
    assert bad.exit_code == 2

    fake_tools.add_image("kchaos/base:bookworm", {"io.kchaos.inputs": "f" * 64})
    fake_tools.add_image("kchaos/kafka:4.4.0")
    monkeypatch.setattr(commands, "subprocess_runner", fake_tools)
    listed = CliRunner().invoke(commands.images_cmd, ["list"], standalone_mode=False)
    assert listed.exception is None, listed.output
    assert "kchaos/kafka:4.4.0" in listed.output and "inputs=ffffffffffff" in listed.output
    assert "kchaos/toxiproxy:2.12.0" in listed.output and "missing" in listed.output


def test_no_docker_engine_is_said_plainly(
    tmp_path: Path, fake_tools: FakeTools, compose_copy: Path
) -> None:
    fake_tools.fail["docker image inspect"] = (
        1,
        "[]\nCannot connect to the Docker daemon at unix:///x.sock. Is the docker daemon running?",
    )
    with pytest.raises(ImageBuildError, match="is the Docker engine running") as info:
        _ensure(fake_tools, tmp_path, compose_copy)
    assert "Cannot connect to the Docker daemon" in str(info.value)
    assert not any(c[:2] in (("docker", "import"), ("docker", "build")) for c in fake_tools.calls)
