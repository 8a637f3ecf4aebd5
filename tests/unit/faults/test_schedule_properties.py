"""Property tests: any valid random spec gives a deterministic, well-formed schedule."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kchaos.faults import from_spec

NAMES = ["pause", "latency", "kill", "isolate", "disk-stall", "client-cut"]


@st.composite
def random_specs(draw: st.DrawFn) -> dict[str, Any]:
    lo_f = draw(st.floats(0.1, 5))
    lo_q = draw(st.floats(0, 5))
    entries = [
        {"fault": name, "weight": draw(st.floats(0.1, 3))}
        for name in draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    ]
    return {
        "type": "random",
        "start_s": draw(st.floats(0, 10)),
        "duration_s": draw(st.floats(0, 200)),
        "fault_s": [lo_f, lo_f + draw(st.floats(0, 10))],
        "quiet_s": [lo_q, lo_q + draw(st.floats(0, 10))],
        "concurrency": draw(st.integers(1, 3)),
        "stagger_s": draw(st.floats(0, 3)),
        "faults": entries,
    }


@settings(max_examples=60, deadline=None)
@given(spec=random_specs(), seed=st.integers(0, 2**32))
def test_random_schedules_are_well_formed(spec: dict[str, Any], seed: int) -> None:
    s = from_spec(spec, seed=seed)
    assert s.to_list() == from_spec(spec, seed=seed).to_list()
    start, end = spec["start_s"], spec["start_s"] + spec["duration_s"]
    ats = [f.at for f in s.faults]
    assert ats == sorted(ats)
    assert [f.id for f in s.faults] == [f"f-{i}" for i in range(1, len(s.faults) + 1)]
    lo, hi = spec["fault_s"]
    for f in s.faults:
        assert start - 1e-6 <= f.at and f.end <= end + 1e-5
        assert lo - 1e-5 <= f.duration <= hi + 1e-5
        assert f.spec.fault in NAMES
    if spec["concurrency"] == 1:
        for x, y in zip(s.faults, s.faults[1:], strict=False):
            assert y.at - x.end >= spec["quiet_s"][0] - 1e-5
