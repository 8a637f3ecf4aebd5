from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from faults_fakes import FakeCluster, FakeToxiproxy

from kchaos.faults import make_fault, protected


def test_protected_heals_on_exception(cluster: FakeCluster, toxiproxy: type[FakeToxiproxy]) -> None:
    with pytest.raises(RuntimeError), protected(cluster):
        make_fault(cluster, "pause", "broker-1").start()  # never stopped by its owner
        assert cluster.jvm[1] == "T"
        raise RuntimeError("the harness failed")
    assert cluster.jvm[1] == "S"


def test_sigterm_heals_then_dies(tmp_path: Path) -> None:
    """A real SIGTERM to a process holding a protected cluster: heal first, then exit."""
    here = Path(__file__).parent
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(here)!r})
        from pathlib import Path
        from faults_fakes import FakeCluster
        from kchaos.faults import make_fault, protect
        c = FakeCluster(3, Path({str(tmp_path)!r}))
        protect(c)
        make_fault(c, "pause", "broker-2").start()
        orig = c.signal
        def report(node, sig):
            orig(node, sig)
            print("SIGNAL", node.name, sig, flush=True)
        c.signal = report
        print("READY", flush=True)
        time.sleep(30)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=here
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "READY"
    proc.send_signal(signal.SIGTERM)
    out = proc.stdout.read()
    proc.wait(10)
    assert proc.returncode == -signal.SIGTERM
    assert "SIGNAL broker-2 CONT" in out


def test_no_fault_starts_after_the_exit_heal(cluster: FakeCluster) -> None:
    import kchaos.faults.base as base

    base.refuse_new_faults()
    try:
        with pytest.raises(Exception, match="exiting"):
            make_fault(cluster, "pause", "broker-1").start()
    finally:
        base._EXITING.clear()
    assert cluster.jvm[1] == "S"
