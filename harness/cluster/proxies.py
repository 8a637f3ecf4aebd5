"""A small client of Toxiproxy's HTTP API for the cluster's own proxies.

toxiproxy-python keeps the server address in class attributes shared by the whole
process, which does not fit several clusters (or a test and a fault) talking to different
Toxiproxy servers at once, so the calls the cluster needs go through requests directly.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import requests

from kchaos.harness.cluster.api import ProxyHandle
from kchaos.harness.errors import ClusterError


class ToxiproxyAPI:
    """Calls on one Toxiproxy server, e.g. ``ToxiproxyAPI("http://10.213.4.2:8474")``."""

    def __init__(self, url: str, *, timeout: float = 5.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def _call(self, method: str, path: str, payload: Any = None) -> Any:
        try:
            resp = requests.request(method, self.url + path, json=payload, timeout=self.timeout)
        except requests.RequestException as exc:
            raise ClusterError(f"Toxiproxy {method} {path}: {exc}") from exc
        if resp.status_code >= 300:
            raise ClusterError(
                f"Toxiproxy {method} {path}: HTTP {resp.status_code} {resp.text.strip()}"
            )
        return resp.json() if resp.content else None

    def version(self) -> str:
        resp = requests.get(self.url + "/version", timeout=self.timeout)
        resp.raise_for_status()
        return resp.text.strip()

    def wait_up(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                self.version()
                return
            except requests.RequestException as exc:
                last = exc
                time.sleep(0.2)
        raise ClusterError(f"Toxiproxy API at {self.url} did not answer in {timeout:.0f}s: {last}")

    def populate(self, proxies: Iterable[ProxyHandle]) -> None:
        """Create (or replace) the given proxies, all enabled, in one call."""
        body = [
            {
                "name": p.name,
                "listen": f"0.0.0.0:{p.listen_port}",
                "upstream": p.upstream,
                "enabled": True,
            }
            for p in proxies
        ]
        self._call("POST", "/populate", body)

    def proxies(self) -> dict[str, dict[str, Any]]:
        result: dict[str, dict[str, Any]] = self._call("GET", "/proxies")
        return result

    def set_enabled(self, name: str, enabled: bool) -> None:
        """Enable or disable one proxy (disabled: connections are refused and cut)."""
        self._call("POST", f"/proxies/{name}", {"enabled": enabled})

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        self._call("POST", "/reset")
