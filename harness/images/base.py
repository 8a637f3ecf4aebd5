"""The offline base image ``kchaos/base:bookworm``: a debootstrap rootfs (cached as a
tarball under the cache dir) imported into Docker. Nothing is pulled from a registry."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from kchaos.harness.images.dockercli import DockerCli
from kchaos.harness.images.steps import Reporter, Runner, check
from kchaos.harness.images.versions import BASE_IMAGE, INPUTS_LABEL

SUITE = "bookworm"
PACKAGES = ("openjdk-17-jre-headless", "procps", "iproute2", "iptables")
FALLBACK_MIRROR = "http://deb.debian.org/debian"
SOURCES_LIST = Path("/etc/apt/sources.list")
SOURCES_DIR = Path("/etc/apt/sources.list.d")


def debian_mirror(
    files: Iterable[Path] | None = None, suite: str = SUITE, environ: dict[str, str] | None = None
) -> str:
    """The Debian mirror apt uses for ``suite`` (KCHAOS_DEBIAN_MIRROR overrides it).

    Reads one-line ``deb URI SUITE ...`` entries and deb822 ``.sources`` stanzas; a
    security or updates suite never counts. Falls back to deb.debian.org.
    """
    env = os.environ if environ is None else environ
    if env.get("KCHAOS_DEBIAN_MIRROR"):
        return env["KCHAOS_DEBIAN_MIRROR"].rstrip("/")
    if files is None:
        files = [
            SOURCES_LIST,
            *sorted(SOURCES_DIR.glob("*.list")),
            *sorted(SOURCES_DIR.glob("*.sources")),
        ]
    for path in files:
        try:
            text = path.read_text()
        except OSError:
            continue
        found = (
            _from_deb822(text, suite) if path.suffix == ".sources" else _from_one_line(text, suite)
        )
        if found:
            return found.rstrip("/")
    return FALLBACK_MIRROR


def _from_one_line(text: str, suite: str) -> str | None:
    for line in text.splitlines():
        words = re.sub(r"\[[^]]*\]", " ", line.split("#", 1)[0]).split()
        if len(words) >= 3 and words[0] == "deb" and words[2] == suite:
            return words[1]
    return None


def _from_deb822(text: str, suite: str) -> str | None:
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line:
                continue
            key, value = line.split(":", 1)
            fields[key.strip().lower()] = value.strip()
        if "deb" not in fields.get("types", "").split():
            continue
        if fields.get("enabled", "yes").lower() == "no":
            continue
        if suite in fields.get("suites", "").split() and fields.get("uris"):
            return fields["uris"].split()[0]
    return None


def base_params(mirror: str) -> dict[str, str]:
    return {
        "image": BASE_IMAGE,
        "suite": SUITE,
        "variant": "minbase",
        "include": ",".join(PACKAGES),
        "mirror": mirror,
        "layout": "2",
    }


def build_base(
    docker: DockerCli,
    runner: Runner,
    reporter: Reporter,
    cache: Path,
    inputs: str,
    mirror: str,
) -> None:
    """Import the cached rootfs tarball, making it first with debootstrap if needed."""
    tarball = cache / "base" / f"rootfs-{SUITE}-{inputs[:12]}.tar.gz"
    logs = cache / "logs"
    if tarball.exists():
        reporter.say(f"rootfs tarball cached: {tarball}")
    else:
        with reporter.step(f"debootstrap {SUITE} from {mirror}") as result:
            make_rootfs_tarball(runner, tarball, mirror, logs / "debootstrap.log")
            result.text = f"{tarball.stat().st_size / 1e6:.0f} MB tarball"
    with reporter.step(f"docker import {BASE_IMAGE}"):
        docker.import_tarball(
            tarball,
            BASE_IMAGE,
            [f"LABEL {INPUTS_LABEL}={inputs}", "ENV LANG=C.UTF-8", 'CMD ["/bin/bash"]'],
            logs / "base-import.log",
        )


def make_rootfs_tarball(runner: Runner, tarball: Path, mirror: str, log: Path) -> None:
    tarball.parent.mkdir(parents=True, exist_ok=True)
    rootfs = tarball.parent / f"{tarball.name}.rootfs"
    shutil.rmtree(rootfs, ignore_errors=True)
    try:
        argv = [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(PACKAGES)}",
            SUITE,
            str(rootfs),
            mirror,
        ]
        check(runner(argv, timeout=1800), "debootstrap", log)
        # Downloaded packages and apt lists only make the image bigger.
        for sub in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for entry in (rootfs / sub).glob("*"):
                if entry.is_file():
                    entry.unlink()
        partial = tarball.with_name(tarball.name + ".part")
        argv = ["tar", "--numeric-owner", "-C", str(rootfs), "-czf", str(partial), "."]
        check(runner(argv, timeout=1800), "tar of the rootfs", log.with_name("rootfs-tar.log"))
        partial.rename(tarball)
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)
