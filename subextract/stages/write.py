"""Write cues as SRT, ASS (pysubs2), WebVTT, plain text or JSON; files are replaced atomically.

ASS and WebVTT keep where a cue was shown: a cue of a band in the upper half of the picture is
placed at the top (``{\\an8}``, ``line:0``), the others at the bottom, where players put them."""

from __future__ import annotations

import hashlib
import html
import io
import json
import os
import sys
import tempfile
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path

import pysubs2

from subextract.errors import SubextractError
from subextract.schema import Cue

_LINE_BREAK = r"\N"  # pysubs2's (and ASS's) hard line break


# Bidirectional embeddings, overrides and isolates: text that reorders what follows it on screen
# (and in an editor: "Trojan source"). The marks (LRM, RLM, ALM) that right-to-left text needs stay.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def shown_line(line: str) -> str:
    """A cue line as a subtitle file may hold it: control characters (NUL, ESC, DEL, C1; a tab
    becomes a space) and bidi overrides dropped. OCR never reads them; an edit may send them."""
    if line.isprintable() and not _BIDI_CONTROLS.intersection(line):
        return line
    return "".join(" " if char == "\t" else char for char in line
                   if char == "\t" or (unicodedata.category(char) != "Cc" and char not in _BIDI_CONTROLS))


def _srt_line(line: str) -> str:
    """A line of an SRT cue: ``-->`` is a timing line's arrow to every SRT reader (a line
    ``00:00:01,000 --> 00:00:02,000`` in a cue split it in three on reading it back), so the text's
    arrow is written ``->``."""
    return shown_line(line).replace("-->", "->")


def output_format(path: str | None, given: str | None) -> str:
    """The format of ``-o PATH``: ``given`` (--format), which must agree with a subtitle extension
    (``-o out.vtt`` wrote SRT), else the extension's, else SRT."""
    extension = os.path.splitext(path or "")[1].lower().lstrip(".") if path and path != "-" else ""
    if given is None:
        return extension if extension in FORMATS else "srt"
    if extension in FORMATS and extension != given:
        raise SubextractError(f"{path}: the name says {extension}, --format says {given}; give one that agrees")
    return given


def _ms(seconds: float) -> int:
    return int(round(seconds * 1000))


def clock(seconds: float, separator: str = ":") -> str:
    """``HH:MM:SS.mmm`` (WebVTT's time; with ``-`` a file name's)."""
    ms = _ms(seconds)
    return separator.join(f"{part:02d}" for part in (ms // 3_600_000, ms // 60_000 % 60, ms // 1000 % 60)) \
        + f".{ms % 1000:03d}"


def top_bands(metadata: dict | None) -> set[int]:
    """Indexes of the bands in the upper half of the picture (from the metadata's bands and size)."""
    bands, height = (metadata or {}).get("bands") or [], (metadata or {}).get("height")
    if not height:
        return set()
    return {i for i, band in enumerate(bands) if band.get("y", 0) + band.get("height", 0) / 2 < height / 2}


def render_srt(cues: Sequence[Cue]) -> str:
    subs = pysubs2.SSAFile()
    for cue in cues:
        # An empty line would end the cue's block: a reader would take what follows for the next cue.
        lines = [text for text in map(_srt_line, cue.lines) if text.strip()]
        subs.append(pysubs2.SSAEvent(start=_ms(cue.start), end=_ms(cue.end), text=_LINE_BREAK.join(lines)))
    # keep_ssa_tags: the text goes out as it was read, braces and all (no override-tag parsing).
    return subs.to_string("srt", keep_ssa_tags=True)


def render_ass(cues: Sequence[Cue], metadata: dict | None = None) -> str:
    top = top_bands(metadata)
    width, height = (metadata or {}).get("width") or 1920, (metadata or {}).get("height") or 1080
    subs = pysubs2.SSAFile()
    subs.info.update({"PlayResX": str(width), "PlayResY": str(height), "ScaledBorderAndShadow": "yes"})
    style = subs.styles["Default"]
    style.fontsize = round(height * 0.055)
    style.outline, style.shadow = max(1.0, height / 540), 0.0
    style.marginv = round(height * 0.04)
    for cue in cues:
        # "{" opens an override tag in ASS: braces read off the picture are escaped as libass reads them.
        lines = [shown_line(line).replace("{", "\\{").replace("}", "\\}") for line in cue.lines]
        subs.append(pysubs2.SSAEvent(start=_ms(cue.start), end=_ms(cue.end),
                                     text=("{\\an8}" if cue.band in top else "") + _LINE_BREAK.join(lines)))
    return subs.to_string("ass")


def render_vtt(cues: Sequence[Cue], metadata: dict | None = None) -> str:
    # Written here, not by pysubs2, whose WebVTT writer has no cue settings (line:0 for the top).
    # Cue text is markup in WebVTT: "<" or "&" in a subtitle would open a tag or an entity.
    top = top_bands(metadata)
    out = io.StringIO()
    out.write("WEBVTT\n")
    for cue in cues:
        settings = " line:0" if cue.band in top else ""
        body = "\n".join(html.escape(text, quote=False) for text in map(shown_line, cue.lines) if text.strip()) or " "
        out.write(f"\n{clock(cue.start)} --> {clock(cue.end)}{settings}\n{body}\n")
    return out.getvalue()


def cue_record(cue: Cue) -> dict:
    return {"start": round(cue.start, 3), "end": round(cue.end, 3), "text": cue.text,
            "lines": list(cue.lines), "languages": list(cue.languages),
            "confidence": cue.confidence, "band": cue.band}


def main_language(cue: Cue) -> str:
    """The language of most of the cue's characters (a bilingual zh+en cue counts as its longer line's)."""
    weights: dict[str, int] = {}
    for line, language in zip(cue.lines, cue.languages):
        weights[language] = weights.get(language, 0) + len(line)
    return max(weights, key=weights.get) if weights else "und"


def jsonl_record(cue: Cue, video: str) -> dict:
    """One line of a JSONL feed: the cue, its main language and the video it comes from."""
    return {"video": video, **cue_record(cue), "language": main_language(cue)}


def jsonl_line(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


def render_jsonl(cues: Sequence[Cue], metadata: dict | None = None) -> str:
    video = str((metadata or {}).get("video", ""))
    return "".join(jsonl_line(jsonl_record(cue, video)) for cue in cues)


def render_json(cues: Sequence[Cue], metadata: dict | None = None) -> str:
    """The metadata and the cues; with ``damaged`` spans in the metadata, each cue says whether
    it overlaps one (its text or times may be wrong)."""
    spans = (metadata or {}).get("damaged") or []
    records = [cue_record(cue) for cue in cues]
    if spans:
        for record, cue in zip(records, cues):
            record["damaged"] = any(cue.start < span["end"] and cue.end > span["start"] for span in spans)
    document = {**(metadata or {}), "cues": records}
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def render_txt(cues: Sequence[Cue], metadata: dict | None = None) -> str:
    """Plain text, one cue per paragraph (as whisper and the OCR peers write it): for reading,
    searching and pasting, without times."""
    return "".join("\n".join(shown_line(line) for line in cue.lines if line.strip()) + "\n\n"
                   for cue in cues).rstrip("\n") \
        + ("\n" if cues else "")


# format → writer of (cues, metadata): the bands and picture size place ASS and WebVTT cues, JSON
# carries all of it.
WRITERS: dict[str, Callable[[Sequence[Cue], dict | None], str]] = {
    "srt": lambda cues, _metadata: render_srt(cues), "vtt": render_vtt, "ass": render_ass, "txt": render_txt,
    "json": render_json, "jsonl": render_jsonl}
FORMATS = tuple(WRITERS)


def render(cues: Sequence[Cue], fmt: str, metadata: dict | None = None) -> str:
    writer = WRITERS.get(fmt)
    if writer is None:
        raise SubextractError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    return writer(cues, metadata)


def _process_umask() -> int:
    """The process's umask, read once: Linux shows it in /proc; elsewhere it can only be read by
    setting it, which is done here, at import, before this process's threads create files (set
    while a batch or the service writes, another thread's file would get mode 0666)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _process_umask()


def silence_stdout() -> None:
    """After a failed write to stdout (a full disk, a closed pipe), later writes and the flush at
    exit go nowhere instead of failing again with a traceback."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no real file (a test's buffer): nothing to redirect
        pass


def check_writable(path: str, force: bool, inputs: Sequence[str] = ()) -> None:
    """Fail before hours of work, not after: the output must be new (or forced) and its folder
    writable, and never one of ``inputs`` or a file this tool could not have written."""
    if path == "-":
        if sys.stdout is None or not sys.stdout.writable():  # started with stdout closed (>&-)
            raise SubextractError("-o -: stdout is closed; give -o FILE")
        return
    target = Path(path)
    if len(os.fsencode(target.name)) > _NAME_MAX:  # said now, not after the whole extraction
        raise SubextractError(f"{path}: the file name is longer than {_NAME_MAX} bytes, more than a folder holds")
    if target.is_dir():
        raise SubextractError(f"{path}: is a directory; give a file name with -o")
    if _is_special(target):
        return
    if target.exists() and not force and not any(_same_file(target, source) for source in inputs):
        raise SubextractError(f"{path}: already exists (use --force to overwrite)")
    check_replaceable(path, inputs)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise SubextractError(f"{path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise SubextractError(f"{path}: folder {folder} is not writable")


def check_replaceable(path: str, inputs: Sequence[str] = ()) -> None:
    """Whatever the flags, an output never replaces an input (also through a link) nor an
    existing file that is not a subtitle file (a video named ``clip.srt``, someone's notes)."""
    target = Path(path)
    for source in inputs:
        if _same_file(target, source):
            raise SubextractError(f"{path}: is the input {source}; refusing to overwrite it (give another -o)")
    if target.is_file() and not _is_subtitle_text(target):
        raise SubextractError(f"{path}: exists and is not a subtitle file this tool writes; refusing to "
                              "overwrite it, whatever the flags (move it or give another output name)")


def _same_file(target: Path, source: str) -> bool:
    try:
        return os.path.samefile(target, source)
    except OSError:  # one of them does not exist (or is a URL): not the same file
        return False


SUBTITLE_EXTENSIONS = tuple(f".{fmt}" for fmt in FORMATS)  # what this tool writes
_NAME_MAX = 255  # bytes of one file name on Linux, macOS and Windows file systems alike
_JSON_SHAPE_LIMIT = 64 * 1024 * 1024  # a JSON output is read whole to tell it from someone else's JSON


def _is_subtitle_text(path: Path) -> bool:
    """Empty, or text (UTF-8, no NUL bytes) under a subtitle file's extension: a video, a picture or
    an archive is binary, and other files are not named like an output."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return True  # unreadable: the write itself will fail with the reason
    if not head:
        return True
    if path.suffix.lower() not in SUBTITLE_EXTENSIONS or b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # more than a character cut by the 4 KiB read
            return False
    if path.suffix.lower() in (".json", ".jsonl"):
        return _is_our_json(path)
    return True


def _is_our_json(path: Path) -> bool:
    """A JSON document with a ``cues`` list, or JSON lines of cues (each with its ``start``):
    what this tool writes, not ``package.json`` or any other JSON that happens to be text."""
    try:
        if path.stat().st_size > _JSON_SHAPE_LIMIT:
            return False
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        if path.suffix.lower() == ".json":
            document = json.loads(text)
            return isinstance(document, dict) and isinstance(document.get("cues"), list)
        first = next((line for line in text.splitlines() if line.strip()), None)
        record = json.loads(first) if first is not None else {}
        return isinstance(record, dict) and (first is None or "start" in record)
    except (ValueError, RecursionError):
        return False


def _is_special(target: Path) -> bool:
    """A device, FIFO or socket (``/dev/stdout``, a named pipe): written to, never replaced."""
    return target.exists() and not target.is_file()


def temporary_prefix(name: str) -> str:
    """The start of ``name``'s temporary file: short whatever the name (``.NAME.RANDOM.part`` of a
    247-character name passed the 255-byte limit, and the write failed after the whole
    extraction), and told apart from another name's by a digest of the whole name."""
    digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:8]
    return f".{name[:48]}.{digest}."


def write_text(path: str, text: str) -> None:
    """Write next to the target and rename, so a reader never sees a half-written file."""
    if path == "-":
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except OSError as exc:
            silence_stdout()
            reason = "the reader closed the pipe" if isinstance(exc, BrokenPipeError) else f"cannot write ({exc.strerror})"
            raise SubextractError(f"stdout: {reason}") from None
        return
    target = Path(path)
    if _is_special(target):
        try:
            with open(target, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            raise SubextractError(f"{path}: cannot write ({exc.strerror})") from None
        return
    temp = None
    try:
        fd, temp = tempfile.mkstemp(prefix=temporary_prefix(target.name), suffix=".part", dir=target.parent)
        # mkstemp makes the file private (0600); a subtitle file gets the usual umask-based mode.
        if hasattr(os, "fchmod"):  # not on Windows before Python 3.13; mkstemp's mode stands there
            os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, target)
    except OSError as exc:
        if temp is not None and os.path.exists(temp):
            os.unlink(temp)
        raise SubextractError(f"{path}: cannot write ({exc.strerror})") from None
