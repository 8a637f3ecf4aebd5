"""`kchaos cleanup` fails, naming it, when something labelled survives it (fake engine)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from kchaos.cli import main as cli
from kchaos.harness.cluster import cleanup, hostnet
from kchaos.harness.labels import LABEL_APP, LABEL_RUN


@dataclass
class FakeObject:
    """A container or network of the fake engine; ``refuse`` makes its removal fail."""

    name: str
    id: str
    labels: dict[str, str]
    status: str = "exited"
    refuse: bool = False
    owner: list[FakeObject] = field(default_factory=list, repr=False)

    @property
    def attrs(self) -> dict[str, Any]:
        return {"Labels": self.labels}

    def remove(self, **_: Any) -> None:
        if self.refuse:
            raise docker.errors.APIError(f"removal of {self.name} refused by the fake engine")
        self.owner.remove(self)


class FakeCollection:
    def __init__(self) -> None:
        self.items: list[FakeObject] = []

    def add(self, obj: FakeObject) -> None:
        obj.owner = self.items
        self.items.append(obj)

    def list(
        self, all: bool = False, filters: dict[str, Any] | None = None, **_: Any
    ) -> list[FakeObject]:
        wanted = (filters or {}).get("label", [])
        wanted = [wanted] if isinstance(wanted, str) else wanted
        pairs = [w.split("=", 1) for w in wanted]
        return [o for o in self.items if all_match(o.labels, pairs)]


def all_match(labels: dict[str, str], pairs: list[list[str]]) -> bool:
    return all(labels.get(key) == value for key, value in pairs)


class FakeClient:
    def __init__(self) -> None:
        self.containers = FakeCollection()
        self.networks = FakeCollection()


def labelled(run_id: str | None) -> dict[str, str]:
    labels = {LABEL_APP: "1", "io.kchaos.role": "broker"}
    if run_id is not None:
        labels[LABEL_RUN] = run_id
    return labels


class FakeHostTables:
    """The host's iptables as hostnet sees it: ``-S`` lists ``chains``; a removal script
    deletes its chain unless the chain is in ``stuck``."""

    def __init__(self) -> None:
        self.chains: list[str] = []
        self.stuck: set[str] = set()

    def __call__(self, script: str) -> tuple[int, str]:
        if script.rstrip().endswith("iptables -w -S"):
            return 0, "-P OUTPUT ACCEPT\n" + "".join(f"-N {c}\n" for c in self.chains)
        for chain in list(self.chains):
            if f"-X {chain} " in script and chain not in self.stuck:
                self.chains.remove(chain)
        return 0, ""


@pytest.fixture
def host_tables(monkeypatch: pytest.MonkeyPatch) -> FakeHostTables:
    tables = FakeHostTables()
    monkeypatch.setattr(hostnet, "run", tables)
    return tables


@pytest.fixture
def engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host_tables: FakeHostTables
) -> FakeClient:
    monkeypatch.setenv("KCHAOS_STATE_DIR", str(tmp_path))
    client = FakeClient()
    monkeypatch.setattr(cleanup, "_engine", lambda: client)
    monkeypatch.setattr(cleanup, "SETTLE_S", 0.0)  # nothing here goes away by itself
    return client


def run_cleanup(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        cli.main(["cleanup", *args])
    out, err = capsys.readouterr()
    code = info.value.code
    assert isinstance(code, int)
    return code, out, err


def test_a_container_whose_removal_fails_fails_cleanup_and_is_named(
    engine: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    engine.containers.add(FakeObject("kchaos-r1-broker-1", "a1" * 32, labelled("r1")))
    engine.containers.add(FakeObject("kchaos-r1-broker-2", "b2" * 32, labelled("r1"), refuse=True))
    engine.networks.add(FakeObject("kchaos-r1", "c3" * 32, labelled("r1")))
    code, out, err = run_cleanup(capsys)
    assert code == cleanup.EXIT_LEFTOVERS != 0
    assert "removed container kchaos-r1-broker-1" in out
    assert "remove container kchaos-r1-broker-2 failed: " in out
    assert "refused by the fake engine" in out
    assert "removed network kchaos-r1" in out
    assert "1 labelled object(s) remain" in err
    assert f"container kchaos-r1-broker-2 (id {'b2' * 6}, exited, run r1)" in err
    assert "broker-1" not in err and "network" not in err
    assert [c.name for c in engine.containers.items] == ["kchaos-r1-broker-2"]


def test_everything_removed_exits_zero(
    engine: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    engine.containers.add(FakeObject("kchaos-r1-broker-1", "a1" * 32, labelled("r1")))
    code, out, err = run_cleanup(capsys)
    assert code == 0, err
    assert "removed container kchaos-r1-broker-1" in out
    assert "remain" not in err
    assert engine.containers.items == []


def test_a_labelled_object_without_a_run_is_a_leftover_too(
    engine: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    # No run label: cleanup cannot say whose it is, so it does not remove it, but it may
    # not pass over it in silence either.
    engine.networks.add(FakeObject("stray", "d4" * 32, labelled(None)))
    code, out, err = run_cleanup(capsys)
    assert code == cleanup.EXIT_LEFTOVERS
    assert "nothing to clean up" in out
    assert f"network stray (id {'d4' * 6}, run no run label)" in err


def test_a_host_chain_whose_run_left_nothing_else_is_removed(
    engine: FakeClient, host_tables: FakeHostTables, capsys: pytest.CaptureFixture[str]
) -> None:
    # a hold-request chain of a run whose containers and directory are gone: only its
    # name says it is kchaos's; another table's chain is not touched
    orphan = hostnet.chain_name("20261207-101010-aaaa", "f-1")
    host_tables.chains = [orphan, "DOCKER-USER"]
    code, out, err = run_cleanup(capsys)
    assert code == 0, err
    assert f"removed host iptables chain {orphan}" in out
    assert host_tables.chains == ["DOCKER-USER"]


def test_a_host_chain_that_stays_fails_cleanup_and_is_named(
    engine: FakeClient, host_tables: FakeHostTables, capsys: pytest.CaptureFixture[str]
) -> None:
    mine, other = (hostnet.chain_name(r, "f-2") for r in ("r1", "r2"))
    host_tables.chains = [mine, other]
    host_tables.stuck = {mine}
    code, _, err = run_cleanup(capsys, "--run", "r1")
    assert code == cleanup.EXIT_LEFTOVERS
    assert f"host iptables chain {mine}" in err and other not in err
    assert other in host_tables.chains, "another run's chain is never touched by --run"
    code, _, err = run_cleanup(capsys)
    assert code == cleanup.EXIT_LEFTOVERS and f"host iptables chain {mine}" in err
    assert host_tables.chains == [mine]  # the other run's went with the sweep


def test_a_leftover_run_directory_is_named(
    engine: FakeClient,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "runs" / "r1").mkdir(parents=True)
    # The directory's deletion fails: rmtree leaves it in place.
    monkeypatch.setattr(cleanup.shutil, "rmtree", lambda *_a, **_k: None)
    code, _, err = run_cleanup(capsys)
    assert code == cleanup.EXIT_LEFTOVERS
    assert f"directory {tmp_path / 'runs' / 'r1'}" in err


def test_with_run_only_that_runs_leftovers_count(
    engine: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    engine.containers.add(FakeObject("kchaos-r1-broker-1", "a1" * 32, labelled("r1")))
    other = FakeObject("kchaos-r2-broker-1", "e5" * 32, labelled("r2"), status="running")
    engine.containers.add(other)
    code, _, err = run_cleanup(capsys, "--run", "r1")
    assert code == 0, err
    assert engine.containers.items == [other], "another run is never touched"
    engine.containers.items[0].refuse = True
    engine.containers.items[0].status = "exited"
    code, _, err = run_cleanup(capsys, "--run", "r2")
    assert code == cleanup.EXIT_LEFTOVERS
    assert "1 run r2 object(s) remain" in err and "kchaos-r2-broker-1" in err


def test_a_dry_run_changes_nothing_and_exits_zero(
    engine: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    engine.containers.add(FakeObject("kchaos-r1-broker-1", "a1" * 32, labelled("r1")))
    code, out, err = run_cleanup(capsys, "--dry-run")
    assert code == 0, err
    assert "would remove container kchaos-r1-broker-1" in out
    assert len(engine.containers.items) == 1


def test_something_that_goes_away_while_cleanup_looks_again_is_no_leftover(
    engine: FakeClient, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = FakeObject("kchaos-r1-broker-1", "a1" * 32, labelled("r1"), refuse=True)
    engine.containers.add(slow)
    looks: list[float] = []

    def gone_meanwhile(seconds: float) -> None:  # the kernel or the engine catching up
        looks.append(seconds)
        engine.containers.items.clear()

    monkeypatch.setattr(cleanup, "SETTLE_S", 3.0)
    monkeypatch.setattr(cleanup, "_pause", gone_meanwhile)
    code, _, err = run_cleanup(capsys)
    assert code == 0, err
    assert looks == [0.5] and "remain" not in err


def test_kchaos_cleanup_hands_the_cluster_layer_the_faults_healer(
    engine: FakeClient, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kchaos.faults.heal import heal_everything

    handed: list[object] = []
    real = cleanup.clean_up

    def spy(run_id: str | None, **kw: Any) -> int:
        handed.append(kw["healer"])
        return real(run_id, **kw)

    monkeypatch.setattr(cleanup, "clean_up", spy)
    code, _, err = run_cleanup(capsys)
    assert code == 0, err
    assert handed == [heal_everything]
