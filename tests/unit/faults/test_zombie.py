"""The ``zombie`` fault and its ``client:txn:ID`` target, on a real child process (a
``sleep``) and a fake client directory: the target parses and resolves to no node, the
fault stops the process inside a transaction (retrying when none is open), asks for a
replacement and waits for its txn-init; its stop, ``heal_everything`` and ``kchaos
cleanup`` each continue the process (read from ``/proc``), and a reused pid is left alone."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faults_fakes import FakeCluster

from kchaos.faults import clients, fault_spec, heal_everything, instantiate, make_fault
from kchaos.faults.targets import TargetSpec, parse_target, resolve
from kchaos.faults.zombie import Zombie
from kchaos.harness.cluster import clientpids
from kchaos.harness.cluster.cleanup import cleanup_run
from kchaos.harness.errors import ConfigError, FaultError

TID = "kchaos-t-3"
TARGET = f"client:txn:{TID}"


def state(pid: int) -> str:
    """The process's state letter (T: stopped), from /proc."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2]


_eventually: list[Any] = []


@pytest.fixture(autouse=True)
def _wait(eventually: Any) -> None:
    _eventually[:] = [eventually]


def stopped(pid: int) -> bool:
    """True once the process is stopped (a signal takes effect when it is next scheduled)."""
    _eventually[0](lambda: state(pid) == "T", f"pid {pid} stopped")
    return True


def running(pid: int) -> bool:
    _eventually[0](lambda: state(pid) != "T", f"pid {pid} continued")
    return True


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "state"
    monkeypatch.setenv("KCHAOS_STATE_DIR", str(root))
    return root


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


class FakeTxnClient:
    """A worker: its pid, the open transactions each look returns (the last repeats),
    and its txn-init line after ``init_after`` looks."""

    def __init__(self, process: int, pid: int | None, opens: list[list[str]],
                 init_after: int = 0, epoch: int = 4) -> None:  # fmt: skip
        self.process = process
        self.pid = pid
        self.opens = opens
        self.looks = 0
        self.init_after = init_after
        self.init_looks = 0
        self.epoch = epoch

    def open_transactions(self) -> list[str]:
        self.looks += 1
        return self.opens.pop(0) if len(self.opens) > 1 else self.opens[0]

    def init_result(self) -> dict[str, Any] | None:
        self.init_looks += 1
        if self.init_looks <= self.init_after:
            return None
        return {"type": "ok", "f": "txn-init", "producer_id": 9, "producer_epoch": self.epoch}


class FakeDirectory:
    def __init__(self, old: FakeTxnClient, new: FakeTxnClient | None) -> None:
        self.old = old
        self.new = new
        self.replaced: list[str] = []

    def txn_client(self, transactional_id: str) -> FakeTxnClient:
        if transactional_id != TID:
            raise LookupError(f"no transactional worker uses {transactional_id!r}")
        return self.old

    def replace_txn_client(self, transactional_id: str) -> FakeTxnClient:
        if self.new is None:
            raise RuntimeError("the workload is not running")
        self.replaced.append(transactional_id)
        return self.new


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """No real waiting between looks (the child is stopped by then: signals are sync)."""
    monkeypatch.setattr(Zombie, "sleep", staticmethod(lambda s: None))


# -- the target ------------------------------------------------------------------------
def test_a_client_target_parses_and_resolves_to_no_node(cluster: FakeCluster) -> None:
    spec = parse_target(TARGET)
    assert spec == TargetSpec("client", key=f"txn:{TID}")
    assert str(spec) == TARGET and parse_target(str(spec)) == spec
    assert parse_target("client:txn:a:b").key == "txn:a:b"  # an id may hold colons
    assert resolve(cluster, spec, __import__("random").Random(0)) == []


@pytest.mark.parametrize("text", ["client:", "client:txn", "client:txn:", "client:group:g"])
def test_malformed_client_targets_are_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="client:txn:TRANSACTIONAL_ID"):
        parse_target(text)


def test_only_client_faults_take_client_targets() -> None:
    assert fault_spec("zombie", TARGET).target == TARGET
    with pytest.raises(ConfigError, match="pause acts on nodes, not on a client process"):
        fault_spec("pause", TARGET)
    with pytest.raises(ConfigError, match="zombie acts on a client process"):
        fault_spec("zombie", "broker-1")
    with pytest.raises(ConfigError, match="give a target client:txn:ID"):
        fault_spec("zombie")
    with pytest.raises(ConfigError, match="must name nodes"):
        fault_spec("cut", "broker-1", {"to": TARGET})


def test_the_fault_gets_its_client_key(cluster: FakeCluster) -> None:
    fault = instantiate(cluster, fault_spec("zombie", TARGET))
    assert fault.client == f"txn:{TID}" and fault.targets == ()
    assert fault.target_names == [TARGET]


# -- the fault -------------------------------------------------------------------------
def test_zombie_stops_the_process_mid_transaction_and_waits_for_the_replacement(
    cluster: FakeCluster, child: subprocess.Popen[bytes], fast: None, state_dir: Path
) -> None:
    old = FakeTxnClient(3, child.pid, [[], [], ["3-17"]])  # caught at the third try
    new = FakeTxnClient(5, 4242, [[]], init_after=3, epoch=7)
    directory = FakeDirectory(old, new)
    with clients.provide(cluster.run_id, directory):
        fault = make_fault(cluster, "zombie", TARGET)
        fault.start()
        try:
            assert stopped(child.pid)
            assert old.looks == 3 and directory.replaced == [TID]
            assert new.init_looks == 4  # waited until its txn-init was there
            assert fault.detail == {
                "process": 3, "pid": child.pid, "transactional_id": TID,
                "open_txns": ["3-17"], "paused_epoch": 4, "replacement": 5,
                "replacement_epoch": 7,
            }  # fmt: skip
            (record,) = clientpids.paused(cluster.run_id)
            assert record["pid"] == child.pid and "txn worker 3" in str(record["label"])
        finally:
            fault.stop()
    assert running(child.pid)
    assert clientpids.paused(cluster.run_id) == []
    assert not clientpids.records_dir(cluster.run_id).exists()  # nothing left for cleanup


def test_zombie_gives_up_catching_a_transaction_and_stays_stopped(
    cluster: FakeCluster, child: subprocess.Popen[bytes], fast: None
) -> None:
    old = FakeTxnClient(3, child.pid, [[]])
    directory = FakeDirectory(old, FakeTxnClient(5, 1, [[]]))
    with clients.provide(cluster.run_id, directory):
        with make_fault(cluster, "zombie", TARGET, catch_s=0.0) as fault:
            assert stopped(child.pid) and fault.detail["open_txns"] == []
        assert running(child.pid)


@pytest.mark.parametrize("tid", [TID, "kchaos-t-9"])
def test_a_zombie_that_cannot_start_leaves_nothing_stopped(
    cluster: FakeCluster, child: subprocess.Popen[bytes], fast: None, tid: str
) -> None:
    # TID: the workload refuses the replacement; kchaos-t-9: no worker holds the id
    directory = FakeDirectory(FakeTxnClient(3, child.pid, [["3-1"]]), None)
    with clients.provide(cluster.run_id, directory):
        fault = make_fault(cluster, "zombie", f"client:txn:{tid}")
        with pytest.raises(FaultError):
            fault.start()
    assert running(child.pid) and clientpids.paused(cluster.run_id) == []


def test_without_a_client_directory_the_zombie_does_not_start(cluster: FakeCluster) -> None:
    with pytest.raises(FaultError, match="no client processes registered"):
        make_fault(cluster, "zombie", TARGET).start()


# -- the heals without memory ------------------------------------------------------------
def test_heal_everything_continues_a_stopped_client(
    cluster: FakeCluster, child: subprocess.Popen[bytes], fast: None
) -> None:
    directory = FakeDirectory(FakeTxnClient(3, child.pid, [["3-1"]]), FakeTxnClient(5, 1, [[]]))
    with clients.provide(cluster.run_id, directory):
        make_fault(cluster, "zombie", TARGET).start()  # never stopped: the harness "died"
    assert stopped(child.pid)
    done = heal_everything(cluster)
    assert any("SIGCONT to the paused client txn worker 3" in line for line in done), done
    assert running(child.pid) and clientpids.paused(cluster.run_id) == []


def test_cleanup_continues_a_client_a_killed_harness_left_stopped(
    child: subprocess.Popen[bytes],
) -> None:
    clientpids.record("gone-run", child.pid, "txn worker 3")
    child.send_signal(__import__("signal").SIGSTOP)
    done = cleanup_run("gone-run", client=None)
    assert f"sent SIGCONT to the paused client txn worker 3 (pid {child.pid})" in done
    assert running(child.pid)


def test_a_reused_pid_is_not_signalled(child: subprocess.Popen[bytes]) -> None:
    path = clientpids.record("r", child.pid, "old")
    data = path.read_text().replace(f'"start": {clientpids.start_time(child.pid)}', '"start": 1')
    path.write_text(data)
    sent: list[tuple[int, int]] = []
    assert clientpids.release("r", kill=lambda pid, sig: sent.append((pid, sig))) == []
    assert sent == [] and clientpids.paused("r") == []
