"""``kchaos merge OUT SHARD_DIR...``: one page over the shards of one plan.

    kchaos matrix --tag known-bug --shard 1/2 --out shard-1     # machine 1
    kchaos matrix --tag known-bug --shard 2/2 --out shard-2     # machine 2
    kchaos merge merged shard-1 shard-2

Each shard directory's ``shard.json`` (:mod:`kchaos.harness.run.shard`) names the plan,
every cell with its shard, and the cells it finished. The merge reads each finished cell's
run directory (``SHARD_DIR/LABEL``) and hands the runs, in plan order, to the batch's own
page writer (the matrix's, the suite's or the soak's): OUT gets the report.html, junit.xml
and summary.json an unsharded run of the plan would have written, its links pointing into
the shard directories.

A shard that is missing (no directory given for it, a directory that does not exist or
has no shard.json) or that did not run to the end (``complete: false``: killed, timed
out) is named above the page's tables; each cell it did not finish is an error row; the
exit code is then at least 4. Otherwise the exit code is the unsharded run's: 0 when every
run ended as expected, else the worst run's. Shards of different plans (another
command, other scenarios, another N) are bad input (exit 3). What the shards measured is
folded into the durations file, so the next split is balanced by it.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from kchaos.harness.errors import ConfigError, HistoryError, KchaosError
from kchaos.harness.run.shard import cell_key, record_durations
from kchaos.harness.rundir.expect import worst_exit
from kchaos.harness.rundir.files import read_object
from kchaos.harness.rundir.names import SHARD_JSON
from kchaos.harness.rundir.rundir import RunDir

# shard.json's fields that a merge reads, and the type each must have
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "kind": str,
    "plan": str,
    "shard": int,
    "of": int,
    "complete": bool,
    "context": dict,
    "plan_cells": list,
    "done": dict,
}
_CELL_FIELDS: dict[str, type | tuple[type, ...]] = {
    "label": str,
    "scenario": str,
    "shard": int,
}
KINDS = ("matrix", "suite", "soak")


def read_shard(shard: RunDir) -> dict[str, Any] | None:
    """A shard directory's shard.json, checked; None when it has none."""
    file = shard.shard_json
    data = read_object(file)
    if data is None:
        return None
    for name, kind in _FIELDS.items():
        if not isinstance(data.get(name), kind):
            raise HistoryError(f"expected {_type_name(kind)}", file=str(file), field=name)
    if data["kind"] not in KINDS:
        raise HistoryError(f"expected one of {', '.join(KINDS)}", file=str(file), field="kind")
    for i, cell in enumerate(data["plan_cells"]):
        for name, kind in _CELL_FIELDS.items():
            if not isinstance(cell, dict) or not isinstance(cell.get(name), kind):
                raise HistoryError(
                    f"expected {_type_name(kind)}", file=str(file), field=f"plan_cells.{i}.{name}"
                )
    return data


def _type_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", bool: "true or false"}
    names.update({dict: "an object", list: "a list"})
    return names.get(kind, str(kind)) if isinstance(kind, type) else "a value"


def merge(
    out: Path,
    shard_dirs: Sequence[Path],
    *,
    console: Any = None,
    durations: Path | None = None,
) -> int:
    """Write OUT's page, junit.xml and summary.json over the shards; the exit code as the
    module says."""
    from kchaos.harness.run.suite import suite_dir_for
    from kchaos.reports.console import make_console

    console = console or make_console()
    if not shard_dirs:
        raise ConfigError("name at least one shard directory", field="SHARD_DIR")
    found: list[tuple[RunDir, dict[str, Any]]] = []
    problems: list[str] = []
    for d in shard_dirs:
        if not d.is_dir():
            problems.append(f"{d}: no such directory")
            continue
        shard = RunDir(d)
        record = read_shard(shard)
        if record is None:
            problems.append(f"{d}: no {SHARD_JSON} (its batch never started, or it is not one)")
            continue
        found.append((shard, record))
    if not found:
        raise ConfigError("no shard directory to merge: " + "; ".join(problems), field="SHARD_DIR")
    first_dir, first = found[0]
    shards: dict[int, tuple[RunDir, dict[str, Any]]] = {}
    for shard, record in found:
        if (record["kind"], record["plan"], record["of"]) != (
            first["kind"],
            first["plan"],
            first["of"],
        ):
            raise ConfigError(
                f"holds shard {record['shard']}/{record['of']} of {record['kind']} plan "
                f"{record['plan']}, but {first_dir} one of {first['kind']} plan "
                f"{first['plan']} in {first['of']} shards (another command, other cells, "
                "or a split by another durations file)",
                file=str(shard.shard_json),
            )
        if record["shard"] in shards:
            raise ConfigError(
                f"shard {record['shard']}/{record['of']} is given twice: "
                f"{shards[record['shard']][0]} and {shard}",
                field="SHARD_DIR",
            )
        shards[record["shard"]] = (shard, record)
    count = first["of"]
    for k in range(1, count + 1):
        if k not in shards:
            problems.append(f"shard {k}/{count}: missing (no output directory of it given)")
        elif not shards[k][1]["complete"]:
            problems.append(f"shard {k}/{count} ({shards[k][0]}): did not run to the end")

    from kchaos.reports.build import read_run_report
    from kchaos.reports.suite import SuiteFailure

    reports: list[Any] = []
    failures: list[Any] = []
    codes: list[int] = []
    measured: dict[str, float] = {}
    for cell in first["plan_cells"]:
        k, label = cell["shard"], cell["label"]
        version, seed = cell.get("kafka_version"), cell.get("seed")
        where = shards.get(k)
        done = where[1]["done"].get(label) if where else None
        if where is None or not isinstance(done, dict):
            why = "missing" if where is None else "did not run to the end"
            failures.append(
                SuiteFailure(
                    cell["scenario"], f"not run: shard {k}/{count} {why}", None, version, seed
                )
            )
            continue
        run_dir = where[0].path / label
        codes.append(int(done.get("exit_code") or 0))
        if done.get("error"):
            failures.append(
                SuiteFailure(cell["scenario"], str(done["error"]), str(run_dir), version, seed)
            )
            continue
        try:
            reports.append(read_run_report(run_dir))
        except KchaosError as exc:
            failures.append(
                SuiteFailure(
                    cell["scenario"], f"cannot be read: {exc}", str(run_dir), version, seed
                )
            )
            codes.append(KchaosError.exit_code)
            continue
        if isinstance(done.get("seconds"), int | float):
            measured[cell_key(cell["scenario"], version)] = float(done["seconds"])

    out = suite_dir_for("merge", out)
    preface = [_problems_html(problems)] if problems else []
    _write(first["kind"], out, first["context"], reports, failures, console, preface)
    for p in problems:
        console.print(f"[red]incomplete: {escape(p)}[/]")
    if durations is not None and measured:
        record_durations(durations, measured)
    if problems:
        codes.append(KchaosError.exit_code)
    return worst_exit(codes)


def _problems_html(problems: Sequence[str]) -> str:
    items = "".join(f"<li>{escape(p)}</li>" for p in problems)
    return (
        "<div class='banner bad'>Incomplete: not every shard ran to the end; the runs "
        f"they did not finish are error rows below</div><ul>{items}</ul>"
    )


def _write(
    kind: str,
    out: Path,
    context: dict[str, Any],
    reports: list[Any],
    failures: list[Any],
    console: Any,
    preface: list[str],
) -> None:
    """The batch's own page writer, with the context its shards recorded."""
    title = str(context.get("title", f"kchaos {kind}"))
    if kind == "matrix":
        from kchaos.harness.run.matrix import merge_context, write_matrix

        write_matrix(out, title, reports, failures, console, merge_context(context), preface)
    elif kind == "suite":
        from kchaos.harness.run.suite import write_suite

        write_suite(out, title, reports, failures, console, preface)
    else:
        from kchaos.harness.run.soak import write_soak

        planned = {int(k): list(v) for k, v in (context.get("planned") or {}).items()}
        write_soak(
            out,
            reports,
            failures,
            kafka_version=str(context.get("kafka_version")),
            seed_base=int(context.get("seed_base") or 0),
            planned=planned,
            console=console,
            title=title,
            preface=preface,
        )
