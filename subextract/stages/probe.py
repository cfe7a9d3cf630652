"""Probe a video: duration, frame rate, display size and rotation.

The imageio-ffmpeg wheel (our fallback when the system has no FFmpeg) ships ``ffmpeg`` but not
``ffprobe``, so we read the stream header that ``ffmpeg -i`` prints instead of calling
``ffmpeg.probe``; one code path then serves every machine.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from functools import lru_cache
from pathlib import Path

from subextract.errors import SubextractError
from subextract.schema import VideoInfo
from subextract.stages.netguard import GuardProxy, describe_refusals
from subextract.stages.source import (MAX_STREAMS, check_url, ffmpeg_environment, ffmpeg_input, input_args, is_url,
                                     needs_proxy)


@lru_cache(maxsize=1)
def ffmpeg_exe() -> str:
    """The system ``ffmpeg`` (or ``$SUBEXTRACT_FFMPEG``), else the binary the imageio-ffmpeg wheel ships."""
    configured = os.environ.get("SUBEXTRACT_FFMPEG") or shutil.which("ffmpeg")
    if configured:
        return configured
    try:
        import imageio_ffmpeg
    except ImportError as exc:  # pragma: no cover - it is a declared dependency
        raise SubextractError("no ffmpeg found: install ffmpeg or the imageio-ffmpeg package") from exc
    return imageio_ffmpeg.get_ffmpeg_exe()


_DURATION = re.compile(r"Duration: (\d+):(\d\d):(\d\d(?:\.\d+)?)")
_VIDEO_STREAM = re.compile(r"Stream #\d+:\d+.*?: Video: (\w+).*?, (\d+)x(\d+)\b")
_FPS = re.compile(r"(\d+(?:\.\d+)?) (?:fps|tbr)")
_ROTATION = re.compile(r"rotation of (-?\d+(?:\.\d+)?) degrees")


def check_readable(path: str) -> None:
    """Reject paths that cannot be a video before FFmpeg gives a less clear message."""
    if is_url(path):
        check_url(path)
        return
    p = Path(path)
    try:
        p.stat()
    except FileNotFoundError:
        raise SubextractError(f"{path}: no such file") from None
    except OSError as exc:  # a name too long, a loop of links: Path.exists() raised those
        raise SubextractError(f"{path}: cannot be opened ({exc.strerror})") from None
    if p.is_dir():
        raise SubextractError(f"{path}: is a directory, not a video file")
    if not os.access(p, os.R_OK):
        raise SubextractError(f"{path}: permission denied")
    if p.stat().st_size == 0:
        raise SubextractError(f"{path}: file is empty (0 bytes)")


MIN_SIDE = 16  # pixels: a smaller picture cannot show a readable subtitle line
# Pixels of one picture: twice 8K. A 16000x16000 MJPEG still decoded to 768 MB a frame and was
# then called damaged; a real video is never this large.
MAX_PIXELS = 8192 * 8192


def probe(path: str) -> VideoInfo:
    check_readable(path)
    guard = GuardProxy() if needs_proxy(path) else None
    try:
        result = subprocess.run(
            [ffmpeg_exe(), "-hide_banner", "-nostdin", *input_args(path, guard.url if guard else None), "-i",
             ffmpeg_input(path)],
            capture_output=True, text=True, errors="replace", check=False, env=ffmpeg_environment(),
            start_new_session=True,  # Ctrl-C reaches only us (see sample.decode_frames)
        )
    finally:
        if guard is not None:
            guard.close()
    if guard is not None and guard.refused:
        raise SubextractError(f"{path}: the stream names an address it may not reach: "
                              f"{describe_refusals(guard.refused)}")
    if is_url(path):
        _check_stream_opened(path, result.stderr)
    elif "Error opening input" in result.stderr:
        _explain_refused_format(path)
    info = parse_probe_output(path, result.stderr)
    if min(info.width, info.height) < MIN_SIDE:
        raise SubextractError(f"{path}: the picture is {info.width}x{info.height} pixels, too small to hold "
                              f"subtitles (at least {MIN_SIDE}x{MIN_SIDE})")
    if info.width * info.height > MAX_PIXELS:
        raise SubextractError(f"{path}: the picture is {info.width}x{info.height} pixels, larger than subextract "
                              f"reads (at most {MAX_PIXELS // 1_000_000} megapixels, 8K is 33)")
    return info


_LIST_SIGNATURES = ((b"#EXTM3U", "an HLS playlist", "hls"), (b"ffconcat", "a concat list", "concat"),
                    (b"file ", "a concat list", "concat"), (b"<?xml", "an XML manifest (DASH?)", "dash"))


def _explain_refused_format(path: str) -> None:
    """A local file FFmpeg could not open because it is a list of other files, not a container."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(256).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return
    for signature, kind, name in _LIST_SIGNATURES:
        if head.startswith(signature):
            raise SubextractError(f"{path}: is {kind} that names other files, not a video; it is not followed "
                                  f"unless asked for (--input-format {name})")


def _check_stream_opened(url: str, text: str) -> None:
    """A network failure (refused, timed out, HTTP 404) or a source the stream may not open (a
    playlist naming a ``file:`` segment), in FFmpeg's words.

    ``ffmpeg -i`` without an output ends with "At least one output file must be specified" once
    the input opened; anything else last is why it did not."""
    lines = [re.sub(r"^\[[^]]* @ 0x[0-9a-f]+\] ", "", line.strip()).removeprefix(f"{url}: ")
             for line in text.splitlines() if line.strip()]
    refused = next((line for line in lines if "not on whitelist" in line), None)
    if refused is not None:
        raise SubextractError(f"{url}: the stream names a source it may not open ({refused})")
    if not lines or "output file" not in lines[-1]:
        # Only an HTTP status is passed on: FFmpeg's own words (refused, timed out) would tell a
        # closed port from a filtered one.
        status = next((m.group(0) for line in lines if (m := re.search(r"HTTP error \d{3}[^,;]*", line))), None)
        if status is None or "502" in status:
            status = "no reply, or not a stream FFmpeg reads"
        raise SubextractError(f"{url}: cannot read the stream ({status})")


def parse_probe_output(path: str, text: str) -> VideoInfo:
    # FFmpeg's words when the file has more streams than -max_streams: Matroska says so, MP4
    # fails to allocate the stream past the limit.
    if "exceeds max_streams" in text or ("Error opening input" in text and "Cannot allocate memory" in text):
        raise SubextractError(f"{path}: has more than {MAX_STREAMS} streams, more than a video file holds; "
                              "not opened")
    if "Error opening input" in text or "Invalid data found" in text:
        raise SubextractError(f"{path}: not a video file FFmpeg can read")
    lines = text.splitlines()
    video_line = next((line for line in lines if _VIDEO_STREAM.search(line)
                       and "attached pic" not in line), None)
    if video_line is None:
        raise SubextractError(f"{path}: contains no video stream (audio-only or not a video)")
    codec, width, height = _VIDEO_STREAM.search(video_line).groups()
    fps_match = _FPS.search(video_line)
    duration_match = _DURATION.search(text)
    duration = 0.0
    if duration_match:
        h, m, s = duration_match.groups()
        duration = int(h) * 3600 + int(m) * 60 + float(s)
    rotation_match = _ROTATION.search(text)
    rotation = int(round(float(rotation_match.group(1)))) % 360 if rotation_match else 0
    w, h = int(width), int(height)
    if rotation in (90, 270):
        w, h = h, w
    return VideoInfo(path=path, duration=duration, fps=float(fps_match.group(1)) if fps_match else 0.0,
                     width=w, height=h, rotation=rotation, codec=codec)
