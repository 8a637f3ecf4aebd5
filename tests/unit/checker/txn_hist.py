"""Hand-written transactional histories (format 1.2 and 1.3) for the checker tests."""

from __future__ import annotations

from typing import Any

from checker_hist import H


class TH(H):
    """:class:`H` with ``txn-init`` and ``txn`` lines, isolation, and a 1.2 drain."""

    def init(self, process: int, tid: str, typ: str = "ok") -> int:
        self.add(process=process, type="invoke", f="txn-init", transactional_id=tid)
        return self.add(
            process=process, type=typ, f="txn-init", transactional_id=tid, producer_id=7
        )

    def begin(
        self,
        process: int,
        txn: str,
        tid: str,
        *values: tuple[str, str],
        consumed: list[tuple[str, int, int, str]] | None = None,
        group: str | None = None,
        positions: list[tuple[str, int, int]] | None = None,
        copies: dict[str, str] | None = None,
    ) -> int:
        """A txn invoke sending (topic, value) pairs; ``copies``: value -> copy_of."""
        sends = []
        for topic, value in values:
            send: dict[str, Any] = {"topic": topic, "key": "k", "value": value}
            if copies and value in copies:
                send["copy_of"] = copies[value]
            sends.append(send)
        event: dict[str, Any] = {
            "process": process,
            "type": "invoke",
            "f": "txn",
            "txn": txn,
            "transactional_id": tid,
            "sends": sends,
        }
        if consumed is not None:
            event["consumed"] = [
                {"topic": t, "partition": p, "offset": o, "value": v} for t, p, o, v in consumed
            ]
        if group is not None:
            event["offsets"] = {"group": group, "positions": [list(x) for x in positions or []]}
        return self.add(**event)

    def txn_end(self, process: int, txn: str, action: str = "commit") -> int:
        """Format 1.3: the client is about to call commit (or abort) of ``txn``."""
        return self.add(process=process, type="invoke", f="txn-end", txn=txn, action=action)

    def end(
        self, process: int, txn: str, typ: str, *acks: tuple[str, int | None, int | None, str]
    ) -> int:
        """A txn completion; ``acks`` are (topic, partition, offset, value) of an ok line
        (None: not reported)."""
        event: dict[str, Any] = {"process": process, "type": typ, "f": "txn", "txn": txn}
        if acks:
            sends = []
            for topic, part, off, value in acks:
                s: dict[str, Any] = {"topic": topic, "value": value}
                if part is not None:
                    s["partition"] = part
                if off is not None:
                    s["offset"] = off
                sends.append(s)
            event["sends"] = sends
        return self.add(**event)

    def assign_iso(self, process: int, isolation: str, *tps: tuple[str, int]) -> int:
        return self.add(
            process=process,
            type="ok",
            f="assign",
            partitions=[list(tp) for tp in tps],
            isolation=isolation,
        )

    def poll_at(self, process: int, *records: tuple[str, int, int, str]) -> int:
        self.add(process=process, type="invoke", f="poll")
        return self.add(
            process=process,
            type="ok",
            f="poll",
            records=[
                {"topic": t, "partition": p, "offset": o, "value": v} for t, p, o, v in records
            ],
        )

    def drain_tp(
        self,
        topic: str,
        partition: int,
        records: list[tuple[int, str]],
        hwm: int,
        *,
        lso: int = 0,
        stable: int | None = None,
        isolation: str = "read_committed",
    ) -> int:
        """Drain lines for one partition, then its drain-end (last stable offset: hwm)."""
        if records:
            self.add(
                process="drain",
                type="ok",
                f="drain",
                records=[
                    {"topic": topic, "partition": partition, "offset": o, "value": v}
                    for o, v in records
                ],
            )
        return self.add(
            process="drain",
            type="ok",
            f="drain-end",
            topic=topic,
            partition=partition,
            log_start_offset=lso,
            high_watermark=hwm,
            isolation=isolation,
            last_stable_offset=hwm if stable is None else stable,
        )
