"""``kchaos check RUN_DIR``: judge a run's history and write results.json."""

from __future__ import annotations

from pathlib import Path

import click

from kchaos.harness.checker.api import check_run
from kchaos.harness.checker.model import Results, clip
from kchaos.harness.rundir.rundir import RunDir


def summary_lines(results: Results) -> list[str]:
    verdict = (
        "VALID" if results.valid is True else "INVALID" if results.valid is False else "UNKNOWN"
    )
    hist = results.stats.get("history", {})
    lines = [
        f"{verdict}: {hist.get('lines', 0)} lines, {hist.get('send', 0)} sends "
        f"(ok {hist.get('ok', 0)}, fail {hist.get('fail', 0)}, info {hist.get('info', 0)}), "
        f"{hist.get('partitions', 0)} partitions"
    ]
    txn = results.stats.get("transactions", {})
    if any(txn.get(o) for o in ("ok", "fail", "info", "open")):
        lines.append(
            f"  transactions: ok {txn['ok']}, fail {txn['fail']}, info {txn['info']}"
            + (f", open {txn['open']}" if txn.get("open") else "")
            + f"; {sum(txn.get('values', {}).values())} values"
        )
    lines.extend(f"  reason: {r}" for r in results.reasons)
    # did each fault bite (results.json evidence.faults)
    for fault in results.evidence.get("faults", []):
        lines.append(
            f"  fault {fault['name']} ({fault['family']}): {fault['effect']}"
            f" - {clip(fault['observed'], 160)}"
        )
    # Kafka's own lines the scenario names (results.json evidence.lines)
    for line in results.evidence.get("lines", []):
        node = "any node" if line.get("node") is None else f"node {line['node']}"
        lines.append(
            f"  log line {clip(line['contains'], 60)!r} ({node}): {line['effect']}"
            f" - {clip(line['observed'], 160)}"
        )
    for kind, anomaly in results.anomalies.items():
        first = anomaly.examples[0] if anomaly.examples else {}
        where = ", ".join(
            f"{k}={clip(first[k], 60)}"
            for k in ("value", "topic", "partition", "offset")
            if k in first
        )
        lines.append(f"  {kind}: {anomaly.count}" + (f"  (e.g. {where})" if where else ""))
    # kinds whose source was not read: neither found nor absent (docs/checker.md)
    lines.extend(f"  not judged: {kind} ({clip(why)})" for kind, why in results.unjudged.items())
    for name, out in results.checkers.items():
        if out.error:
            lines.append(f"  checker {name} failed: {out.error}")
    slo = results.stats.get("availability", {}).get("slo", {})
    for name, s in slo.items():
        state = "UNKNOWN" if s["pass"] == "unknown" else "pass" if s["pass"] else "FAIL"
        lines.append(f"  {name}: {state} (observed {s['observed']}, limit {s['threshold']})")
    lines.extend(f"  warning: {clip(w)}" for w in results.warnings)
    return lines


@click.command("check")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--quiet", "-q", is_flag=True, help="Print only the verdict line.")
def check_cmd(run_dir: Path, quiet: bool) -> int:
    """Judge RUN_DIR/history.jsonl and write RUN_DIR/results.json.

    Exit code: 0 valid, 1 invalid, 2 unknown, 3 unreadable input. Kinds that could not
    be judged (their source was not read) are listed and leave the exit code alone.
    """
    rd = RunDir(run_dir)
    results = check_run(rd)
    lines = summary_lines(results)
    click.echo("\n".join(lines[:1] if quiet else lines))
    click.echo(f"results: {rd.results}")
    return results.exit_code
