"""Decode a video with FFmpeg and stream the subtitle band(s) of each frame, with its real PTS.

FFmpeg does the crop, scale and grey conversion in its filter graph; frames travel through a
pipe, so memory stays bounded whatever the video's length and nothing is written to disk.
Presentation times come from ``showinfo`` (the frame's own PTS), never from index/fps, so
variable-frame-rate video does not drift.
"""

from __future__ import annotations

import queue
import re
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache, partial

import cv2
import ffmpeg
import numpy as np

from subextract.schema import Band, DamagedSpan
from subextract.stages.damage import DamageTracker

from subextract.stages.probe import ffmpeg_exe
from subextract.stages.netguard import GuardProxy
from subextract.stages.source import ffmpeg_environment, ffmpeg_input, input_options, needs_proxy


@dataclass(frozen=True)
class Frame:
    pts: float  # seconds from the start of the video
    # One crop per band at analysis/OCR resolution: grey, or with a mask plane its Y, U and V
    # planes as three channels (the OCR picture keeps the colour: orange text over white fur has
    # the fur's luma).
    bands: tuple[np.ndarray, ...]
    mask_bands: tuple[np.ndarray, ...] = ()  # the same crops in the request's mask plane, when it has one


@dataclass(frozen=True)
class DecodeRequest:
    """What to decode: a time range, optional sampling, and the bands to crop."""

    path: str
    bands: Sequence[Band]
    scale: float = 1.0  # applied to every band (large videos are read at a smaller size)
    start: float = 0.0
    end: float | None = None
    sample_fps: float | None = None  # None keeps every decoded frame
    select: str | None = None  # an FFmpeg select expression over ``t`` (used for boundary re-decodes)
    keyframes_only: bool = False
    reference_frames_only: bool = False  # skip the frames no other frame is predicted from
    blackout: Sequence[tuple[int, int, int, int]] = ()  # x, y, w, h of static text (logos) to hide
    # The plane for Frame.mask_bands ("y", "u", "v", "-u", "-v"); with one the crops come as Y, U, V.
    mask_plane: str | None = None
    frame_duration: float = 0.04  # the stream's (or the sampling's) frame spacing: what counts as a missing frame


@dataclass
class DecodeReport:
    """Filled in while decoding: how it ended and what FFmpeg complained about."""

    frames: int = 0
    last_pts: float | None = None
    returncode: int | None = None
    errors: list[str] | None = None
    damaged: list[DamagedSpan] = field(default_factory=list)  # where FFmpeg reported decode errors
    refused: list[str] = field(default_factory=list)  # requests of a network input the vetting proxy refused
    ended_early: bool = False  # the demuxer said the input ended before it should have (a cut file)


# The integer PTS and the time base, not the printed pts_time: FFmpeg before 7 prints that with
# six significant digits (1234.567 s → 1234.57) and small values in exponent notation.
_TIME_BASE = re.compile(r"Parsed_showinfo.*? config in time_base: (\d+)/(\d+)")
_PTS = re.compile(r"Parsed_showinfo.*? n:\s*\d+ pts:\s*(-?\d+)(?:.*? (?:is)?key:(\d))?")
# Showinfo's own words: fields (``pts:``, ``fmt:yuv420p``, ``mean:[98 126 129]``) and the numbers
# that follow a field after spaces (``n:  34``); whatever follows them another thread wrote.
_SHOWINFO_OWN_TEXT = re.compile(r"(?:\s*(?:\w+:(?:\[[^\]]*\]|\S*)|-?[\d.]+(?=\s|$)))*")
# "verbose" is the level at which demuxers report the damage they skip over ("Element ... exceeds
# containing master element", "Unknown entry"); the decoder then conceals nothing, since the
# frames it lost never reached it, and the pictures that follow are wrong without an error.
_ERROR_WORDS = ("error", "invalid", "corrupt", "truncat", "partial file", "missing", "exceeds", "unknown entry",
                "mismatch", "resync", "overread", "out of range", "non-existing", "damaged", "broken")
_EXIT_WAIT_S = 10  # how long FFmpeg may take to exit once its output has ended
# How an input ends early (a cut file, a dropped connection): FFmpeg stops reading there, so it is
# the end of what was decoded (see the pipeline's truncation warning), not a damaged span.
_END_OF_INPUT = re.compile(r"Error during demuxing|Input/output error|Stream ends prematurely|partial file|"
                           r"File ended prematurely", re.IGNORECASE)
# The closing summary: counts ("0 decode errors"), the input's name (which may hold any word), the
# error rate of errors already counted.
_STATISTICS = re.compile(r"packets read|decode errors;|frames decoded|(?:Input|Output) (?:file|stream) #|Total:|"
                         r"Decode error rate")


def is_error_line(line: str, component: bool | None = None) -> bool:
    """An FFmpeg complaint about the input: a component's log line (``[h264 @ 0x…]``, or
    ``component``: a message known to be one's) with an error word. Other unprefixed lines are the
    input's description, whose metadata (a title) may hold any word."""
    component = line.startswith("[") if component is None else component
    return (component and any(word in line.lower() for word in _ERROR_WORDS)
            and _STATISTICS.search(line) is None)


def scaled_size(band: Band, scale: float) -> tuple[int, int]:
    """Even width/height after scaling (some pixel formats and encoders want even sizes)."""
    return max(2, int(band.width * scale) // 2 * 2), max(2, int(band.height * scale) // 2 * 2)


def _filter_graph(request: DecodeRequest, proxy: str | None):
    stream = ffmpeg.input(ffmpeg_input(request.path), **_input_options(request, proxy)).video
    if request.select:
        stream = stream.filter("select", request.select)
    elif request.sample_fps:
        # Keep real frames (and their real PTS) at most every 1/fps s instead of the fps filter,
        # which would retime frames onto a grid.
        step = 1.0 / request.sample_fps
        stream = stream.filter("select", f"isnan(prev_selected_t)+gte(t-prev_selected_t,{step * 0.95:.6f})")
    for x, y, w, h in request.blackout:
        stream = stream.filter("drawbox", x=x, y=y, w=w, h=h, color="black", t="fill")
    crops = []
    parts = stream.split() if len(request.bands) > 1 else None
    widths = [scaled_size(b, request.scale)[0] for b in request.bands]
    for i, band in enumerate(request.bands):
        part = parts[i] if parts is not None else stream
        w, h = scaled_size(band, request.scale)
        part = part.crop(band.x, band.y, band.width, band.height)
        if (w, h) != (band.width, band.height):
            part = part.filter("scale", w, h, flags="area")
        if w < max(widths):
            part = part.filter("pad", max(widths), h, 0, 0)
        crops.append(part)
    stacked = crops[0] if len(crops) == 1 else ffmpeg.filter(crops, "vstack", inputs=len(crops))
    stacked = stacked.filter("format", "yuv444p" if request.mask_plane else "gray")
    return stacked.filter("showinfo", **_showinfo_options())


def _output_format(request: DecodeRequest) -> tuple[str, int]:
    """The raw pixel format FFmpeg writes and its planes: with a mask plane, all three planes."""
    return ("yuv444p", 3) if request.mask_plane else ("gray", 1)


def _mask_plane(yuv: np.ndarray, plane: str) -> np.ndarray:
    """One plane of a (3, h, w) crop, inverted for "-u"/"-v" (by OpenCV: ``255 - chroma`` in
    NumPy costs several times as much, on every frame)."""
    chroma = yuv["yuv".index(plane[-1])]
    return cv2.bitwise_not(chroma) if plane.startswith("-") else chroma


def yuv_to_bgr(yuv: np.ndarray) -> np.ndarray:
    """A (h, w, 3) Y, U, V picture in OpenCV's BGR order (what the OCR engines take)."""
    return cv2.cvtColor(np.ascontiguousarray(yuv[..., [0, 2, 1]]), cv2.COLOR_YCrCb2BGR)


@lru_cache(maxsize=1)
def _showinfo_options() -> dict:
    """Only the PTS is needed from ``showinfo``: by default it also checksums and averages every
    frame, over 10 % of the decoding's own CPU time at 720p. FFmpeg before 5.0 has no such switch."""
    help_text = subprocess.run([ffmpeg_exe(), "-hide_banner", "-h", "filter=showinfo"], capture_output=True,
                               text=True, errors="replace", stdin=subprocess.DEVNULL).stdout
    return {"checksum": 0} if "checksum" in help_text else {}


def _input_options(request: DecodeRequest, proxy: str | None) -> dict:
    options: dict = input_options(request.path, proxy)
    if request.keyframes_only:
        options["skip_frame"] = "nokey"
    elif request.reference_frames_only:
        options["skip_frame"] = "noref"
    if request.start > 0:
        options["ss"] = f"{request.start:.6f}"
    if request.end is not None:
        options["t"] = f"{max(0.0, request.end - request.start):.6f}"
    return options


def build_command(request: DecodeRequest, proxy: str | None = None) -> list[str]:
    """``proxy``: the vetting proxy an HTTP(S) input's requests go through (``netguard``)."""
    out = _filter_graph(request, proxy).output("pipe:", format="rawvideo", pix_fmt=_output_format(request)[0],
                                               fps_mode="passthrough")
    return out.global_args("-nostdin", "-hide_banner", "-loglevel", "verbose").compile(cmd=ffmpeg_exe())


def glued_message(showinfo_line: str) -> str:
    """What another component said inside a showinfo line, as a log line of its own ("" if
    nothing). FFmpeg's demuxer, decoder and filter threads log independently and showinfo writes a
    frame's line in several calls, so a message from another thread (a cut file's "File ended
    prematurely", a decoder's error) can land at the end of a part of it, without its own
    ``[component @ 0x…]`` prefix: under load, one decode in fifteen of a cut file."""
    own = _SHOWINFO_OWN_TEXT.match(showinfo_line, showinfo_line.find("]") + 1)
    return showinfo_line[own.end():].strip()


def _drain_stderr(stream, pts_queue: "queue.Queue[float | None]", errors: deque, damage: DamageTracker,
                  start: float, report: DecodeReport) -> None:
    time_base = Fraction(1, 1)
    # The progress line ends with a carriage return, and the next line follows it.
    for line in (piece.strip() for raw in stream for piece in raw.decode("utf-8", "replace").splitlines()):
        # (text, said by a component): unprefixed lines describe the input, whose metadata may hold
        # any word. A frame's line may follow another thread's message left without its newline.
        messages = [(line, line.startswith("["))]
        if (at := line.find("[Parsed_showinfo")) >= 0:
            showinfo = line[at:]
            if (match := _PTS.search(showinfo)) is not None:
                pts = float(int(match.group(1)) * time_base)
                damage.frame(start + pts, match.group(2) == "1")
                pts_queue.put(pts)
            elif (match := _TIME_BASE.search(showinfo)) is not None and int(match.group(2)):
                time_base = Fraction(int(match.group(1)), int(match.group(2)))
            before = line[:at].strip()
            messages = [(before, before.startswith("[")), (glued_message(showinfo), True)]
        for message, component in messages:
            if component and _END_OF_INPUT.search(message) is not None:
                errors.append(message)
                report.ended_early = True
            elif is_error_line(message, component):
                errors.append(message)
                damage.error(message)
    pts_queue.put(None)


def decode_frames(request: DecodeRequest, report: DecodeReport | None = None) -> Iterator[Frame]:
    """Yield frames in presentation order; stops early (and cleanly) if the consumer stops."""
    sizes = [scaled_size(b, request.scale) for b in request.bands]
    width = max(w for w, _ in sizes)
    heights = [h for _, h in sizes]
    planes = _output_format(request)[1]
    offsets = np.cumsum([0, *heights])
    for pts, image in _decoded(request, partial(build_command, request), (planes, sum(heights), width), report):
        crops = [image[:, offsets[i]:offsets[i + 1], :sizes[i][0]] for i in range(len(sizes))]
        if request.mask_plane:
            yield Frame(pts=pts, bands=tuple(_interleaved(c) for c in crops),
                        mask_bands=tuple(_mask_plane(c, request.mask_plane) for c in crops))
        else:
            yield Frame(pts=pts, bands=tuple(c[0] for c in crops))


def _interleaved(planes: np.ndarray) -> np.ndarray:
    """(3, h, w) planes as one (h, w, 3) picture; OpenCV's merge does it several times faster
    than ``np.stack`` along the last axis, which dominated the Python side of a colour decode."""
    return cv2.merge(tuple(planes))


@dataclass(frozen=True)
class Look:
    """One way to see the whole of each decoded frame: scaled by ``scale``, grey (FFmpeg's grey,
    full range), or with ``colour`` its raw Y, U and V planes as three channels."""

    scale: float
    colour: bool = False


def _looks_graph(request: DecodeRequest, looks: Sequence[Look], proxy: str | None):
    """Every look from one decode: the decoded frames split, each copy scaled and converted as a
    decode of that look alone would (the same filters, so the same pixels), colour looks cut into
    their planes, all of them stacked as one grey picture."""
    whole = request.bands[0]
    stream = ffmpeg.input(ffmpeg_input(request.path), **_input_options(request, proxy)).video
    copies = stream.split() if len(looks) > 1 else None
    width = max(scaled_size(whole, look.scale)[0] for look in looks)
    rows = []
    for index, look in enumerate(looks):
        part = (copies[index] if copies is not None else stream).crop(whole.x, whole.y, whole.width, whole.height)
        w, h = scaled_size(whole, look.scale)
        if (w, h) != (whole.width, whole.height):
            part = part.filter("scale", w, h, flags="area")
        if look.colour:
            planes = part.filter("format", "yuv444p").filter_multi_output("extractplanes", "y+u+v")
            parts = [planes.stream(i) for i in range(3)]
        else:
            parts = [part.filter("format", "gray")]
        rows.extend(p.filter("pad", width, h, 0, 0) if w < width else p for p in parts)
    stacked = rows[0] if len(rows) == 1 else ffmpeg.filter(rows, "vstack", inputs=len(rows))
    return stacked.filter("format", "gray").filter("showinfo", **_showinfo_options())


def _looks_command(request: DecodeRequest, looks: Sequence[Look], proxy: str | None = None) -> list[str]:
    out = _looks_graph(request, looks, proxy).output("pipe:", format="rawvideo", pix_fmt="gray",
                                                     fps_mode="passthrough")
    return out.global_args("-nostdin", "-hide_banner", "-loglevel", "verbose").compile(cmd=ffmpeg_exe())


def decode_looks(request: DecodeRequest, looks: Sequence[Look],
                 report: DecodeReport | None = None) -> Iterator[tuple[float, tuple[np.ndarray, ...]]]:
    """(pts, one picture per look) for each frame of ``request``'s range, its first band being
    the whole picture: several looks at each frame from one decode (the region and appearance
    pre-scans want the same keyframes at two sizes, grey and in colour)."""
    sizes = [scaled_size(request.bands[0], look.scale) for look in looks]
    heights = [h * (3 if look.colour else 1) for look, (_, h) in zip(looks, sizes)]
    offsets = np.cumsum([0, *heights])
    shape = (1, int(offsets[-1]), max(w for w, _ in sizes))
    for pts, image in _decoded(request, partial(_looks_command, request, looks), shape, report):
        pictures = []
        for (w, h), look, top in zip(sizes, looks, offsets):
            rows = image[0, top:top + (3 if look.colour else 1) * h, :w]
            pictures.append(_interleaved(rows.reshape(3, h, w)) if look.colour else rows)
        yield pts, tuple(pictures)


def _decoded(request: DecodeRequest, command: Callable[[str | None], list[str]], shape: tuple[int, int, int],
             report: DecodeReport | None) -> Iterator[tuple[float, np.ndarray]]:
    """Run FFmpeg's ``command(proxy)`` and yield (pts, picture of ``shape``: planes, rows,
    columns) for each frame it writes, filling in ``report``."""
    report = report if report is not None else DecodeReport()
    frame_bytes = shape[0] * shape[1] * shape[2]
    pts_queue: queue.Queue[float | None] = queue.Queue()
    errors: deque[str] = deque(maxlen=20)
    damage = DamageTracker(request.start, request.frame_duration)
    # Its own session: Ctrl-C on a terminal reaches only us, and we stop FFmpeg (below), so an
    # interrupted run is never mistaken for a truncated file.
    guard = GuardProxy() if needs_proxy(request.path) else None
    process = subprocess.Popen(command(guard.url if guard else None), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, bufsize=frame_bytes * 4,
                               start_new_session=True, env=ffmpeg_environment())
    reader = threading.Thread(target=_drain_stderr, args=(process.stderr, pts_queue, errors, damage, request.start, report),
                              daemon=True)
    reader.start()
    output_ended = False
    try:
        while True:
            data = process.stdout.read(frame_bytes)
            if len(data) < frame_bytes:
                break
            pts = pts_queue.get(timeout=30)
            if pts is None:
                break
            report.frames += 1
            report.last_pts = request.start + pts
            yield request.start + pts, np.frombuffer(data, np.uint8).reshape(shape)
        output_ended = True  # not when the consumer stopped early or reading failed
    finally:
        if output_ended:
            # Its output is done but its last complaints (a cut file's "File ended prematurely")
            # may still be on their way to stderr: killed now, a damaged file would pass as whole.
            try:
                process.wait(timeout=_EXIT_WAIT_S)
            except subprocess.TimeoutExpired:
                pass
        if process.poll() is None:
            process.kill()
        process.wait()
        reader.join(timeout=5)
        report.returncode = process.returncode
        report.errors = list(errors)
        if not reader.is_alive():
            report.damaged = damage.finish()
        if guard is not None:
            guard.close()
            report.refused = guard.refused
