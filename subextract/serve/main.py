"""``subextract serve``: parse the options, set the process-wide input policy, run uvicorn."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import socket
import sys
from pathlib import Path

from subextract.errors import SubextractError, one_line


def port_arg(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port: {value!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"not a port: {value!r} (0 to 65535)")
    return port


def non_negative_arg(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not 0 <= number < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number >= 0: {value!r}")
    return number


def build_parser() -> argparse.ArgumentParser:
    from subextract.cli.options import add_config_option, add_engine_options, count_arg, positive_arg

    parser = argparse.ArgumentParser(
        prog="subextract serve",
        description="An HTTP service: POST videos or URLs to /v1/jobs, stream their cues, proofread them at /. "
                    "Set SUBEXTRACT_SERVICE_KEY to require 'Authorization: Bearer KEY' on /v1/; "
                    "SUBEXTRACT_UPSTREAM_KEY is the key sent to OCR and translator servers (docs/service.md).")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=port_arg, default=8000, help="port to listen on (default: 8000)")
    parser.add_argument("--allow-no-key", action="store_true",
                        help="listen on a non-loopback --host without SUBEXTRACT_SERVICE_KEY (refused otherwise: any "
                             "machine that reaches the port could use the API); for a proxy that authenticates")
    parser.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                        help="a name clients reach the server by (the Host header), besides localhost and the "
                             "--host address; other names are refused (421), which stops DNS-rebinding pages")
    parser.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                        help="a site whose pages may call the API from the browser, e.g. https://app.example.com "
                             "(CORS); repeatable. Other sites' requests that change anything are refused (403)")
    parser.add_argument("--header-timeout", type=positive_arg, default=10.0, metavar="SECONDS",
                        help="a request head not complete this long after it began closes the connection "
                             "(default: 10)")
    parser.add_argument("--body-timeout", type=positive_arg, default=60.0, metavar="SECONDS",
                        help="a request body (an upload) that sends nothing this long closes the connection "
                             "(default: 60)")
    parser.add_argument("--min-free-mb", type=non_negative_arg, default=64.0, metavar="MB",
                        help="free space --data needs: below it /ready says not ready and uploads get 507 "
                             "(default: 64)")
    parser.add_argument("--workers", type=count_arg, default=1, metavar="N",
                        help="jobs run at once, each in a child process with its own engine where the engine allows "
                             "(rapidocr, openai), else on threads sharing one in-process model (default: 1)")
    parser.add_argument("--data", default="subextract-data", metavar="DIR",
                        help="where the job database, uploads and pictures live (default: ./subextract-data)")
    parser.add_argument("--max-upload-mb", type=positive_arg, default=2048.0, metavar="MB",
                        help="largest upload accepted, refused with 413 while it streams (default: 2048)")
    parser.add_argument("--max-queue", type=count_arg, default=16, metavar="N",
                        help="jobs that may wait; one more is refused with 429 and Retry-After (default: 16)")
    parser.add_argument("--job-timeout", type=positive_arg, default=3600.0, metavar="SECONDS",
                        help="a job running longer fails (default: 3600)")
    parser.add_argument("--shutdown-grace", type=float, default=30.0, metavar="SECONDS",
                        help="on SIGTERM, how long running jobs may finish before they go back to the queue "
                             "(default: 30)")
    parser.add_argument("--keep-days", type=positive_arg, metavar="DAYS",
                        help="remove a finished job's upload, pictures and cues this many days after it ended (a "
                             "sweep; the job's record stays and says so); by default kept until deleted")
    parser.add_argument("--replica", type=_replica_name, metavar="NAME",
                        help="this replica's name, leading every job id (NAME-...), so that a router in front of "
                             "several replicas sends each job's requests to the one that owns it (docs/service.md)")
    parser.add_argument("--allow-private-network", nargs="?", const="*", metavar="ADDR[:PORT],...",
                        help="let URL jobs reach loopback, private and other non-public addresses (all, or those "
                             "listed); by default only public ones")
    parser.add_argument("--translator-server", metavar="URL",
                        help="an OpenAI-compatible server for jobs with 'translate' (key: $SUBEXTRACT_UPSTREAM_KEY)")
    parser.add_argument("--translator-model", metavar="PATH|NAME", help="the translation model")
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"),
                        help="the logging level (default: info: a line per request and per job)")
    parser.add_argument("--log-format", default="text", choices=("text", "json"),
                        help="json: one JSON object a line, a request's fields as keys (default: text)")
    add_config_option(parser)
    add_engine_options(parser)
    return parser


def _replica_name(value: str) -> str:
    if not re.fullmatch(r"[a-z0-9]{1,16}", value):
        raise argparse.ArgumentTypeError("1 to 16 lowercase letters and digits (it leads every job id)")
    return value


class OneLine(logging.Formatter):
    """The text log: one line per record, whatever a client put in a path or a name (a traceback's
    own lines stay as they are)."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        return one_line(super().formatMessage(record))


class JsonLines(logging.Formatter):
    """One JSON object per log record, for log collectors; a request line carries its fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": self.formatTime(record), "level": record.levelname, "logger": record.name,
                 "message": record.getMessage(), **getattr(record, "request", {})}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def config_from_args(args: argparse.Namespace):
    from subextract.cli.options import ocr_overrides
    from subextract.serve.guard import Origins
    from subextract.serve.limits import Limits
    from subextract.serve.service import ServiceConfig

    ocr = ocr_overrides(args)
    return ServiceConfig(
        data=Path(args.data).resolve(), workers=args.workers, max_queue=args.max_queue,
        max_upload_mb=args.max_upload_mb, job_timeout=args.job_timeout, shutdown_grace=max(args.shutdown_grace, 0),
        api_key=service_key(), configs=tuple(args.config or ()),
        ocr_overrides={k: v for k, v in ocr.items() if v is not None},
        translator_server=args.translator_server, translator_model=args.translator_model,
        origins=Origins(listen_host=args.host, allowed_hosts=tuple(args.allowed_host),
                        cors_origins=tuple(origin.rstrip("/") for origin in args.cors_origin)),
        limits=Limits(header_timeout=args.header_timeout, body_timeout=args.body_timeout,
                      min_free_mb=args.min_free_mb),
        replica=args.replica or "", keep_days=args.keep_days)


SERVICE_KEY_VARIABLE = "SUBEXTRACT_SERVICE_KEY"


def service_key() -> str | None:
    """The key clients must send: SUBEXTRACT_SERVICE_KEY, or, as before it existed,
    SUBEXTRACT_API_KEY — which then stays the service's alone and is not sent upstream
    (SUBEXTRACT_UPSTREAM_KEY is). Two secrets, so the service's own never reaches a third party.
    Spaces around it are dropped: HTTP drops them from a header, so a key ending in a space could
    never be sent (said at start, not silently)."""
    from subextract.clients.openai_api import API_KEY_VARIABLE, keep_api_key_private

    log = logging.getLogger(__name__)
    variable = SERVICE_KEY_VARIABLE if os.environ.get(SERVICE_KEY_VARIABLE) else API_KEY_VARIABLE
    given = os.environ.get(variable) or ""
    key = given.strip()
    if key != given:
        log.warning("%s has spaces or line breaks around it; they are not part of the key (no client could "
                    "send them)", variable)
    if key and variable == API_KEY_VARIABLE:
        keep_api_key_private()
        log.warning("%s is taken as the service's key (set %s instead); it is no longer sent to OCR or translator "
                    "servers: give those their key in SUBEXTRACT_UPSTREAM_KEY", API_KEY_VARIABLE, SERVICE_KEY_VARIABLE)
    return key or None


def _apply_network_policy(allowed: str | None) -> None:
    """The CLI's policy for URL jobs; an upload is never read as a playlist or list (no --input-format)."""
    from subextract.cli.options import apply_input_options

    apply_input_options(argparse.Namespace(allow_private_network=allowed, input_format=None))


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from subextract.serve.app import create_app
    from subextract.serve.guard import is_loopback
    from subextract.serve.limits import timed_protocol

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if args.log_format == "json" else
                         OneLine("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=args.log_level.upper(), handlers=[handler], force=True)
    _apply_network_policy(args.allow_private_network)
    config = config_from_args(args)
    if config.api_key is None and not is_loopback(args.host) and not args.allow_no_key:
        raise SubextractError(f"--host {args.host}: refusing to serve the API to the network without a key (set "
                              "SUBEXTRACT_SERVICE_KEY, or --allow-no-key behind a proxy that authenticates)")
    config.base_settings()  # a bad --config or engine option fails now, with one line
    try:
        config.data.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SubextractError(f"--data {args.data}: cannot create it ({exc.strerror})") from None
    listener = _listen(args.host, args.port)
    app = create_app(config)
    logging.getLogger(__name__).info("serving on http://%s:%d/ (data: %s, %d workers, API key %s)", args.host,
                                     args.port, config.data, config.workers,
                                     "required" if config.api_key else "not set: the API is open")
    # Our own access line (request id, client, duration) replaces uvicorn's; open streams get
    # 5 s after SIGTERM, then the workers get --shutdown-grace.
    server = uvicorn.Server(uvicorn.Config(app, access_log=False, log_level=args.log_level,
                                           timeout_graceful_shutdown=5, log_config=None,
                                           http=timed_protocol(args.header_timeout, args.body_timeout)))
    server.run(sockets=[listener])
    return 0


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a taken port is one line and exit 2 before anything starts."""
    try:
        return socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET,
                                    reuse_port=False)
    except OSError as exc:
        # create_server re-raises a failed name lookup as a plain OSError with getaddrinfo's
        # negative code, which os.strerror calls "Unknown error -2".
        reason = "no such address or host name" if exc.errno is not None and exc.errno < 0 else \
            os.strerror(exc.errno) if exc.errno else str(exc)
        raise SubextractError(f"cannot listen on {host}:{port} ({reason})") from None
