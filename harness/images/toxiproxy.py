"""The offline Toxiproxy image: the server built with Go from the module proxy (pinned),
on the offline Debian base (which has iptables for client-cut faults)."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import tempfile
from pathlib import Path

from kchaos.harness.errors import ImageBuildError
from kchaos.harness.images.dockercli import DockerCli
from kchaos.harness.images.steps import Reporter, Runner, check
from kchaos.harness.images.versions import INPUTS_LABEL, TOXIPROXY_VERSION

MODULE = "github.com/Shopify/toxiproxy/v2"
GO_CANDIDATES = ("/usr/local/go/bin/go", "go")
MIN_GO = (1, 23)  # the `go` directive of toxiproxy v2.12.0's go.mod
# Fetched as a Go module through the module proxy when the local go is older (Debian
# bookworm's golang-go is 1.19); the toolchain module holds a complete Go distribution.
FALLBACK_TOOLCHAIN = "go1.23.12"


def find_go() -> str:
    for candidate in GO_CANDIDATES:
        if os.path.isabs(candidate) and os.access(candidate, os.X_OK):
            return candidate
        found = shutil.which(candidate)
        if found:
            return found
    return "go"  # fails later with a clear "not found" from the runner


def go_version(text: str) -> tuple[int, int] | None:
    """``go1.19.8`` (or ``go version go1.26.8 linux/amd64``) -> (1, 19)."""
    match = re.search(r"go(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def toolchain_module(version: str = FALLBACK_TOOLCHAIN, machine: str | None = None) -> str:
    arch = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(
        (machine or platform.machine()).lower(), "amd64"
    )
    return f"golang.org/toolchain@v0.0.1-{version}.linux-{arch}"


def usable_go(runner: Runner, reporter: Reporter, cache: Path) -> str:
    """A go new enough for Toxiproxy: the local one, or the toolchain module fetched with it."""
    go = find_go()
    env = go_env(cache, cache / "go" / "bin")
    env["GOTOOLCHAIN"] = "local"
    found = runner([go, "env", "GOVERSION"], env=env, timeout=60)
    have = go_version(found.output) if found.returncode == 0 else None
    if have is None:
        check(found, f"`{go} env GOVERSION` (is Go installed?)")
        raise ImageBuildError(f"cannot tell the version of {go}: {found.output.strip()!r}")
    if have >= MIN_GO:
        return go
    module = toolchain_module()
    with reporter.step(
        f"go {have[0]}.{have[1]} is older than {MIN_GO[0]}.{MIN_GO[1]}: "
        f"fetching {module} from the module proxy"
    ):
        done = check(
            runner([go, "mod", "download", "-json", module], env=env, timeout=1800),
            "go mod download (Go toolchain)",
            cache / "logs" / "go-toolchain.log",
        )
        start = done.output.find("{")
        directory = json.loads(done.output[start:]).get("Dir", "") if start >= 0 else ""
        binary = Path(directory, "bin", "go")
        if not directory or not binary.exists():
            raise ImageBuildError(f"the toolchain module has no bin/go (in {directory!r})")
        # Module zips keep no file modes: make the distribution's programs executable.
        for sub in ("bin", "pkg/tool"):
            for path in Path(directory, sub).rglob("*"):
                if path.is_file():
                    path.chmod(0o755)
    return str(binary)


def go_env(cache: Path, bin_dir: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    go = cache / "go"
    env.update(
        {
            "CGO_ENABLED": "0",
            "GOPATH": str(go / "path"),
            "GOMODCACHE": str(go / "modcache"),
            "GOCACHE": str(go / "cache"),
            "GOBIN": str(bin_dir),
            "GOFLAGS": "-trimpath",
        }
    )
    return env


def go_install_argv(go: str, version: str = TOXIPROXY_VERSION) -> list[str]:
    return [
        go,
        "install",
        f"-ldflags=-s -w -X {MODULE}.Version={version}",
        f"{MODULE}/cmd/server@v{version}",
    ]


def toxiproxy_binary(runner: Runner, reporter: Reporter, cache: Path) -> Path:
    """The cached server binary, built with ``go install`` when missing."""
    target = cache / "go" / "bin" / f"toxiproxy-server-{TOXIPROXY_VERSION}"
    if target.exists():
        reporter.say(f"toxiproxy-server {TOXIPROXY_VERSION} cached: {target}")
        return target
    go = usable_go(runner, reporter, cache)
    with reporter.step(f"go install toxiproxy server v{TOXIPROXY_VERSION}"):
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            check(
                runner(go_install_argv(go), env=go_env(cache, Path(tmp)), timeout=1800),
                "go install (Toxiproxy server)",
                cache / "logs" / "go-toxiproxy.log",
            )
            Path(tmp, "server").rename(target)
    return target


def toxiproxy_params(base_id: str) -> dict[str, str]:
    return {"image": "toxiproxy", "toxiproxy": TOXIPROXY_VERSION, "base": base_id, "layout": "1"}


def build_toxiproxy_image(
    docker: DockerCli,
    reporter: Reporter,
    dockerfile: Path,
    binary: Path,
    tag: str,
    inputs: str,
    cache: Path,
) -> None:
    work = cache / "contexts"
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="toxiproxy-", dir=work) as tmp:
        ctx = Path(tmp)
        shutil.copy2(dockerfile, ctx / "Dockerfile")
        shutil.copy2(binary, ctx / "toxiproxy-server")
        with reporter.step(f"docker build {tag}"):
            docker.build(
                ctx,
                tag,
                {"TOXIPROXY_VERSION": TOXIPROXY_VERSION},
                {INPUTS_LABEL: inputs},
                cache / "logs" / "toxiproxy-build.log",
            )
