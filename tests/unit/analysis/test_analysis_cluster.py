"""The same job on a REAL Spark standalone cluster (master + worker on 127.0.0.1), and
through spark-submit, both started from the PySpark installation's own scripts."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from kchaos.harness.analysis.session import JAVA17

from hist import every_kind  # isort: skip

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_env() -> dict[str, str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    env.setdefault("JAVA_HOME", str(JAVA17))
    return env


def start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(BIN / "spark-class"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=spark_env(),
            start_new_session=True,  # its own process group: stopped as a whole below
        )


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


def alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as resp:
            state = json.load(resp)
    except OSError:
        return 0
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A standalone master and one worker (1 core, 1 GB); stopped in a finally block."""
    logs = tmp_path_factory.mktemp("spark-cluster")
    port, ui = free_port(), free_port()
    master_args = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
    master = start([*master_args, "--port", str(port), "--webui-port", str(ui)],
                   logs / "master.log")  # fmt: skip
    worker = None
    url = f"spark://127.0.0.1:{port}"
    try:
        worker = start(
            ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
             "--cores", "1", "--memory", "1g", "--webui-port", str(free_port()),
             "--work-dir", str(logs / "work")],
            logs / "worker.log",
        )  # fmt: skip
        deadline = time.monotonic() + 240
        while alive_workers(ui) < 1:
            assert master.poll() is None, (logs / "master.log").read_text()[-2000:]
            assert worker.poll() is None, (logs / "worker.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "the worker never registered"
            time.sleep(1)
        yield url
    finally:
        if worker is not None:
            stop(worker)
        stop(master)


def _check(run: Path, proc: subprocess.CompletedProcess[str], expected: dict[str, int]) -> None:
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    summary = json.loads((run / "analysis" / "summary.json").read_text())
    assert {k: v["count"] for k, v in summary["anomalies"].items()} == expected


def test_analyze_on_a_standalone_cluster(cluster: str, tmp_path: Path) -> None:
    h, expected = every_kind()
    run = h.write(tmp_path / "run")
    proc = subprocess.run(
        [sys.executable, "-m", "kchaos.cli", "analyze", str(run), "--master", cluster],
        capture_output=True, text=True, timeout=900, env=spark_env(), check=False,
    )  # fmt: skip
    _check(run, proc, expected)
    assert proc.returncode == 1  # invalid run


def test_spark_submit_runs_the_job_file(cluster: str, tmp_path: Path) -> None:
    h, expected = every_kind()
    run = h.write(tmp_path / "run")
    proc = subprocess.run(
        [str(BIN / "spark-submit"), "--master", cluster,
         str(REPO / "harness" / "analysis" / "job.py"), str(run)],
        capture_output=True, text=True, timeout=900, env=spark_env(), check=False, cwd=REPO,
    )  # fmt: skip
    _check(run, proc, expected)
