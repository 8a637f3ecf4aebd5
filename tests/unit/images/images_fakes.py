"""A fake command runner for the image builder: it plays Docker, Maven, Go, debootstrap
and tar well enough for the builder's decisions to be checked without any of them.

(A module of its own, not conftest.py: test modules import from it by a unique name.)"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kchaos.harness.images.steps import Completed


def make_jar(path: Path, classes: Sequence[str] = ()) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        for name in classes:
            jar.writestr(name.replace(".", "/") + ".class", b"\xca\xfe\xba\xbe")


BROKER_4X = ["kafka.Kafka", "kafka.tools.StorageTool"]
TOOLS_4X = [
    "org.apache.kafka.tools.TopicCommand",
    "org.apache.kafka.tools.ProducerPerformance",
    "org.apache.kafka.tools.MetadataQuorumCommand",
    "org.apache.kafka.tools.consumer.ConsoleConsumer",
]


@dataclass
class FakeTools:
    """Callable like harness.images.steps.Runner; records every argv."""

    images: dict[str, dict[str, object]] = field(default_factory=dict)  # tag -> inspect entry
    calls: list[tuple[str, ...]] = field(default_factory=list)
    # "w1 w2" -> (rc, output): a call fails when each word is (a prefix of) one of its args
    fail: dict[str, tuple[int, str]] = field(default_factory=dict)
    tools_version_on_central: str | None = None  # None: kafka-tools exists at every version
    next_id: int = 0
    dangling: list[dict[str, object]] = field(default_factory=list)  # untagged images
    removed: list[str] = field(default_factory=list)  # image ids `docker rmi` deleted
    in_use: set[str] = field(default_factory=set)  # image ids a container still uses
    go_version: str = "go1.26.8"  # what `go env GOVERSION` says for the first go found
    toolchain_root: Path | None = None  # where `go mod download` puts a toolchain

    def programs(self) -> list[str]:
        return [" ".join(call[:2]) for call in self.calls]

    def __call__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Completed:
        args = tuple(argv)
        self.calls.append(args)
        for words, (rc, output) in self.fail.items():
            if all(any(a.startswith(w) for a in args) for w in words.split()):
                return Completed(args, rc, output)
        prog = Path(args[0]).name
        if prog == "docker":
            return self._docker(args)
        if prog == "mvn":
            return self._mvn(args)
        if prog == "go":
            return self._go(args, env)
        if prog == "debootstrap":
            Path(args[-2], "bin").mkdir(parents=True)
            return Completed(args, 0, "I: Base system installed successfully.\n")
        if prog == "tar":
            Path(args[args.index("-czf") + 1]).write_bytes(b"tarball")
            return Completed(args, 0, "")
        return Completed(args, 127, f"{prog}: not found")

    def add_image(self, tag: str, labels: dict[str, str] | None = None) -> str:
        if tag in self.images:  # the old image loses its tag, as in Docker
            self.dangling.append(self.images.pop(tag))
        self.next_id += 1
        image_id = f"sha256:{self.next_id:064x}"
        self.images[tag] = {
            "Id": image_id,
            "RepoTags": [tag],
            "Size": 1000 * self.next_id,
            "Config": {"Labels": labels or {}},
        }
        return image_id

    def _docker(self, args: tuple[str, ...]) -> Completed:
        sub = args[1]
        if sub == "image" and args[2] == "inspect":
            tags = args[3:]
            found = [self.images[t] for t in tags if t in self.images]
            missing = [t for t in tags if t not in self.images]
            out = json.dumps(found, indent=1)
            if missing:
                out += "".join(f"\nError: No such image: {t}" for t in missing)
            return Completed(args, 1 if missing else 0, out)
        if sub == "image" and args[2] == "ls" and "-q" in args:
            assert "dangling=true" in args and "label=io.kchaos.inputs" in args
            ids = [
                str(e["Id"]) for e in self.dangling if "io.kchaos.inputs" in e["Config"]["Labels"]
            ]  # type: ignore[index]
            return Completed(args, 0, "\n".join(ids))
        if sub == "image" and args[2] == "ls":
            repo = args[3]
            return Completed(args, 0, "\n".join(t for t in self.images if t.startswith(repo)))
        if sub == "build":
            labels = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--label")
            tag = args[args.index("-t") + 1]
            assert Path(args[-1], "Dockerfile").exists()
            self.add_image(tag, labels)
            return Completed(args, 0, f"Successfully tagged {tag}\n")
        if sub == "import":
            labels = {}
            for i, a in enumerate(args):
                if a == "--change" and args[i + 1].startswith("LABEL "):
                    key, value = args[i + 1][len("LABEL ") :].split("=", 1)
                    labels[key] = value
            self.add_image(args[-1], labels)
            return Completed(args, 0, "sha256:abc\n")
        if sub == "rmi":
            ids = {entry["Id"] for entry in self.images.values()}
            if args[2] in ids or args[2] in self.in_use:
                return Completed(args, 1, f"conflict: unable to delete {args[2]}")
            self.removed.append(args[2])
            self.dangling = [e for e in self.dangling if e["Id"] != args[2]]
            return Completed(args, 0, f"Deleted: {args[2]}")
        if sub == "pull":
            self.add_image(args[2])
            return Completed(args, 0, "pulled\n")
        return Completed(args, 1, f"unknown docker call {args}")

    def _go(self, args: tuple[str, ...], env: Mapping[str, str] | None) -> Completed:
        assert env is not None and env["CGO_ENABLED"] == "0"
        if args[1:3] == ("env", "GOVERSION"):
            return Completed(args, 0, self.go_version + "\n")
        if args[1:3] == ("mod", "download"):
            assert self.toolchain_root is not None
            root = self.toolchain_root / args[-1]
            (root / "bin").mkdir(parents=True)
            (root / "bin" / "go").write_text("#!/bin/sh\n")
            (root / "pkg" / "tool" / "linux_amd64").mkdir(parents=True)
            (root / "pkg" / "tool" / "linux_amd64" / "compile").write_text("")
            return Completed(args, 0, json.dumps({"Path": args[-1], "Dir": str(root)}))
        if args[1] == "install":
            Path(env["GOBIN"], "server").write_bytes(b"\x7fELF")
            return Completed(args, 0, "")
        return Completed(args, 2, f"unknown go call {args}")

    def _mvn(self, args: tuple[str, ...]) -> Completed:
        opts = dict(a[2:].split("=", 1) for a in args if a.startswith("-D") and "=" in a)
        out = Path(opts["outputDirectory"])
        if "dependency:copy" in args:
            make_jar(out / "jmx_prometheus_javaagent-1.0.1.jar")
            return Completed(args, 0, "")
        version = opts["kafka.version"]
        tools_version = opts.get("kafka.tools.version") or self.tools_version_on_central or version
        profiles = args[args.index("-P") + 1].split(",")
        if "broker" in profiles:
            make_jar(out / f"kafka_2.13-{version}.jar", BROKER_4X)
            make_jar(out / f"kafka-clients-{version}.jar")
        if "tools" in profiles:
            make_jar(out / f"kafka-tools-{tools_version}.jar", TOOLS_4X)
            if "broker" not in profiles:
                make_jar(out / f"kafka-clients-{tools_version}.jar")
        return Completed(args, 0, "")
