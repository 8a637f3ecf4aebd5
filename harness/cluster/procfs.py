"""Host processes as /proc shows them: the one reader of ``/proc/PID/stat``."""

from __future__ import annotations

from pathlib import Path


def stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name, that is from field 3 (the
    state letter) on; None when there is no such process. The command name is in
    parentheses and may hold spaces and parentheses itself, so the fields start after
    the last ``)``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()
