"""A request handler base for the small OpenAI-compatible HTTP endpoints tests stand up on
127.0.0.1 (a refusing translator, a numbering translator, OCR replicas): quiet, JSON replies."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler


class JsonHandler(BaseHTTPRequestHandler):
    def log_message(self, *_args) -> None:
        pass

    def send_json(self, document: dict) -> None:
        body = json.dumps(document).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
