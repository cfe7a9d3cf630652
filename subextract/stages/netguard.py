"""Which addresses a network input may reach, and a local proxy that holds FFmpeg to it.

FFmpeg follows whatever a stream names by itself: an HLS playlist's segments and keys, HTTP
redirects. Checking the URL the user gave is not enough, so every HTTP(S) request an FFmpeg
process makes goes through a small forward proxy started for that process (FFmpeg's
``-http_proxy``, which its HLS and DASH demuxers hand on to every nested request, and which TLS
reaches by CONNECT). The proxy resolves each host itself, refuses addresses outside the public
internet (loopback, private, link-local, CGNAT, multicast, reserved; IPv4 and IPv6, also behind a
DNS name) unless allowed, and connects to the address it vetted, so a name cannot resolve to
another address between the check and the connection. It answers every failure alike (403 for a
refusal, 502 for anything else), so nothing tells an open port from a closed one.

Written here rather than taken from a library: the proxies on PyPI are full servers (mitmproxy,
proxy.py) whose size and plugins are far beyond a loopback-only relay with one rule.
"""

from __future__ import annotations

import ipaddress
import logging
import selectors
import socket
import socketserver
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from subextract.errors import SubextractError

log = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_MAX_HEAD = 64 * 1024


@dataclass(frozen=True)
class Allowance:
    """An address range (and optionally one port) the user opened with ``--allow-private-network``."""

    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    port: int | None = None

    def admits(self, address: IPAddress, port: int) -> bool:
        return address in self.network and (self.port is None or self.port == port)


@dataclass
class NetworkPolicy:
    """``allow_all_private``: any address; else only public ones and the ``allowances``."""

    allow_all_private: bool = False
    allowances: tuple[Allowance, ...] = ()
    timeout: float = 20.0

    def refusal(self, address: IPAddress, port: int) -> str | None:
        """Why ``address`` may not be contacted, or None."""
        kind = non_public_kind(address)
        if kind is None or self.allow_all_private or any(a.admits(_plain(address), port) for a in self.allowances):
            return None
        return f"{kind} address"

    def vet(self, host: str, port: int) -> list[IPAddress]:
        """The addresses of ``host`` to connect to; SubextractError naming the host when any of
        them may not be contacted (a name with one private address is refused as a whole)."""
        addresses = resolve(host, port)
        for address in addresses:
            reason = self.refusal(address, port)
            if reason is not None:
                resolved = "" if host.strip("[]") == str(address) else f" ({_plain(address)})"
                raise SubextractError(f"{host} is a {reason}{resolved}; network inputs may only reach "
                                      "public addresses (--allow-private-network to allow it)")
        return addresses


_policy = NetworkPolicy()


def set_policy(policy: NetworkPolicy) -> None:
    """What network inputs may reach, for this process (the CLI sets it from its options)."""
    global _policy
    _policy = policy


def policy() -> NetworkPolicy:
    return _policy


def parse_allowances(text: str) -> tuple[Allowance, ...]:
    """``10.0.0.5:8080,192.168.0.0/16,[fd00::1]:443``: addresses or networks, each with an optional port."""
    allowances = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        host, port = item, None
        if item.startswith("["):
            host, _, rest = item[1:].partition("]")
            port = rest.removeprefix(":") or None
        elif item.count(":") == 1:
            host, port = item.split(":")
        try:
            allowances.append(Allowance(ipaddress.ip_network(host, strict=False), int(port) if port else None))
        except ValueError:
            raise SubextractError(f"--allow-private-network: {item!r} is not ADDRESS[/BITS][:PORT]") from None
    return tuple(allowances)


def _plain(address: IPAddress) -> IPAddress:
    """An IPv4 address carried in IPv6 (``::ffff:127.0.0.1``, 6to4) as the IPv4 address it reaches."""
    if isinstance(address, ipaddress.IPv6Address):
        return address.ipv4_mapped or address.sixtofour or address
    return address


def non_public_kind(address: IPAddress) -> str | None:
    """What kind of non-public address this is, or None for a public unicast address."""
    address = _plain(address)
    checks = (("loopback", address.is_loopback), ("multicast", address.is_multicast),
              ("link-local", address.is_link_local), ("unspecified", address.is_unspecified),
              ("carrier-grade NAT", isinstance(address, ipaddress.IPv4Address) and address in _CGNAT),
              ("reserved", address.is_reserved), ("private", address.is_private), ("reserved", not address.is_global))
    return next((kind for kind, hit in checks if hit), None)


def resolve(host: str, port: int) -> list[IPAddress]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise SubextractError(f"{host}: cannot resolve the host name") from None
    addresses: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%")[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def check_url_host(url: str) -> None:
    """The URL's own host, vetted before FFmpeg starts (the proxy vets every request again)."""
    parts = urlsplit(url)
    default_port = {"http": 80, "https": 443, "rtmp": 1935, "rtmps": 443}.get(parts.scheme.lower(), 80)
    try:
        port = parts.port or default_port
    except ValueError:
        raise SubextractError(f"{url}: invalid port") from None
    try:
        _policy.vet(parts.hostname or "", port)
    except SubextractError as exc:
        raise SubextractError(f"{url}: {exc}") from None


# ----------------------------------------------------------------------------------------------
# The proxy
# ----------------------------------------------------------------------------------------------

@dataclass
class _Log:
    refused: list[str] = field(default_factory=list)  # "URL (reason)" of each request refused
    lock: threading.Lock = field(default_factory=threading.Lock)

    def refuse(self, what: str) -> None:
        with self.lock:
            self.refused.append(what)


class _Handler(socketserver.BaseRequestHandler):
    server: "_Server"

    def handle(self) -> None:
        client: socket.socket = self.request
        client.settimeout(self.server.policy.timeout)
        try:
            head, rest = _read_head(client)
            method, target, version = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
        except (OSError, ValueError):
            return
        if method.upper() == "CONNECT":
            host, _, port_text = target.rpartition(":")
            self._relay(client, host.strip("[]"), _port(port_text, 443), target, None, rest)
            return
        parts = urlsplit(target)
        if parts.scheme.lower() != "http" or not parts.hostname:
            _answer(client, 400, "Bad Request")
            return
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        request = _rewritten_request(head, f"{method} {path} {version}")
        self._relay(client, parts.hostname, _port(parts.port, 80), target, request, rest)

    def _relay(self, client: socket.socket, host: str, port: int | None, what: str, request: bytes | None,
               rest: bytes) -> None:
        if port is None:
            _answer(client, 400, "Bad Request")
            return
        try:
            addresses = self.server.policy.vet(host, port)
        except SubextractError as exc:
            self.server.log.refuse(f"{what} ({str(exc).split(';')[0]})")
            _answer(client, 403, "Forbidden")
            return
        try:
            upstream = socket.create_connection((str(addresses[0]), port), timeout=self.server.policy.timeout)
        except OSError:
            _answer(client, 502, "Bad Gateway")  # refused, unreachable and timed out look the same
            return
        with upstream:
            try:
                if request is None:  # CONNECT: a tunnel (TLS inside, FFmpeg checks the certificate)
                    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    _pipe(client, upstream, rest, self.server.policy.timeout)
                else:
                    upstream.sendall(request + rest)
                    try:
                        head, body = _read_head(upstream)
                    except (OSError, ValueError):
                        _answer(client, 502, "Bad Gateway")  # no HTTP reply: alike for any kind of listener
                        return
                    _forward_response(head, body, upstream, client)
            except (OSError, ValueError):
                return


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, policy_: NetworkPolicy) -> None:
        self.policy = policy_
        self.log = _Log()
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: object, client_address: object) -> None:
        # A failed relay is FFmpeg's to report (it sees the connection end); never a traceback on stderr.
        log.debug("proxy request from %s failed", client_address, exc_info=True)


class GuardProxy:
    """A proxy for one FFmpeg process: ``url`` for ``-http_proxy``, ``refused`` afterwards."""

    def __init__(self, policy_: NetworkPolicy | None = None) -> None:
        self._server = _Server(policy_ or _policy)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="netguard", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def refused(self) -> list[str]:
        with self._server.log.lock:
            return list(self._server.log.refused)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "GuardProxy":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _port(value: object, default: int) -> int | None:
    if value in (None, ""):
        return default
    try:
        port = int(value)  # type: ignore[arg-type]
    except ValueError:
        return None
    return port if 0 < port < 65536 else None


def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    """The request or response head (up to the blank line) and whatever came after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(8192)
        if not chunk:
            raise ValueError("closed before the head ended")
        data += chunk
        if len(data) > _MAX_HEAD:
            raise ValueError("head too long")
    head, rest = data.split(b"\r\n\r\n", 1)
    return head, rest


_HOP_HEADERS = (b"connection:", b"proxy-connection:", b"keep-alive:", b"proxy-authorization:")


def _rewritten_request(head: bytes, request_line: str) -> bytes:
    """Origin-form request line; one request per connection (``Connection: close``), so the
    response's end is the connection's and every request is vetted on its own connection."""
    headers = [line for line in head.split(b"\r\n")[1:] if not line.lower().startswith(_HOP_HEADERS)]
    return b"\r\n".join([request_line.encode("latin-1"), *headers, b"Connection: close"]) + b"\r\n\r\n"


def _forward_response(head: bytes, rest: bytes, upstream: socket.socket, client: socket.socket) -> None:
    lines = [line for line in head.split(b"\r\n") if not line.lower().startswith(_HOP_HEADERS)]
    client.sendall(b"\r\n".join([*lines, b"Connection: close"]) + b"\r\n\r\n" + rest)
    while chunk := upstream.recv(65536):
        client.sendall(chunk)


def _pipe(client: socket.socket, upstream: socket.socket, pending: bytes, timeout: float) -> None:
    """Both directions of a CONNECT tunnel until either side closes or all goes quiet for ``timeout``."""
    if pending:
        upstream.sendall(pending)
    with selectors.DefaultSelector() as selector:
        selector.register(client, selectors.EVENT_READ, upstream)
        selector.register(upstream, selectors.EVENT_READ, client)
        while True:
            ready = selector.select(timeout)
            if not ready:
                return
            for key, _ in ready:
                chunk = key.fileobj.recv(65536)  # type: ignore[union-attr]
                if not chunk:
                    return
                key.data.sendall(chunk)


def _answer(client: socket.socket, status: int, reason: str) -> None:
    try:
        client.sendall(f"HTTP/1.1 {status} {reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode())
    except OSError:
        pass


def describe_refusals(refused: Sequence[str]) -> str:
    first = refused[0]
    return first if len(refused) == 1 else f"{first} and {len(refused) - 1} more"
