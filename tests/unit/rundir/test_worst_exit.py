"""A batch's exit code from its runs' (suite, matrix, soak, merge, SRE validation)."""

from __future__ import annotations

import pytest

from kchaos.harness.rundir.expect import worst_exit


@pytest.mark.parametrize(
    ("codes", "worst"),
    [
        ([], 0),
        ([0, 0], 0),
        ([0, 2, 5], 5),  # not judged over unknown
        ([5, 6, 2], 6),  # not exercised over not judged
        ([6, 1, 5], 1),  # a red run is never hidden behind a blind one
        ([1, 4], 4),  # a run that failed
        ([4, 130], 130),
        ([1, 77], 77),  # a code this table does not know: the most severe
    ],
)
def test_a_batchs_exit_code_is_its_most_telling_runs(codes: list[int], worst: int) -> None:
    assert worst_exit(codes) == worst
