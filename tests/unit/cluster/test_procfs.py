"""/proc/PID/stat read once for the cluster's process helpers: the fields after the
command name, even when that name holds spaces and parentheses."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from kchaos.harness.cluster.clientpids import start_time
from kchaos.harness.cluster.containers import process_state
from kchaos.harness.cluster.procfs import stat_fields


def test_the_fields_start_with_the_state_and_a_gone_process_has_none() -> None:
    fields = stat_fields(os.getpid())
    assert fields is not None and fields[0] == "R"  # reading its own stat, it runs
    assert start_time(os.getpid()) == int(fields[19])
    child = subprocess.Popen(["true"])
    child.wait()
    assert stat_fields(child.pid) is None and process_state(child.pid) is None


def test_a_command_name_with_parentheses_and_spaces(tmp_path: Path) -> None:
    sleep = shutil.which("sleep")
    assert sleep is not None
    odd = tmp_path / "a) (b c"
    odd.symlink_to(sleep)
    child = subprocess.Popen([str(odd), "30"])
    try:
        # read it once the exec is done and the odd name is the process's own (until then
        # the child still carries pytest's name, and may be in D while the binary loads:
        # seen in make test on 2026-11-26, state D straight after Popen)
        comm = Path(f"/proc/{child.pid}/comm")
        deadline = time.monotonic() + 10
        while comm.read_text().strip() != odd.name and time.monotonic() < deadline:
            time.sleep(0.01)
        assert comm.read_text().strip() == odd.name
        fields = stat_fields(child.pid)
        # the first field after the name is the one-letter state (proc(5)), whatever it is now
        assert fields is not None and len(fields[0]) == 1 and fields[0] in "RSDZTtWXxKPI"
        assert int(fields[1]) == os.getpid()  # field 4: the parent
        assert start_time(child.pid) == int(fields[19]) > 0
    finally:
        child.kill()
        child.wait()
