"""``kchaos known-bugs --release X``: the library's known bugs that affect a release.

Read without Docker and without loading whole scenarios: each known-bug scenario's
``ticket`` section (harness/scenarios/*.yaml) says which releases the bug affects, and
``catch_rates.yaml`` beside this module holds what was measured for it (per release: the
seeds, how many came out as the scenario expects there, the date and the kchaos commit;
docs/incidents.md has the runs). Each ticket comes with the command that checks it live.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

from kchaos.harness.errors import ConfigError
from kchaos.harness.rundir.tickets import KNOWN_BUG_TAG, Ticket, release

CATCH_RATES = "catch_rates.yaml"
#: Seeds the live check runs on each release (the bar a catch rate is measured at).
LIVE_SEEDS = 10


@dataclass(frozen=True)
class CatchRate:
    """One measured release of a known-bug scenario."""

    release: str
    seeds: str  # "1-10", as the runs were numbered
    caught: int  # runs that came out as the scenario expects on this release
    runs: int
    date: str
    commit: str  # the kchaos commit(s) the runs ran at
    # the scenario then required its mechanism (expect.effects seen, the defence's log
    # line): a run counted as caught showed the fault bite, not only the outcome
    mechanism: bool = False

    def text(self, ticket: Ticket) -> str:
        side = "fixed" if ticket.is_fixed(self.release) else "affected"
        return (
            f"{self.release} ({side}): {self.caught} of {self.runs} seeds ({self.seeds}) as "
            f"expected, {self.date}, kchaos {self.commit}"
        )


@dataclass(frozen=True)
class KnownBug:
    scenario: str
    ticket: Ticket
    measured: tuple[CatchRate, ...]

    def live_command(self) -> str:
        releases = ",".join(self.ticket.compare)
        return f"kchaos matrix {self.scenario} --kafka-version {releases} --seeds {LIVE_SEEDS}"


@dataclass(frozen=True)
class ReleaseView:
    """What the library knows of one release."""

    release: str
    affecting: list[KnownBug]
    not_affecting: list[KnownBug]
    outside: list[KnownBug]  # the release is older than the scenario's range


def _data_file() -> Any:
    return resources.files("kchaos.harness.scenario").joinpath(CATCH_RATES)


def load_catch_rates(
    text: str | None = None, file: str = CATCH_RATES
) -> dict[str, list[CatchRate]]:
    """Ticket id -> its measured releases; ConfigError naming file, line and field."""
    from kchaos.harness.scenario.yamlsrc import load_yaml

    if text is None:
        text = _data_file().read_text(encoding="utf-8")
    src = load_yaml(text, file)
    out: dict[str, list[CatchRate]] = {}
    for ident, rows in src.data.items():
        if not isinstance(rows, list) or not rows:
            raise src.error((ident,), "expected a list of measured releases")
        out[str(ident)] = []
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise src.error((ident, i), "expected a mapping (release, seeds, caught, ...)")
            for key in ("release", "seeds", "caught", "runs", "date", "commit"):
                if key not in row:
                    raise src.error((ident, i), f"missing {key}")
            try:
                release(str(row["release"]))
            except ValueError as exc:
                raise src.error((ident, i, "release"), str(exc)) from None
            mechanism = row.get("mechanism", False)
            if not isinstance(mechanism, bool):
                raise src.error((ident, i, "mechanism"), "expected true or false")
            counts = [row["caught"], row["runs"]]
            if not all(isinstance(n, int) and n >= 0 for n in counts) or counts[0] > counts[1]:
                raise src.error((ident, i, "caught"), "expected 0 <= caught <= runs (integers)")
            out[str(ident)].append(
                CatchRate(
                    release=str(row["release"]),
                    seeds=str(row["seeds"]),
                    caught=int(row["caught"]),
                    runs=int(row["runs"]),
                    date=str(row["date"]),
                    commit=str(row["commit"]),
                    mechanism=mechanism,
                )
            )
    return out


def library_bugs(rates: dict[str, list[CatchRate]] | None = None) -> list[KnownBug]:
    """Every library scenario tagged known-bug, with its ticket and measured rates."""
    from kchaos.harness.scenario import library
    from kchaos.harness.scenario.yamlsrc import load_yaml

    rates = load_catch_rates() if rates is None else rates
    bugs = []
    for name in library.names_with_tag(KNOWN_BUG_TAG):
        path = library.resolve(name)
        src = load_yaml(path.read_text(encoding="utf-8"), str(path))
        raw = src.data.get("ticket")
        if not isinstance(raw, dict):
            raise src.error(("ticket",), f"a scenario tagged {KNOWN_BUG_TAG} has a ticket")

        def error(p: tuple[str | int, ...], message: str, src: Any = src) -> Exception:
            return src.error(("ticket", *p), message)

        ticket = Ticket.from_mapping(raw, error)
        bugs.append(KnownBug(name, ticket, tuple(rates.get(ticket.id, ()))))
    return bugs


def check_release(text: str) -> str:
    """The release as X.Y.Z, one kchaos can run and whose line the library knows;
    ConfigError (field release) otherwise."""
    from kchaos.harness.images.versions import DEFAULT_KAFKA_VERSION, MIN_KAFKA_VERSION

    try:
        number = release(text)
    except ValueError as exc:
        raise ConfigError(str(exc), field="release") from None
    oldest = ".".join(map(str, MIN_KAFKA_VERSION))
    if number < MIN_KAFKA_VERSION:
        raise ConfigError(
            f"Kafka {text} is older than {oldest}, the oldest release kchaos runs",
            field="release",
        )
    newest = release(DEFAULT_KAFKA_VERSION)
    if number[:2] > newest[:2]:
        raise ConfigError(
            f"Kafka {text} is newer than the release lines kchaos knows (up to "
            f"{newest[0]}.{newest[1]}.x): nothing is known of it",
            field="release",
        )
    return ".".join(map(str, number))


def for_release(text: str, bugs: list[KnownBug] | None = None) -> ReleaseView:
    version = check_release(text)
    bugs = library_bugs() if bugs is None else bugs
    view = ReleaseView(version, [], [], [])
    for bug in sorted(bugs, key=lambda b: b.ticket.id):
        if not bug.ticket.covers(version):
            view.outside.append(bug)
        elif bug.ticket.is_fixed(version):
            view.not_affecting.append(bug)
        else:
            view.affecting.append(bug)
    return view


def _measured(bug: KnownBug) -> list[str]:
    """The measured rows, those that required the mechanism first: only they show that the
    fault bit in every run counted; earlier rows judged the outcome alone."""
    shown = [m for m in bug.measured if m.mechanism]
    earlier = [m for m in bug.measured if not m.mechanism]
    if not bug.measured:
        return ["  measured: no catch rate recorded yet"]
    lines = []
    if shown:
        lines.append("  measured, its mechanism required (each run counted showed the fault bite):")
        lines += [f"    {m.text(bug.ticket)}" for m in shown]
    if earlier:
        lines.append(
            "  measured earlier, the outcome only (the faults' effects not yet required):"
            if shown
            else "  measured, the outcome only (the faults' effects not required):"
        )
        lines += [f"    {m.text(bug.ticket)}" for m in earlier]
    return lines


def describe(view: ReleaseView) -> list[str]:
    """The command's text: the bugs that affect the release, each with its measured
    rates and the live check; then the scenarios that cannot run there; then a count of
    the rest."""
    n = len(view.affecting)
    many = "known bug in the library affects" if n == 1 else "known bugs in the library affect"
    lines = [f"Kafka {view.release}: {n} {many} it"]
    for bug in view.affecting:
        t = bug.ticket
        since = f"from {t.affected_from} " if t.affected_from else ""
        commit = f" (fixing commit {t.commit})" if t.commit and not t.fixed_by else ""
        lines += [
            "",
            f"{t.id}: {t.title}",
            f"  affects {since}until {', '.join(t.fixed_in)}; {t.fix_note()}{commit}",
            f"  scenario: {bug.scenario}" + (f" (shows {t.kind})" if t.kind else ""),
        ]
        lines += _measured(bug)
        lines.append(f"  check it live: {bug.live_command()}")
    if view.outside:
        lines += ["", f"not checked on {view.release} (outside the scenario's range):"]
        lines += [f"  {b.ticket.id} ({b.scenario}: {b.ticket.range_note()})" for b in view.outside]
    if view.not_affecting:
        n = len(view.not_affecting)
        lines += ["", f"{n} other known bug(s) in the library do not affect {view.release}."]
    return lines
