"""What a web page on another site may make a browser do to the service: nothing.

A browser sends a cross-origin ``multipart/form-data`` POST without asking first (no preflight)
and lets any page reach ``127.0.0.1``; a page whose DNS name is rebound to 127.0.0.1 even reads
the answers, as the browser thinks them its own site's. So, below the routes:
- a request naming another ``Host`` than the server's own names is refused (421) where the
  server listens on loopback (or ``--allowed-host`` lists its names);
- a state-changing request (anything but GET, HEAD, OPTIONS) from another origin (``Origin``,
  or ``Sec-Fetch-Site: cross-site`` without one) is refused (403), unless ``--cors-origin`` names it;
- every answer says it may not be framed (``frame-ancestors 'none'``, ``X-Frame-Options``), and
  carries a Content-Security-Policy that allows the page's own scripts and styles only.
``--cors-origin`` opts a site in: Starlette's CORSMiddleware answers its preflights.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from urllib.parse import urlsplit

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                           "img-src 'self' data: blob:; media-src 'self' blob:; connect-src 'self'; object-src 'none'; "
                           "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = ((b"content-security-policy", CONTENT_SECURITY_POLICY.encode()), (b"x-frame-options", b"DENY"),
                    (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"))


def is_loopback(host: str) -> bool:
    """An address (or ``localhost``) only this machine reaches."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Origins:
    listen_host: str = "127.0.0.1"
    allowed_hosts: tuple[str, ...] = ()  # --allowed-host: names the server is reached by, besides loopback's
    cors_origins: tuple[str, ...] = ()  # --cors-origin: sites whose pages may call the API

    def host_allowed(self, host_header: str) -> bool:
        if not self.allowed_hosts and not is_loopback(self.listen_host):
            return True  # reached by any name on the network: the API key is what protects it there
        name = _host_name(host_header)
        return name in LOOPBACK_NAMES or name == self.listen_host.strip("[]").lower() or \
            name in {allowed.lower() for allowed in self.allowed_hosts}

    def origin_allowed(self, origin: str, host_header: str) -> bool:
        if origin in self.cors_origins:
            return True
        parts = urlsplit(origin)
        return origin != "null" and bool(parts.netloc) and parts.netloc.lower() == host_header.lower()


def _host_name(host_header: str) -> str:
    """The name in a ``Host`` header, without its port: ``[::1]:8000`` → ``::1``."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class BrowserGuard:
    def __init__(self, app, origins: Origins) -> None:
        self.app = app
        self.origins = origins

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")

        async def with_headers(message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        if not self.origins.host_allowed(host):
            await _refuse(421, f"this server is not reached by the name {host!r} (a page on another site? "
                               "--allowed-host adds a name)", with_headers)
            return
        if scope["method"] not in SAFE_METHODS:
            origin = headers.get("origin")
            if origin is not None and not self.origins.origin_allowed(origin, host):
                await _refuse(403, f"a request from the page of {origin!r} may not change anything here "
                                   "(--cors-origin allows a site)", with_headers)
                return
            if origin is None and headers.get("sec-fetch-site") == "cross-site":
                await _refuse(403, "a request from another site's page may not change anything here", with_headers)
                return
        await self.app(scope, receive, with_headers)


async def _refuse(status: int, message: str, send) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def cors_options(origins: Origins) -> dict:
    """Starlette CORSMiddleware's arguments for the sites ``--cors-origin`` names."""
    return {"allow_origins": list(origins.cors_origins), "allow_methods": ["GET", "POST", "PATCH", "DELETE"],
            "allow_headers": ["Authorization", "Content-Type", "Last-Event-ID", "X-Request-Id", "Idempotency-Key"],
            "expose_headers": ["Location", "X-Request-Id", "Retry-After"], "max_age": 600}
