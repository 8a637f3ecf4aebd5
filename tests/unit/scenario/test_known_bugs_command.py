"""``kchaos known-bugs --release X``: the library's tickets that affect a release, their
measured catch rates and the live check, without Docker (through click's CliRunner)."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from kchaos.cli.scenario import known_bugs_cmd
from kchaos.harness.errors import ConfigError
from kchaos.harness.scenario import known_bugs


def known_bugs_text(release: str) -> str:
    result = CliRunner().invoke(known_bugs_cmd, ["--release", release], standalone_mode=False)
    assert result.exception is None, result.output
    assert result.return_value == 0
    return result.output


def named(text: str) -> set[str]:
    """The tickets the output lists as affecting the release (their heading lines)."""
    return set(re.findall(r"^((?:KAFKA|KIP)-[0-9]+): ", text, re.MULTILINE))


def test_3_7_1_is_affected_by_16541_and_not_by_the_bugs_fixed_in_3_7_0() -> None:
    text = known_bugs_text("3.7.1")
    assert "KAFKA-16541" in named(text)
    # fixed in 3.7.0: not named anywhere in the answer
    assert "KAFKA-15046" not in text and "KAFKA-15489" not in text
    # the measured rates of both sides and the live check come with it
    assert "3.7.0 (affected): 10 of 10 seeds" in text
    assert "3.9.1 (fixed): 10 of 10 seeds" in text
    # the rows with the reboot's effect required: two batches of five seeds, two commits
    for side in ("3.7.0 (affected)", "3.9.1 (fixed)"):
        assert (
            f"{side}: 10 of 10 seeds (16541-16550) as expected, 2026-12-07, "
            "kchaos e56e6f0-4f93598 (16541-16545), 5b5ad36 (16546-16550)"
        ) in text
    assert (
        "kchaos matrix kafka-16541-epoch-checkpoint-os-crash --kafka-version 3.7.0,3.9.1 "
        "--seeds 10" in text
    )


def test_3_6_2_is_affected_by_the_bugs_fixed_in_3_7_0_and_not_by_16541() -> None:
    text = known_bugs_text("3.6.2")
    assert {"KAFKA-15046", "KAFKA-15489"} <= named(text)
    assert "KAFKA-16541" not in named(text)
    assert "KAFKA-15375" not in text  # fixed in 3.6.0


@pytest.mark.parametrize(
    ("release", "message"),
    [
        ("3.7", "not a release number"),
        ("banana", "not a release number"),
        ("2.8.1", "older than 3.3.0"),
        ("9.1.0", "newer than the release lines kchaos knows"),
    ],
)
def test_a_bad_release_is_a_clear_error(release: str, message: str) -> None:
    result = CliRunner().invoke(known_bugs_cmd, ["--release", release], standalone_mode=False)
    assert isinstance(result.exception, ConfigError)
    assert message in str(result.exception) and "release" in str(result.exception)


def test_every_known_bug_has_a_measured_rate_on_both_compare_releases() -> None:
    for bug in known_bugs.library_bugs():
        measured = {m.release for m in bug.measured}
        assert set(bug.ticket.compare) <= measured, bug.scenario


def test_a_bad_catch_rate_row_names_its_line_and_field() -> None:
    text = 'KAFKA-1:\n  - {release: "3.7", seeds: "1", caught: 1, runs: 1, date: d, commit: c}\n'
    with pytest.raises(ConfigError) as err:
        known_bugs.load_catch_rates(text, "rates.yaml")
    assert err.value.line == 2 and "KAFKA-1.0.release" in str(err.value)
    text = "KAFKA-1:\n  - {release: 3.7.0, seeds: '1', caught: 3, runs: 1, date: d, commit: c}\n"
    with pytest.raises(ConfigError, match="caught <= runs"):
        known_bugs.load_catch_rates(text, "rates.yaml")


def test_3_4_1_is_affected_by_kip_903s_ticket_and_3_5_0_is_not() -> None:
    assert "KAFKA-14139" in named(known_bugs_text("3.4.1"))
    assert "KAFKA-14139" not in named(known_bugs_text("3.5.0"))


def test_kip_966_and_kip_501_are_listed_until_elr_is_on_by_default() -> None:
    assert {"KIP-966", "KIP-501"} <= named(known_bugs_text("4.0.0"))
    text = known_bugs_text("4.1.0")
    assert not {"KIP-966", "KIP-501"} & named(text)


def test_every_known_bug_has_its_mechanism_measured_on_both_compare_releases() -> None:
    """Issue 33: both sides proven with the mechanism required, not the outcome alone."""
    for bug in known_bugs.library_bugs():
        shown = {m.release for m in bug.measured if m.mechanism and m.caught == m.runs >= 10}
        assert set(bug.ticket.compare) <= shown, bug.scenario


def test_rows_that_judged_the_outcome_only_are_shown_apart_after_the_others() -> None:
    text = known_bugs_text("3.9.1")
    block = text[text.index("KIP-966: ") :].split("check it live")[0]
    required = block.index("measured, its mechanism required")
    earlier = block.index("measured earlier, the outcome only")
    assert required < block.index("(9661-9670)") < earlier < block.index("(1-10)")


def test_a_ticket_measured_only_before_the_mechanism_was_required_says_so() -> None:
    rates = known_bugs.load_catch_rates(
        "KAFKA-1:\n  - {release: 3.7.0, seeds: '1-10', caught: 10, runs: 10, date: d, commit: c}\n"
    )
    assert rates["KAFKA-1"][0].mechanism is False
    bug = known_bugs.library_bugs()[0]
    lines = known_bugs._measured(
        known_bugs.KnownBug(bug.scenario, bug.ticket, tuple(rates["KAFKA-1"]))
    )
    assert lines[0] == "  measured, the outcome only (the faults' effects not required):"
    with pytest.raises(ConfigError, match="true or false"):
        known_bugs.load_catch_rates(
            "KAFKA-1:\n  - {release: 3.7.0, seeds: '1', caught: 1, runs: 1, date: d,"
            " commit: c, mechanism: yes please}\n"
        )
