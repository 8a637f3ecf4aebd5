"""``zombie``: a transactional producer paused mid-transaction while a new instance of its
``transactional.id`` takes over; resumed, it must find itself fenced.

This is the nemesis of Jepsen's and kafkatest's zombie-fencing cases, aimed at a client
process instead of a broker. Target ``client:txn:TRANSACTIONAL_ID`` (the workload's
transactional worker holding that id, found through the run's client directory,
:mod:`kchaos.faults.clients`). Start:

1. SIGSTOP the worker's child process, wait ``settle_s`` for the lines it wrote before
   the stop to reach the history, and look whether a transaction of it is open (invoked,
   not completed). If none is, SIGCONT it and try again a moment later, for up to
   ``catch_s`` seconds; after that it stays stopped wherever it is.
2. Ask the workload for a replacement: a new worker (a new process id) with the same
   ``transactional.id``; its ``init_transactions`` bumps the epoch, aborts the stopped
   one's open transaction and fences it.
3. Wait up to ``init_timeout_s`` for the replacement's ``ok txn-init``, so that the start
   line of the fault comes after it in the history.

Stop: SIGCONT. The old producer goes on with the transaction it was in and must fail with
a fencing error (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, librdkafka's _FENCED); the
workload then stops it for good. The stopped pid is recorded on disk before the SIGSTOP
(:mod:`kchaos.harness.cluster.clientpids`), so ``heal_everything``, the exit heal and
``kchaos cleanup`` continue it too.

The start line's ``detail``: ``process``, ``pid``, ``transactional_id``, ``open_txns``
(what was open when it stopped), ``paused_epoch`` (its last ``txn-init`` epoch),
``replacement`` (the new process id) and ``replacement_epoch`` (absent when its init did
not complete in time).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

from kchaos.faults import clients
from kchaos.faults.base import Fault, exiting, register
from kchaos.faults.heal import HealContext, register_heal
from kchaos.faults.params import Param
from kchaos.harness.cluster import clientpids
from kchaos.harness.cluster.retry import Poll
from kchaos.harness.errors import FaultError, HealError

_POLL_S = 0.1


@register
class Zombie(Fault):
    """Pause a transactional client mid-transaction; a new instance of its id fences it."""

    name = "zombie"
    family = "client"
    summary = "SIGSTOP a transactional client mid-transaction, start a replacement with its id"
    default_target = "client:txn:ID"
    min_targets = 0
    takes_client = True
    params_spec = (
        Param("settle_s", "float", 0.3, "wait after SIGSTOP before looking at its lines",
              minimum=0),
        Param("catch_s", "float", 20.0, "how long to try to stop it inside a transaction",
              minimum=0),
        Param("init_timeout_s", "float", 45.0, "wait for the replacement's txn-init",
              minimum=0),
    )  # fmt: skip
    # seams for the unit tests
    kill: ClassVar[Callable[[int, int], None]] = staticmethod(os.kill)
    sleep: ClassVar[Callable[[float], None]] = staticmethod(time.sleep)

    @property
    def target_names(self) -> list[str]:
        return [f"client:{self.client}"]

    def _send(self, pid: int, sig: int) -> None:
        type(self).kill(pid, sig)

    def _start(self) -> None:
        self._pid: int | None = None
        if self.client is None:
            raise FaultError(f"{self.name}: needs a target {self.default_target}")
        _kind, tid = clients.parse_client(self.client)
        directory = clients.directory(self.cluster.run_id)
        try:
            old = directory.txn_client(tid)
        except LookupError as exc:
            raise FaultError(f"client:{self.client}: {exc}") from exc
        open_txns = self._pause_mid_transaction(old)
        init = old.init_result() or {}
        self.detail.update(
            process=old.process,
            pid=self._pid,
            transactional_id=tid,
            open_txns=open_txns,
            paused_epoch=init.get("producer_epoch"),
        )
        try:
            new = directory.replace_txn_client(tid)
        except Exception as exc:
            raise FaultError(f"client:{self.client}: no replacement started: {exc}") from exc
        self.detail["replacement"] = new.process
        done = self._wait_init(new)
        if done is not None and "producer_epoch" in done:
            self.detail["replacement_epoch"] = done["producer_epoch"]

    def _pause_mid_transaction(self, old: clients.TxnClient) -> list[str]:
        """SIGSTOP ``old``'s child, retried until a transaction of it is open (or
        ``catch_s`` ran out); the transactions open at the stop."""
        deadline = time.monotonic() + self.params["catch_s"]
        while True:
            pid = old.pid
            if pid is None:
                if time.monotonic() >= deadline:
                    raise FaultError(f"client:{self.client}: its worker has no child process")
                type(self).sleep(_POLL_S)
                continue
            clientpids.record(self.cluster.run_id, pid, f"txn worker {old.process} ({self.client})")
            self._pid = pid
            try:
                self._send(pid, signal.SIGSTOP)
            except ProcessLookupError:  # it exited meanwhile: the workload restarts it
                self._resume()
                type(self).sleep(_POLL_S)
                continue
            type(self).sleep(self.params["settle_s"])
            open_txns = old.open_transactions()
            if open_txns or time.monotonic() >= deadline or exiting():
                return open_txns
            self._resume()
            type(self).sleep(self.rng.uniform(0.02, 0.2))

    def _wait_init(self, new: clients.TxnClient) -> dict[str, Any] | None:
        """The replacement's txn-init result, or None if it had none by ``init_timeout_s``
        (or the harness is exiting)."""
        result: list[dict[str, Any]] = []

        def initialised() -> str | None:
            done = new.init_result()
            if done is None:
                return "no txn-init result yet"
            result.append(done)
            return None

        Poll(f"client:{self.client}: the replacement's txn-init", initialised,
              timeout=self.params["init_timeout_s"], interval=_POLL_S,
              sleep=type(self).sleep, stop=exiting).wait()  # fmt: skip
        return result[0] if result else None

    def _resume(self) -> None:
        pid, self._pid = self._pid, None
        if pid is None:
            return
        try:
            self._send(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass  # gone: nothing left to continue
        except OSError as exc:
            raise HealError(f"SIGCONT to pid {pid} failed: {exc}") from exc
        clientpids.forget(self.cluster.run_id, pid)

    def _stop(self) -> None:
        if getattr(self, "_pid", None) is not None:
            self._resume()


@register_heal(5, "client", "SIGCONT the client processes a fault stopped")
def _continue_stopped_clients(ctx: HealContext) -> None:
    ok, lines = ctx.attempt("paused clients", partial(clientpids.release, ctx.cluster.run_id))
    for line in lines or []:
        if line.startswith("error: "):
            ctx.errors.append(line[len("error: ") :])
        else:
            ctx.done.append(line)
