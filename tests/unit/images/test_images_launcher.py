"""The offline image's launcher, run in bash: the official image's KAFKA_* contract."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kchaos.harness import paths

COMMON = paths.COMPOSE_DIR / "kafka" / "bin" / "kchaos-common.sh"


def bash(script: str, env: dict[str, str], home: Path | None = None) -> subprocess.CompletedProcess:
    full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env}
    if home is not None:
        full_env["KAFKA_HOME"] = str(home)
    return subprocess.run(
        ["bash", "-c", f"set -euo pipefail; . {COMMON}; {script}"],
        env=full_env,
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )


def props(env: dict[str, str]) -> list[str]:
    done = bash("kchaos_env_properties", env)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize(
    ("name", "prop"),
    [
        ("KAFKA_NODE_ID", "node.id"),
        ("KAFKA_LOG_DIRS", "log.dirs"),
        ("KAFKA_REPLICA_LAG_TIME_MAX_MS", "replica.lag.time.max.ms"),
        ("KAFKA_LISTENER_NAME_CLIENT_SSL_KEYSTORE__TYPE", "listener.name.client.ssl.keystore_type"),
        ("KAFKA_SOME___DASHED_NAME", "some-dashed.name"),
        ("KAFKA_A_B_C", "a.b.c"),
    ],
)
def test_property_names(name: str, prop: str) -> None:
    done = bash(f"kchaos_property_name {name}", {})
    assert done.stdout.strip() == prop


def test_env_becomes_sorted_properties_without_jvm_settings() -> None:
    env = {
        "KAFKA_NODE_ID": "3",
        "KAFKA_ADVERTISED_LISTENERS": "CLIENT://10.0.0.1:19092",
        "KAFKA_MIN_INSYNC_REPLICAS": "2",
        "KAFKA_HEAP_OPTS": "-Xmx320m",
        "KAFKA_OPTS": "-Dx=1",
        "KAFKA_JVM_PERFORMANCE_OPTS": "-server",
        "KAFKA_LOG4J_OPTS": "-Dlog4j=x",
        "KAFKA_GC_LOG_OPTS": "-Xlog:gc",
        "KAFKA_JMX_OPTS": "-Dj",
        "KAFKA_DEBUG": "y",
        "KAFKA_VERSION": "4.4.0",
        "CLUSTER_ID": "abc",
        "NOT_KAFKA_X": "1",
    }
    assert props(env) == [
        "advertised.listeners=CLIENT://10.0.0.1:19092",
        "min.insync.replicas=2",
        "node.id=3",
    ]


def test_values_keep_spaces_equals_and_commas() -> None:
    env = {
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "A:PLAINTEXT,B:SSL",
        "KAFKA_SASL_JAAS_CONFIG": 'x required user="a b"=c;',
    }
    assert props(env) == [
        "listener.security.protocol.map=A:PLAINTEXT,B:SSL",
        'sasl.jaas.config=x required user="a b"=c;',
    ]


def test_only_the_cluster_id_has_a_default() -> None:
    given = bash(
        "kchaos_apply_defaults >/dev/null; echo $CLUSTER_ID; kchaos_env_properties",
        {"KAFKA_NODE_ID": "7", "CLUSTER_ID": "mine"},
    )
    assert given.stdout.splitlines() == ["mine", "node.id=7"]
    unset = bash("kchaos_apply_defaults >/dev/null; echo $CLUSTER_ID; kchaos_env_properties", {})
    assert unset.stdout.splitlines() == ["5L6g3nShT-eMCtK--X86sw"]


def test_listeners_follow_advertised_listeners_on_all_interfaces() -> None:
    done = bash(
        "kchaos_derive_listeners; echo $KAFKA_LISTENERS",
        {
            "KAFKA_ADVERTISED_LISTENERS": "CLIENT://10.9.0.1:19092,REPLICATION://proxy:29092",
            "KAFKA_PROCESS_ROLES": "broker,controller",
        },
    )
    assert done.stdout.strip() == "CLIENT://0.0.0.0:19092,REPLICATION://0.0.0.0:29092"
    given = bash(
        "kchaos_derive_listeners; echo $KAFKA_LISTENERS",
        {"KAFKA_ADVERTISED_LISTENERS": "A://h:1", "KAFKA_LISTENERS": "A://:9092"},
    )
    assert given.stdout.strip() == "A://:9092"


def test_controller_only_node_refuses_advertised_listeners() -> None:
    done = bash(
        "kchaos_derive_listeners",
        {"KAFKA_PROCESS_ROLES": "controller", "KAFKA_ADVERTISED_LISTENERS": "A://h:1"},
    )
    assert done.returncode != 0
    assert "not supported on a KRaft controller" in done.stderr


def test_shared_server_properties_get_env_appended(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "server.properties").write_text("num.io.threads=4\n")
    config = tmp_path / "config"
    config.mkdir()
    env = {
        "KCHAOS_SHARED_CONFIG": str(shared),
        "KCHAOS_CONFIG_DIR": str(config),
        "KAFKA_NODE_ID": "2",
    }
    done = bash(f"kchaos_write_config {config}/server.properties", env)
    assert done.returncode == 0, done.stderr
    text = (config / "server.properties").read_text()
    assert text.splitlines()[0] == "num.io.threads=4"
    assert text.rstrip().endswith("node.id=2")
    # without a shared file, the env alone makes the file (and replaces an old one)
    (shared / "server.properties").unlink()
    bash(f"kchaos_write_config {config}/server.properties", env)
    assert (config / "server.properties").read_text() == "node.id=2\n"
    # with nothing at all, the single-node default configuration
    (config / "default-server.properties").write_text(
        (paths.COMPOSE_DIR / "kafka" / "config" / "default-server.properties").read_text()
    )
    del env["KAFKA_NODE_ID"]
    done = bash(f"kchaos_write_config {config}/server.properties", env)
    assert "single-node defaults" in done.stdout
    text = (config / "server.properties").read_text()
    assert "process.roles=broker,controller" in text and "node.id=1" in text


def test_property_reader_takes_the_last_value(tmp_path: Path) -> None:
    file = tmp_path / "p"
    file.write_text("log.dirs=/a\nlog.dir=/x\n log.dirs = /b,/c\n")
    done = bash(f"kchaos_property {file} log.dirs", {})
    assert done.stdout.strip() == "/b,/c"


def _home(tmp_path: Path, tools_libs: bool) -> Path:
    home = tmp_path / "kafka"
    (home / "agent").mkdir(parents=True)
    (home / "agent" / "jmx_prometheus_javaagent.jar").write_bytes(b"")
    (home / "libs").mkdir()
    if tools_libs:
        (home / "tools-libs").mkdir()
    return home


def java_args(home: Path, role: str, cls: str, env: dict[str, str]) -> list[str]:
    done = bash(f"kchaos_java_args {role} {cls}", env, home)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_broker_jvm_gets_heap_agent_log4j_and_kafka_opts(tmp_path: Path) -> None:
    home = _home(tmp_path, tools_libs=False)
    args = java_args(
        home, "broker", "kafka.Kafka", {"KCHAOS_METRICS_PORT": "7071", "KAFKA_OPTS": "-Da=1 -Db=2"}
    )
    assert args[:2] == ["-Xmx512m", "-Xms512m"]
    assert f"-Dlog4j2.configurationFile={home}/config/broker-log4j2.properties" in args
    cp = args[args.index("-cp") + 1]
    assert cp == f"{home}/libs/*"
    agent = [a for a in args if a.startswith("-javaagent:")]
    assert agent == [
        f"-javaagent:{home}/agent/jmx_prometheus_javaagent.jar=7071:{home}/config/jmx-exporter.yaml"
    ]
    assert args[-2:] == ["-Da=1", "-Db=2"]


def test_heap_override_log4j1_and_no_agent_for_tools(tmp_path: Path) -> None:
    home = _home(tmp_path, tools_libs=False)
    env = {
        "KAFKA_HEAP_OPTS": "-Xmx320m -Xms320m",
        "KCHAOS_LOG4J": "1",
        "KCHAOS_METRICS_PORT": "7071",
    }
    broker = java_args(home, "broker", "kafka.Kafka", env)
    assert broker[:2] == ["-Xmx320m", "-Xms320m"]
    assert f"-Dlog4j.configuration=file:{home}/config/broker-log4j.properties" in broker
    tool = java_args(home, "tool", "kafka.tools.StorageTool", {"KCHAOS_METRICS_PORT": "7071"})
    assert not any(a.startswith("-javaagent") for a in tool)
    assert "-Xmx256m" in tool


def test_tools_classpath_split_only_for_tools_classes(tmp_path: Path) -> None:
    home = _home(tmp_path, tools_libs=True)
    tool = java_args(home, "tool", "org.apache.kafka.tools.TopicCommand", {})
    assert tool[tool.index("-cp") + 1] == f"{home}/tools-libs/*"
    storage = java_args(home, "tool", "kafka.tools.StorageTool", {})
    assert storage[storage.index("-cp") + 1] == f"{home}/libs/*"


RUN = paths.COMPOSE_DIR / "kafka" / "bin" / "kchaos-kafka-run"


def _launcher_home(tmp_path: Path, storage_rc: int = 0, storage_out: str = "") -> Path:
    """A KAFKA_HOME with the real scripts, a fake storage tool and a fake java on PATH."""
    home = _home(tmp_path, tools_libs=False)
    (home / "config").mkdir()
    bin_dir = home / "bin"
    bin_dir.mkdir()
    for name in ("kchaos-common.sh", "kchaos-kafka-run"):
        (bin_dir / name).symlink_to(paths.COMPOSE_DIR / "kafka" / "bin" / name)
    storage = bin_dir / "kafka-storage.sh"
    storage.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$@" >> {tmp_path}/storage-calls\n'
        f"echo '{storage_out}'\n"
        f"if [ {storage_rc} = 0 ]; then touch {tmp_path}/data/meta.properties; fi\n"
        f"exit {storage_rc}\n"
    )
    storage.chmod(0o755)
    fake_bin = tmp_path / "fakebin"
    fake_bin.mkdir()
    java = fake_bin / "java"
    java.write_text('#!/usr/bin/env bash\necho "JAVA PID=$$ ARGS: $*"\n')
    java.chmod(0o755)
    (tmp_path / "data").mkdir()
    return home


def launch(tmp_path: Path, home: Path, **env: str) -> subprocess.CompletedProcess:
    full_env = {
        "PATH": f"{tmp_path / 'fakebin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "KAFKA_HOME": str(home),
        "KCHAOS_SHARED_CONFIG": str(tmp_path / "no-shared"),
        "KCHAOS_HOSTS_FILE": str(tmp_path / "hosts"),
        "KCHAOS_METRICS_PORT": "7071",
        "CLUSTER_ID": "a2NoYW9zLWltYWdlcy10MQ",
        "KAFKA_NODE_ID": "2",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LOG_DIRS": str(tmp_path / "data"),
        "KAFKA_SSL_KEY_PASSWORD": "s3cret",
        **env,
    }
    return subprocess.run(
        ["bash", str(home / "bin" / "kchaos-kafka-run")],
        env=full_env,
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )


def test_launcher_formats_once_then_execs_the_broker(tmp_path: Path) -> None:
    home = _launcher_home(tmp_path, storage_out="Formatting done")
    first = launch(tmp_path, home)
    assert first.returncode == 0, first.stderr
    calls = (tmp_path / "storage-calls").read_text().splitlines()
    assert len(calls) == 1
    assert "format --cluster-id=a2NoYW9zLWltYWdlcy10MQ" in calls[0]
    assert f"-c {home}/config/server.properties" in calls[0]
    java_line = next(ln for ln in first.stdout.splitlines() if ln.startswith("JAVA"))
    assert java_line.endswith(f"kafka.Kafka {home}/config/server.properties")
    assert "-javaagent:" in java_line
    props = (home / "config" / "server.properties").read_text()
    assert "node.id=2" in props and f"log.dirs={tmp_path / 'data'}" in props
    assert "ssl.key.password=s3cret" in props
    assert "s3cret" not in first.stdout  # secrets are not echoed to the log
    assert "[kchaos]   node.id=2" in first.stdout
    second = launch(tmp_path, home)
    assert second.returncode == 0
    assert len((tmp_path / "storage-calls").read_text().splitlines()) == 1  # not again


def test_launcher_stops_on_a_format_error_with_its_output(tmp_path: Path) -> None:
    home = _launcher_home(tmp_path, storage_rc=1, storage_out="Cluster ID string x is bad")
    done = launch(tmp_path, home, CLUSTER_ID="x")
    assert done.returncode == 1
    assert "Cluster ID string x is bad" in done.stderr
    assert "JAVA" not in done.stdout


def test_launcher_without_process_roles_does_not_format(tmp_path: Path) -> None:
    home = _launcher_home(tmp_path)
    done = launch(tmp_path, home, KAFKA_PROCESS_ROLES="")
    assert done.returncode == 0 and "JAVA" in done.stdout
    assert not (tmp_path / "storage-calls").exists()


def test_launcher_tolerates_already_formatted(tmp_path: Path) -> None:
    home = _launcher_home(tmp_path, storage_rc=1, storage_out="Log directory is already formatted")
    done = launch(tmp_path, home)
    assert done.returncode == 0 and "JAVA" in done.stdout


@pytest.mark.parametrize("flavour", ["1", "2"])
def test_log4j_root_level_and_loggers_from_the_environment(tmp_path: Path, flavour: str) -> None:
    config = tmp_path / "config"
    config.mkdir()
    for name in ("broker-log4j.properties", "broker-log4j2.properties"):
        (config / name).write_text((paths.COMPOSE_DIR / "kafka" / "config" / name).read_text())
    env = {"KCHAOS_CONFIG_DIR": str(config), "KCHAOS_LOG4J": flavour}
    plain = bash("kchaos_write_log4j; kchaos_log4j_opts broker", env)
    assert plain.returncode == 0, plain.stderr
    assert "/config/broker-log4j" in plain.stdout  # nothing asked: the image's file
    env.update(
        KAFKA_LOG4J_ROOT_LOGLEVEL="WARN",
        KAFKA_LOG4J_LOGGERS="kafka.controller=DEBUG, state.change.logger=TRACE",
    )
    done = bash("kchaos_write_log4j; kchaos_log4j_opts broker; kchaos_log4j_opts tools", env)
    broker_opt, tools_opt = done.stdout.split()
    effective = Path(broker_opt.split("=", 1)[1].removeprefix("file:"))
    assert effective.name.startswith("effective-broker-")
    assert "effective" not in tools_opt
    text = effective.read_text()
    if flavour == "1":
        assert text.rstrip().splitlines()[-3:] == [
            "log4j.rootLogger=WARN, stdout",
            "log4j.logger.kafka.controller=DEBUG",
            "log4j.logger.state.change.logger=TRACE",
        ]
    else:
        assert "logger.kchaos1.name = kafka.controller\nlogger.kchaos1.level = DEBUG" in text
        # a logger the file already configures gets its level changed, not a duplicate
        assert text.count("= state.change.logger") == 1
        assert "logger.state.level = TRACE" in text
        assert "${env:KAFKA_LOG4J_ROOT_LOGLEVEL:-INFO}" in text


def test_class_data_archive_only_for_the_broker_and_can_be_disabled(tmp_path: Path) -> None:
    home = _home(tmp_path, tools_libs=False)
    flag = f"-XX:SharedArchiveFile={home}/kafka.jsa"
    assert flag not in java_args(home, "broker", "kafka.Kafka", {})  # no archive in image
    (home / "kafka.jsa").write_bytes(b"archive")
    assert flag in java_args(home, "broker", "kafka.Kafka", {})
    assert flag not in java_args(home, "tool", "kafka.tools.StorageTool", {})
    assert flag not in java_args(home, "broker", "kafka.Kafka", {"KCHAOS_CDS": "0"})


def test_remote_jmx_port_like_the_official_image(tmp_path: Path) -> None:
    home = _home(tmp_path, tools_libs=False)
    args = java_args(
        home, "broker", "kafka.Kafka", {"KAFKA_JMX_PORT": "9999", "KAFKA_JMX_HOSTNAME": "10.0.0.5"}
    )
    assert "-Dcom.sun.management.jmxremote.port=9999" in args
    assert "-Dcom.sun.management.jmxremote.rmi.port=9999" in args
    assert "-Djava.rmi.server.hostname=10.0.0.5" in args
    assert not any("jmxremote" in a for a in java_args(home, "broker", "kafka.Kafka", {}))
