"""The optional webhook of a job (its ``webhook`` option): a signed POST when the job ends.

A thread looks in the store for ended jobs whose webhook has not been told, so a delivery pending
when the server stops is made after it starts again. Each delivery is retried with growing pauses
on a connection error, a timeout, a 5xx or a 429, then given up with a log line; the outcome is
stored on the job. The body is signed as ``Subextract-Signature: t=UNIX,v1=HEX``, the HMAC-SHA256
of ``UNIX.BODY`` under ``SUBEXTRACT_WEBHOOK_SECRET`` (Stripe's scheme: the receiver recomputes it
and refuses an old ``t``, so a captured call cannot be replayed later).

The address is vetted as URL jobs are (``stages/netguard.py``: public addresses only unless
``--allow-private-network`` admits it), at submission and again at each delivery, which connects
to the very address it vetted: a name that resolves elsewhere in between reaches nothing new.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx

from subextract.errors import SubextractError
from subextract.serve.store import Store

log = logging.getLogger(__name__)

SECRET_VARIABLE = "SUBEXTRACT_WEBHOOK_SECRET"
ATTEMPTS = 6  # deliveries tried: the pauses between them are 1, 2, 4, 8 and 16 seconds
FIRST_PAUSE = 1.0
TIMEOUT = 10.0  # seconds one delivery may take
_LOOK_EVERY = 1.0  # seconds between looks at the store for ended jobs


def secret() -> str | None:
    return os.environ.get(SECRET_VARIABLE) or None


def check_webhook(url: str) -> None:
    """At submission: this server can sign, and the URL's host is an address it may reach."""
    from subextract.stages.netguard import check_url_host

    if secret() is None:
        raise SubextractError(f"webhook: this server has no {SECRET_VARIABLE} to sign its calls with")
    try:
        check_url_host(url)
    except SubextractError as exc:
        raise SubextractError(f"webhook: {exc}".replace("network inputs", "webhooks")) from None


def signature(key: str, timestamp: int, body: bytes) -> str:
    return hmac.new(key.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


@dataclass
class _Pending:
    attempts: int = 0
    next_try: float = 0.0


class Webhooks:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._pending: dict[str, _Pending] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="webhooks", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=TIMEOUT + 1)

    def _run(self) -> None:
        while not self._stop.wait(_LOOK_EVERY):
            try:
                for job_id in self.store.webhooks_due():
                    pending = self._pending.setdefault(job_id, _Pending())
                    if time.monotonic() >= pending.next_try:
                        self._attempt(job_id, pending)
            except Exception:  # a locked store or a defect: looked at again next time
                log.exception("webhook delivery failed")

    def _attempt(self, job_id: str, pending: _Pending) -> None:
        job = self.store.get(job_id)
        if job is None:
            self._pending.pop(job_id, None)
            return
        url = job.options["webhook"]
        pending.attempts += 1
        try:
            status = deliver(url, {"event": "job.ended", "job": job.public()})
        except SubextractError as exc:
            outcome, retry = str(exc), "refused" not in str(exc)
        else:
            outcome, retry = f"HTTP {status}", status >= 500 or status == 429
            if 200 <= status < 300:
                self.store.webhook_done(job_id, f"delivered (HTTP {status}, attempt {pending.attempts})")
                self._pending.pop(job_id, None)
                log.info("job %s: webhook delivered", job_id)
                return
        if retry and pending.attempts < ATTEMPTS:
            pending.next_try = time.monotonic() + FIRST_PAUSE * 2 ** (pending.attempts - 1)
            log.info("job %s: webhook attempt %d failed (%s); trying again", job_id, pending.attempts, outcome)
            return
        self.store.webhook_done(job_id, f"failed after {pending.attempts} attempts: {outcome}")
        self._pending.pop(job_id, None)
        log.warning("job %s: webhook given up after %d attempts: %s", job_id, pending.attempts, outcome)


def deliver(url: str, payload: dict) -> int:
    """POST the signed payload to ``url`` at an address the network policy admits; the HTTP status."""
    from subextract.stages.netguard import policy

    key = secret()
    if key is None:
        raise SubextractError(f"refused: {SECRET_VARIABLE} is no longer set")
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        address = policy().vet(parts.hostname or "", port)[0]
    except SubextractError as exc:
        raise SubextractError(f"refused: {exc}") from None
    host = f"[{address}]" if address.version == 6 else str(address)
    pinned = urlunsplit((parts.scheme, f"{host}:{port}", parts.path or "/", parts.query, ""))
    body = json.dumps(payload, ensure_ascii=False).encode()
    timestamp = int(time.time())
    headers = {"Content-Type": "application/json", "Host": parts.netloc.rsplit("@", 1)[-1],
               "Subextract-Signature": f"t={timestamp},v1={signature(key, timestamp, body)}",
               "User-Agent": "subextract-webhook"}
    # The vetted address, with the name kept for the Host header and TLS (SNI and certificate).
    extensions = {"sni_hostname": parts.hostname} if parts.scheme == "https" else {}
    with httpx.Client(timeout=TIMEOUT, follow_redirects=False) as client:
        try:
            request = client.build_request("POST", pinned, content=body, headers=headers, extensions=extensions)
            return client.send(request).status_code
        except httpx.HTTPError as exc:
            raise SubextractError(f"{type(exc).__name__}: {exc}") from None
