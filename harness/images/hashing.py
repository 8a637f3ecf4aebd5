"""Input hashes: an image is rebuilt only when what it is built from changed."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path


def hash_inputs(params: Mapping[str, str], files: Iterable[Path], root: Path) -> str:
    """sha256 over sorted parameters and the (relative path, content) of every file.

    Directories are walked; file order and the location of ``root`` do not matter, file
    modes do (a launcher losing its exec bit is a change).
    """
    digest = hashlib.sha256()
    for key in sorted(params):
        digest.update(f"param {key}={params[key]}\n".encode())
    paths: set[Path] = set()
    for item in files:
        if item.is_dir():
            paths.update(p for p in item.rglob("*") if p.is_file())
        elif item.is_file():
            paths.add(item)
        else:
            digest.update(f"missing {item.relative_to(root)}\n".encode())
    for path in sorted(paths, key=lambda p: p.relative_to(root).as_posix()):
        rel = path.relative_to(root).as_posix()
        mode = path.stat().st_mode & 0o111
        digest.update(f"file {rel} {mode:o} {path.stat().st_size}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()
