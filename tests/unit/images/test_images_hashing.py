"""Input hashes decide rebuilds: equal inputs equal hash, any change a new one."""

from __future__ import annotations

from pathlib import Path

from kchaos.harness.images.hashing import hash_inputs


def _tree(root: Path) -> list[Path]:
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "run").write_text("#!/bin/bash\nexec java\n")
    (root / "Dockerfile").write_text("FROM kchaos/base:bookworm\n")
    return [root / "Dockerfile", root / "bin"]


def test_same_inputs_same_hash_wherever_the_tree_lives(tmp_path: Path) -> None:
    a = _tree(tmp_path / "a")
    b = _tree(tmp_path / "b")
    assert hash_inputs({"v": "1"}, a, tmp_path / "a") == hash_inputs({"v": "1"}, b, tmp_path / "b")
    # order of the listed inputs does not matter
    assert hash_inputs({"v": "1"}, a, tmp_path / "a") == hash_inputs(
        {"v": "1"}, list(reversed(a)), tmp_path / "a"
    )


def test_content_mode_param_and_new_file_change_the_hash(tmp_path: Path) -> None:
    root = tmp_path / "t"
    files = _tree(root)
    first = hash_inputs({"v": "1"}, files, root)
    assert hash_inputs({"v": "2"}, files, root) != first
    (root / "bin" / "run").chmod(0o755)
    moded = hash_inputs({"v": "1"}, files, root)
    assert moded != first
    (root / "bin" / "run").write_text("#!/bin/bash\nexec java -Xmx1g\n")
    edited = hash_inputs({"v": "1"}, files, root)
    assert edited not in (first, moded)
    (root / "bin" / "extra").write_text("x")
    assert hash_inputs({"v": "1"}, files, root) != edited


def test_missing_input_is_part_of_the_hash(tmp_path: Path) -> None:
    root = tmp_path / "t"
    files = _tree(root)
    with_missing = hash_inputs({}, [*files, root / "gone"], root)
    assert with_missing != hash_inputs({}, files, root)
