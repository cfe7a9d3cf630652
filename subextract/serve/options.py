"""A job's options, as the client sends them (form fields or JSON keys), checked when the job is
submitted: a bad option is a 400 then, not a failed job later.

The same options as the CLI's, with two differences a shared server needs: ``config`` names
presets only (a path would let a client read the server's files), and ``watchlist`` is the list's
text itself, not a file name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

from subextract.errors import SubextractError
from subextract.stages.region import user_box

FIELDS = ("lang", "config", "region", "start", "end", "translate", "watchlist", "webhook")
MAX_URL = 2048  # characters of a webhook URL
MAX_WATCHLIST = 256 * 1024  # characters


@dataclass(frozen=True)
class JobOptions:
    lang: str = "all"
    config: tuple[str, ...] = field(default_factory=tuple)
    region: str | None = None
    start: float = 0.0
    end: float | None = None
    translate: str | None = None
    watchlist: str | None = None
    webhook: str | None = None  # a URL told when the job ends (serve/webhooks.py)

    def stored(self) -> dict[str, Any]:
        return {**asdict(self), "config": list(self.config)}

    @classmethod
    def from_stored(cls, data: Mapping[str, Any]) -> "JobOptions":
        return cls(**{**data, "config": tuple(data.get("config") or ())})


def parse_options(values: Mapping[str, Any], allowed_configs: list[str], can_translate: bool) -> JobOptions:
    """``values``: field → str (a form field), list of str (a repeated one) or a JSON value."""
    from subextract.cli.options import time_arg
    from subextract.feeds import Watchlist
    from subextract.langtags import reading_language, translation_language

    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise SubextractError(f"unknown option {unknown[0]!r} (options: {', '.join(FIELDS)})")
    lang = reading_language(_text(values, "lang") or "all", "lang")
    configs = values.get("config") or []
    configs = [configs] if isinstance(configs, str) else configs
    if not isinstance(configs, list) or not all(isinstance(c, str) for c in configs):
        raise SubextractError("config: a preset name or a list of them")
    for name in configs:
        if name not in allowed_configs:
            raise SubextractError(f"config {name!r}: not a preset of this server ({', '.join(allowed_configs)})")
    region = _text(values, "region")
    if region is not None:
        user_box(region, "region")
    start = _time(values, "start", time_arg) or 0.0
    end = _time(values, "end", time_arg)
    if end is not None and end <= start:
        raise SubextractError(f"end ({end:g} s) must come after start ({start:g} s)")
    translate = _text(values, "translate")
    if translate is not None:
        translate = translation_language(translate, "translate")
        if not can_translate:
            raise SubextractError("translate: this server has no translator (start it with --translator-server)")
        if translate == lang:
            raise SubextractError(f"translate {translate}: the cues are already in that language")
    watchlist = _text(values, "watchlist")
    if watchlist is not None:
        if len(watchlist) > MAX_WATCHLIST:
            raise SubextractError(f"watchlist: longer than {MAX_WATCHLIST} characters")
        Watchlist.parse(watchlist, "watchlist")
    webhook = _text(values, "webhook")
    if webhook is not None:
        parts = urlsplit(webhook)
        if parts.scheme not in ("http", "https") or not parts.hostname or len(webhook) > MAX_URL:
            raise SubextractError(f"webhook: an http or https URL of at most {MAX_URL} characters")
    return JobOptions(lang=lang, config=tuple(configs), region=region, start=start, end=end, translate=translate,
                      watchlist=watchlist, webhook=webhook)


def _text(values: Mapping[str, Any], name: str) -> str | None:
    value = values.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, list):
        if len(value) != 1:
            raise SubextractError(f"{name}: given {len(value)} times")
        value = value[0]
    if not isinstance(value, str):
        raise SubextractError(f"{name}: expected text")
    return value.strip() or None


def _time(values: Mapping[str, Any], name: str, parse) -> float | None:
    value = values.get(name)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    text = _text({name: value}, name)
    return None if text is None else _checked(parse, text, name)


def _checked(parse, value: str, name: str):
    import argparse

    try:
        return parse(value)
    except argparse.ArgumentTypeError as exc:
        raise SubextractError(f"{name}: {exc}") from None
