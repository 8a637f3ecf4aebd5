"""``history.jsonl``: the event vocabulary and the one streaming reader of its lines.

Every event is one JSON object per line (format doc, "Events"). The names here are the
values of its ``type``, ``f`` and ``process`` fields; the checker, the reports, the Spark
job and the history generator take them from this module.

:func:`read_events` streams a history without holding it: one parsed line at a time. A
last line cut short while it was written (no newline, and it begins as an event does) is
torn: it is skipped and reported, never judged. What else a line may be depends on the
reader: the checker is strict (``strict=True``: any other line that is not JSON is bad
input naming file and line), the reports are lenient (such a line is yielded as None and
counted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import orjson

from kchaos.harness.errors import HistoryError, shown
from kchaos.harness.rundir.names import HISTORY_JSONL as HISTORY_JSONL  # re-exported

# ``type``: it happened, it certainly did not, unknown; and the start of an operation.
INVOKE = "invoke"
OK = "ok"
FAIL = "fail"
INFO = "info"
TYPES: frozenset[str] = frozenset((INVOKE, OK, FAIL, INFO))

# ``f``: what the event is about.
F_SEND = "send"
F_POLL = "poll"
F_ASSIGN = "assign"
F_DRAIN = "drain"
F_DRAIN_END = "drain-end"
F_FAULT = "fault"
F_METADATA = "metadata"
# version 1.2: a transactional producer's init_transactions(), and one whole transaction
F_TXN_INIT = "txn-init"
F_TXN = "txn"
# version 1.3: an invoke with no completion of its own, written right before the client
# calls commit_transaction() or abort_transaction(); ``action`` says which
F_TXN_END = "txn-end"
FS: frozenset[str] = frozenset(
    (
        F_SEND,
        F_POLL,
        F_ASSIGN,
        F_DRAIN,
        F_DRAIN_END,
        F_FAULT,
        F_METADATA,
        F_TXN_INIT,
        F_TXN,
        F_TXN_END,
    )
)
# A ``txn-end`` line's ``action``.
ACTION_COMMIT: Final = "commit"
ACTION_ABORT: Final = "abort"
ACTIONS: tuple[str, ...] = (ACTION_COMMIT, ACTION_ABORT)

# ``isolation`` on assign and drain-end lines (version 1.2); absent on an assign line:
# read_uncommitted
READ_UNCOMMITTED: Final = "read_uncommitted"
READ_COMMITTED: Final = "read_committed"
ISOLATIONS: tuple[str, ...] = (READ_UNCOMMITTED, READ_COMMITTED)

# ``process``: a client worker's integer id, or one of these.
NEMESIS = "nemesis"
MONITOR = "monitor"
DRAIN = "drain"

# A fault line's ``phase``.
PHASE_START = "start"
PHASE_STOP = "stop"

# How long a file is read at once: large, the hot loops read millions of lines.
_BUFFER = 1 << 20


def ends_with_newline(path: Path) -> bool:
    """True when the file's last byte is a newline (its last line is complete)."""
    with path.open("rb") as fh:
        fh.seek(0, 2)
        if fh.tell() == 0:
            return True
        fh.seek(-1, 2)
        return fh.read(1) == b"\n"


def is_torn(raw: bytes) -> bool:
    """A line cut short while it was written: no newline, and it begins as an event does
    (only a file's last line can lack its newline)."""
    return not raw.endswith(b"\n") and raw[:64].lstrip()[:1] == b"{"


def read_events(
    path: str | Path,
    *,
    strict: bool = False,
    on_torn: Callable[[str], None] | None = None,
) -> Iterator[Any]:
    """Each line of ``path`` parsed, in file order (blank lines skipped).

    A torn last line ends the stream; ``on_torn`` gets a message naming file, line and
    size. ``strict``: any other line that is not JSON raises HistoryError (file, line);
    otherwise it is yielded as None. Objects are yielded as parsed; whether a line is an
    event (an object with its fields) is for the reader to judge: see :func:`numbered`
    for the line numbers a message needs.
    """
    for _, event in numbered(path, strict=strict, on_torn=on_torn):
        yield event


def numbered(
    path: str | Path,
    *,
    strict: bool = False,
    on_torn: Callable[[str], None] | None = None,
) -> Iterator[tuple[int, Any]]:
    """:func:`read_events` with each line's number (1-based) alongside its content."""
    name = str(path)
    try:
        fh = Path(path).open("rb", buffering=_BUFFER)  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise HistoryError(f"cannot open: {exc.strerror}", file=name) from None
    loads = orjson.loads
    with fh:
        no = 0
        for raw in fh:
            no += 1
            try:
                yield no, loads(raw)
                continue
            except orjson.JSONDecodeError as exc:
                if is_torn(raw):
                    if on_torn is not None:
                        on_torn(f"{name}:{no}: torn last line ignored ({len(raw)} bytes)")
                    return
                if not raw.strip():
                    continue  # a blank line holds no event (as the Spark job has it)
                if strict:
                    raise HistoryError(
                        f"not JSON ({exc}): {shown(raw)}", file=name, line=no
                    ) from None
            yield no, None
