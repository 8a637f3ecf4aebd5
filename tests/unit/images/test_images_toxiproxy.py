"""The Toxiproxy server build: pinned module, static binary, caches, old Go handled."""

from __future__ import annotations

from pathlib import Path

import pytest
from images_fakes import FakeTools

from kchaos.harness.errors import ImageBuildError
from kchaos.harness.images.steps import Reporter
from kchaos.harness.images.toxiproxy import (
    go_env,
    go_install_argv,
    go_version,
    toolchain_module,
    toxiproxy_binary,
)


def test_install_command_is_pinned_and_stamps_the_version() -> None:
    argv = go_install_argv("/usr/local/go/bin/go")
    assert argv[:2] == ["/usr/local/go/bin/go", "install"]
    assert argv[-1] == "github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0"
    assert "-X github.com/Shopify/toxiproxy/v2.Version=2.12.0" in argv[2]


def test_go_environment_stays_in_the_cache(tmp_path: Path) -> None:
    env = go_env(tmp_path, tmp_path / "bin", base={"HOME": "/root"})
    assert env["CGO_ENABLED"] == "0"
    for key in ("GOPATH", "GOMODCACHE", "GOCACHE"):
        assert env[key].startswith(str(tmp_path / "go"))
    assert env["GOBIN"] == str(tmp_path / "bin") and env["HOME"] == "/root"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("go1.19.8", (1, 19)), ("go version go1.26.8 linux/amd64", (1, 26)), ("devel", None)],
)
def test_go_version(text: str, expected: tuple[int, int] | None) -> None:
    assert go_version(text) == expected


def test_toolchain_module_names() -> None:
    assert toolchain_module("go1.23.12", "x86_64") == (
        "golang.org/toolchain@v0.0.1-go1.23.12.linux-amd64"
    )
    assert toolchain_module("go1.23.12", "aarch64").endswith("linux-arm64")


def test_binary_built_once_then_cached(tmp_path: Path, fake_tools: FakeTools) -> None:
    binary = toxiproxy_binary(fake_tools, Reporter(), tmp_path)
    assert binary == tmp_path / "go" / "bin" / "toxiproxy-server-2.12.0" and binary.exists()
    calls = len(fake_tools.calls)
    assert toxiproxy_binary(fake_tools, Reporter(), tmp_path) == binary
    assert len(fake_tools.calls) == calls
    assert not any("mod" in c for c in fake_tools.calls)  # a new enough go: no toolchain


def test_old_go_fetches_a_toolchain_module_and_builds_with_it(
    tmp_path: Path, fake_tools: FakeTools
) -> None:
    fake_tools.go_version = "go1.19.8"
    fake_tools.toolchain_root = tmp_path / "modcache"
    reporter = Reporter()
    toxiproxy_binary(fake_tools, reporter, tmp_path)
    download = next(c for c in fake_tools.calls if c[1:3] == ("mod", "download"))
    assert download[-1].startswith("golang.org/toolchain@v0.0.1-go1.23.")
    install = next(c for c in fake_tools.calls if c[1] == "install")
    assert install[0].startswith(str(tmp_path / "modcache")) and install[0].endswith("/bin/go")
    assert Path(install[0]).stat().st_mode & 0o111
    assert any("older than 1.23" in line for line in reporter.lines)


def test_go_install_failure_is_an_image_build_error(tmp_path: Path, fake_tools: FakeTools) -> None:
    fake_tools.fail["install"] = (1, "go: github.com/Shopify/toxiproxy/v2@v2.12.0: 403 Forbidden")
    with pytest.raises(ImageBuildError, match="403 Forbidden"):
        toxiproxy_binary(fake_tools, Reporter(), tmp_path)
    assert not (tmp_path / "go" / "bin" / "toxiproxy-server-2.12.0").exists()
