"""Signed, expiring links to a job's video for the page's ``<video>`` element, which cannot send
the API key a ``fetch`` sends. The signature is an HMAC of the job and the expiry time under a
secret drawn from the service's key (or made at start where there is none), so a link opens one
job's video for a few hours and nothing else.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

LIFETIME = 12 * 3600  # seconds a link stays valid: a long proofreading session


class MediaLinks:
    def __init__(self, service_key: str | None) -> None:
        self._secret = (hmac.new(service_key.encode(), b"subextract media links", hashlib.sha256).digest()
                        if service_key else secrets.token_bytes(32))

    def _signature(self, job_id: str, expires: str) -> str:
        return hmac.new(self._secret, f"{job_id}:{expires}".encode(), hashlib.sha256).hexdigest()

    def link(self, job_id: str, now: float | None = None) -> str:
        expires = str(int((now if now is not None else time.time()) + LIFETIME))
        return f"/media/{job_id}/video?expires={expires}&signature={self._signature(job_id, expires)}"

    def valid(self, job_id: str, expires: str, signature: str) -> bool:
        if not expires.isdigit() or len(expires) > 12 or int(expires) < time.time():
            return False
        return hmac.compare_digest(self._signature(job_id, expires), signature)
