"""Client processes a fault has stopped (SIGSTOP), recorded on disk until they run again.

A fault aimed at a client process (``kchaos.faults.zombie``) stops a child process of the
harness, not a container, so nothing in Docker remembers it. Before it sends SIGSTOP it
writes one small file per process under the run's state directory,
``<state root>/runs/RUN_ID/paused-clients/<pid>.json`` (the pid, the process's start
time, and a label for messages), and deletes it once the process was continued. Every
heal that cannot rely on memory reads these files: ``heal_everything`` (the nemesis's
final heal, the exit heal on a signal or ``atexit``), and ``kchaos cleanup`` or a cluster
teardown for a run whose harness was killed. A process whose start time no longer
matches is another process that reused the pid: it is left alone and its record dropped.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path

from kchaos.harness.cluster.procfs import stat_fields
from kchaos.harness.cluster.topology import run_dir

DIR_NAME = "paused-clients"


def _noop(_: str) -> None:
    pass


def records_dir(run_id: str) -> Path:
    return run_dir(run_id) / DIR_NAME


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/PID/stat`` field 22),
    None when there is no such process."""
    fields = stat_fields(pid)
    if fields is None:
        return None
    try:
        return int(fields[19])  # field 22 overall: fields holds field 3 on
    except (IndexError, ValueError):
        return None


def record(run_id: str, pid: int, label: str) -> Path:
    """Remember that ``pid`` is about to be stopped (call before sending SIGSTOP)."""
    folder = records_dir(run_id)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{pid}.json"
    tmp = path.with_suffix(".tmp")
    data = {"pid": pid, "start": start_time(pid), "label": label}
    tmp.write_text(json.dumps(data), encoding="utf-8")
    tmp.replace(path)
    return path


def forget(run_id: str, pid: int) -> None:
    """The process runs again (or is gone): drop its record, and the folder once empty."""
    folder = records_dir(run_id)
    (folder / f"{pid}.json").unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # not empty, or already gone
        folder.rmdir()


def paused(run_id: str) -> list[dict[str, object]]:
    """Every record of the run (unreadable ones as ``{"pid": None, "path": ...}``)."""
    folder = records_dir(run_id)
    if not folder.is_dir():
        return []
    out: list[dict[str, object]] = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            pid = int(data["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            out.append({"pid": None, "path": str(path)})
            continue
        out.append({"pid": pid, "start": data.get("start"), "label": str(data.get("label", ""))})
    return out


def release(
    run_id: str,
    echo: Callable[[str], None] = _noop,
    dry_run: bool = False,
    kill: Callable[[int, int], None] = os.kill,
) -> list[str]:
    """SIGCONT every recorded process that is still the one recorded; drop the records.
    One line per thing done; never raises for a process that is gone."""
    done: list[str] = []
    for rec in paused(run_id):
        pid = rec["pid"]
        if not isinstance(pid, int):
            if not dry_run:
                Path(str(rec["path"])).unlink(missing_ok=True)
            done.append(f"dropped an unreadable paused-client record {rec['path']}")
            continue
        what = f"{rec['label']} (pid {pid})" if rec["label"] else f"pid {pid}"
        now = start_time(pid)
        if now is None or (rec["start"] is not None and now != rec["start"]):
            if not dry_run:
                forget(run_id, pid)
            continue  # gone, or the pid was reused: nothing of ours to continue
        if dry_run:
            done.append(f"would send SIGCONT to the paused client {what}")
            continue
        try:
            kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            forget(run_id, pid)
            continue
        except OSError as exc:
            done.append(f"error: SIGCONT to the paused client {what}: {exc}")
            continue
        forget(run_id, pid)
        done.append(f"sent SIGCONT to the paused client {what}")
    for line in done:
        echo(line)
    return done
