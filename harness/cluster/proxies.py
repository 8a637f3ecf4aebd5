"""The one Toxiproxy client of kchaos: the calls the cluster and the faults make on a run's
own Toxiproxy server (built at 2.12.0), spoken directly over its HTTP API with requests.

Why not toxiproxy-python: it keeps the server address in class attributes shared by the
whole process (one address for every cluster a process holds), sends every request
without a timeout (a hung server would hang a heal for ever), creates proxies one by one
instead of the server's ``/populate``, and needs the Python 2 compatibility package
``future``. The README's dependency table says the same.

Errors follow what the call is for: setting the cluster up raises ClusterError, adding a
toxic or cutting a proxy raises FaultError, undoing one raises HealError.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import requests

from kchaos.harness.cluster.api import ProxyHandle
from kchaos.harness.errors import ClusterError, FaultError, HealError, KchaosError


class Toxiproxy:
    """Calls on one Toxiproxy server, e.g. ``Toxiproxy("http://10.213.4.2:8474")``."""

    def __init__(self, url: str, *, timeout: float = 5.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._session = requests.Session()

    def _call(
        self, method: str, path: str, body: Any = None, *, error: type[KchaosError] = ClusterError
    ) -> Any:
        try:
            resp = self._session.request(method, self.url + path, json=body, timeout=self.timeout)
        except requests.RequestException as exc:
            raise error(f"Toxiproxy {method} {path}: {exc}") from exc
        if resp.status_code >= 300:
            raise error(f"Toxiproxy {method} {path}: HTTP {resp.status_code} {resp.text.strip()}")
        if not resp.content:
            return None
        try:
            return resp.json()
        except ValueError:
            return resp.text

    # -- set-up ---------------------------------------------------------------------------
    def version(self) -> str:
        """The server's version; ClusterError while it does not answer."""
        return str(self._call("GET", "/version")).strip()

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

    def proxies(self, *, error: type[KchaosError] = ClusterError) -> dict[str, dict[str, Any]]:
        result = self._call("GET", "/proxies", error=error)
        return result if isinstance(result, dict) else {}

    # -- faults ---------------------------------------------------------------------------
    def add_toxic(
        self,
        proxy: str,
        name: str,
        type_: str,
        stream: str,
        attributes: dict[str, Any],
        toxicity: float = 1.0,
    ) -> None:
        body = {
            "name": name,
            "type": type_,
            "stream": stream,
            "toxicity": toxicity,
            "attributes": attributes,
        }
        self._call("POST", f"/proxies/{proxy}/toxics", body, error=FaultError)

    def set_enabled(self, proxy: str, enabled: bool, *, heal: bool = False) -> None:
        """Enable or disable one proxy (disabled: connections are refused and cut)."""
        error = HealError if heal else FaultError
        self._call("POST", f"/proxies/{proxy}", {"enabled": enabled}, error=error)

    # -- heals ----------------------------------------------------------------------------
    def remove_toxic(self, proxy: str, name: str) -> bool:
        """Remove one toxic; False when it was not there."""
        try:
            self._call("DELETE", f"/proxies/{proxy}/toxics/{name}", error=HealError)
        except HealError as exc:
            if "HTTP 404" in str(exc):
                return False
            raise
        return True

    def toxics(self, proxy: str) -> list[dict[str, Any]]:
        result = self._call("GET", f"/proxies/{proxy}/toxics", error=HealError)
        return result if isinstance(result, list) else []

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        self._call("POST", "/reset", error=HealError)

    def leftovers(self) -> list[str]:
        """Human-readable list of toxics and disabled proxies now present."""
        found = []
        for name, proxy in sorted(self.proxies(error=HealError).items()):
            if not proxy.get("enabled", True):
                found.append(f"proxy {name} disabled")
            for toxic in proxy.get("toxics") or []:
                found.append(f"toxic {toxic.get('name')} on {name}")
        return found
