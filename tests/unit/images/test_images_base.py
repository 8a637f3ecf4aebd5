"""Where debootstrap downloads from: the mirror apt already uses."""

from __future__ import annotations

from pathlib import Path

from kchaos.harness.images.base import FALLBACK_MIRROR, debian_mirror

DEB822 = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
"""


def test_deb822_sources(tmp_path: Path) -> None:
    path = tmp_path / "debian.sources"
    path.write_text(DEB822)
    assert debian_mirror([path], environ={}) == "http://mirror.example/debian"


def test_security_only_and_disabled_stanzas_do_not_count(tmp_path: Path) -> None:
    path = tmp_path / "x.sources"
    path.write_text(
        "Types: deb\nURIs: http://sec.example/\nSuites: bookworm-security\n\n"
        "Types: deb-src\nURIs: http://src.example/\nSuites: bookworm\n\n"
        "Types: deb\nEnabled: no\nURIs: http://off.example/\nSuites: bookworm\n"
    )
    assert debian_mirror([path], environ={}) == FALLBACK_MIRROR


def test_one_line_sources_with_options(tmp_path: Path) -> None:
    path = tmp_path / "sources.list"
    path.write_text(
        "# comment\ndeb http://sec.example/ bookworm-security main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://one.example/debian/ bookworm main\n"
    )
    assert debian_mirror([path], environ={}) == "http://one.example/debian"


def test_environment_override_and_fallback(tmp_path: Path) -> None:
    assert debian_mirror([tmp_path / "none"], environ={}) == FALLBACK_MIRROR
    assert (
        debian_mirror([], environ={"KCHAOS_DEBIAN_MIRROR": "http://local/debian/"})
        == "http://local/debian"
    )
