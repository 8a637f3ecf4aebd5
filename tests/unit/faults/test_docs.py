"""docs/faults.md documents every fault family and every parameter."""

from __future__ import annotations

from pathlib import Path

from kchaos.faults import registry

REPO_ROOT = Path(__file__).resolve().parents[3]  # the source tree, not the package


def test_every_fault_and_param_is_documented() -> None:
    text = (REPO_ROOT / "docs" / "faults.md").read_text()
    for name, cls in registry().items():
        rows = [
            line for line in text.splitlines() if line.startswith(f"| {cls.family} | `{name}` |")
        ]
        assert len(rows) == 1, name
        assert f"`{cls.default_target}`" in rows[0], name
        for p in cls.params_spec:
            if p.name in ("link", "direction", "toxicity"):
                assert "common¹" in rows[0]
            else:
                assert f"`{p.name}`" in rows[0], (name, p.name)
