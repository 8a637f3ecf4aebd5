"""A small client for the Toxiproxy HTTP API (the parts kchaos uses).

toxiproxy-python is unmaintained and lacks per-call timeouts and ``/reset``; the API is a
handful of JSON calls, so we speak it directly with requests.

Every toxic kchaos adds is named ``kchaos-...`` so a heal can tell its own toxics apart,
although ``POST /reset`` (used by heal-everything) removes all toxics and re-enables every
proxy of the run's own Toxiproxy container.
"""

from __future__ import annotations

from typing import Any

import requests

from kchaos.harness.errors import FaultError, HealError

TOXIC_PREFIX = "kchaos-"


class Toxiproxy:
    def __init__(self, base_url: str, timeout: float = 5.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._session = requests.Session()

    def _call(self, method: str, path: str, body: Any = None, *, heal: bool = False) -> Any:
        url = self.base_url + path
        try:
            resp = self._session.request(method, url, json=body, timeout=self.timeout)
        except requests.RequestException as exc:
            err = HealError if heal else FaultError
            raise err(f"toxiproxy {method} {path}: {exc}") from exc
        if resp.status_code >= 400:
            err = HealError if heal else FaultError
            raise err(f"toxiproxy {method} {path}: HTTP {resp.status_code} {resp.text.strip()}")
        if not resp.content:
            return None
        try:
            return resp.json()
        except ValueError:
            return resp.text

    def proxies(self) -> dict[str, Any]:
        result = self._call("GET", "/proxies")
        return result if isinstance(result, dict) else {}

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
        self._call("POST", f"/proxies/{proxy}/toxics", body)

    def remove_toxic(self, proxy: str, name: str) -> bool:
        """Remove one toxic; False when it was not there."""
        try:
            self._call("DELETE", f"/proxies/{proxy}/toxics/{name}", heal=True)
        except HealError as exc:
            if "404" in str(exc):
                return False
            raise
        return True

    def toxics(self, proxy: str) -> list[dict[str, Any]]:
        result = self._call("GET", f"/proxies/{proxy}/toxics", heal=True)
        return result if isinstance(result, list) else []

    def set_enabled(self, proxy: str, enabled: bool, *, heal: bool = False) -> None:
        self._call("POST", f"/proxies/{proxy}", {"enabled": enabled}, heal=heal)

    def reset(self) -> None:
        """Remove every toxic and re-enable every proxy."""
        self._call("POST", "/reset", heal=True)

    def leftovers(self) -> list[str]:
        """Human-readable list of toxics and disabled proxies now present."""
        found = []
        for name, proxy in sorted(self.proxies().items()):
            if not proxy.get("enabled", True):
                found.append(f"proxy {name} disabled")
            for toxic in proxy.get("toxics") or []:
                found.append(f"toxic {toxic.get('name')} on {name}")
        return found
