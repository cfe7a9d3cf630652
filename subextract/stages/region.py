"""Find where subtitles live: text-line statistics over a sparse keyframe pre-scan.

Subtitles are short-lived text that recurs at one height, horizontally centred; a channel logo or
watermark is text that stays put in most frames; scene text is neither centred nor recurring.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import cv2
import numpy as np

from subextract.config import RegionSettings
from subextract.errors import SubextractError
from subextract.schema import Band, VideoInfo
from subextract.stages.appearance import LineStrip
from subextract.stages.sample import DecodeRequest, Look, decode_looks

logger = logging.getLogger(__name__)

# A subtitle line is at least this many line heights wide (a glyph is about as wide as the line is
# high): a narrower box the detector returns is mostly a glyph-like thing of the picture.
MIN_LINE_GLYPHS = 2

# (top, bottom, median line height) of each zone where subtitle lines recur, in picture pixels.
Rows = list[tuple[float, float, float]]

_BOX_PART = r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(%?)\s*"
_BOX = re.compile(rf"^{_BOX_PART},{_BOX_PART},{_BOX_PART},{_BOX_PART}$")
_GLYPH_WINDOW_ENERGY = 0.25  # glyph windows with less edge than this share of the mean window's are gaps between words


@dataclass(frozen=True)
class UserBox:
    """``--region X,Y,W,H``: in pixels, or in shares of the picture (``0,0.8,1,0.2`` or
    ``0%,80%,100%,20%``), so that one box serves videos of every size."""

    x: float
    y: float
    width: float
    height: float
    relative: bool

    def in_pixels(self, width: int, height: int) -> tuple[int, int, int, int]:
        if not self.relative:
            return int(self.x), int(self.y), int(self.width), int(self.height)
        x0, y0 = round(self.x * width), round(self.y * height)
        return x0, y0, round((self.x + self.width) * width) - x0, round((self.y + self.height) * height) - y0


@dataclass(frozen=True)
class TextBox:
    """A detected text line in a pre-scan frame, in displayed-picture pixels."""

    frame: int
    x0: float
    y0: float
    x1: float
    y1: float
    second_look: bool = False  # found only by the pre-scan's second look (_second_look)

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    @property
    def centre_x(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def centre_y(self) -> float:
        return (self.y0 + self.y1) / 2

    @property
    def glyph_sized(self) -> bool:
        """Narrower than a line (MIN_LINE_GLYPHS line heights)."""
        return self.x1 - self.x0 < MIN_LINE_GLYPHS * self.height

    def iou(self, other: "TextBox") -> float:
        ix = max(0.0, min(self.x1, other.x1) - max(self.x0, other.x0))
        iy = max(0.0, min(self.y1, other.y1) - max(self.y0, other.y0))
        inter = ix * iy
        union = (self.x1 - self.x0) * self.height + (other.x1 - other.x0) * other.height - inter
        return inter / union if union > 0 else 0.0


def _edge_band(info: VideoInfo, settings: RegionSettings, where: str) -> Band:
    height = max(16, int(info.height * settings.fallback_share) // 2 * 2)
    y = info.height - height if where == "bottom" else 0
    return Band(0, y, info.width // 2 * 2, height, where)


def user_box(mode: str, label: str = "--region") -> UserBox | None:
    """The X,Y,W,H box a region ``mode`` names, None for ``auto``, ``bottom`` and ``top``;
    anything else is refused (``label`` names the option in the message)."""
    if mode in ("auto", "bottom", "top"):
        return None
    match = _BOX.match(mode)
    if not match:
        raise SubextractError(f"{label} {mode!r}: expected auto, bottom, top or X,Y,W,H (pixels, fractions such as "
                              "0,0.8,1,0.2, or percentages such as 0%,80%,100%,20%)")
    numbers, percents = [float(v) for v in match.groups()[::2]], [bool(p) for p in match.groups()[1::2]]
    if any(percents) and not all(percents):
        raise SubextractError(f"{label} {mode!r}: give all four values as percentages or none")
    if all(percents):
        numbers = [n / 100 for n in numbers]
    relative = all(percents) or any("." in v for v in match.groups()[::2])
    if relative and (any(n > 1 for n in numbers) or numbers[0] + numbers[2] > 1 + 1e-9
                     or numbers[1] + numbers[3] > 1 + 1e-9):
        raise SubextractError(f"{label} {mode!r}: a box in shares of the picture must lie inside it (each value "
                              "0-1 or 0%-100%, X+W and Y+H at most 1)")
    return UserBox(*numbers, relative=relative)


def fixed_bands(mode: str, info: VideoInfo, settings: RegionSettings) -> list[Band] | None:
    """Bands the user chose (``bottom``, ``top``, ``X,Y,W,H``); None for ``auto``."""
    box = user_box(mode)
    if mode == "auto":
        return None
    if box is None:
        return [_edge_band(info, settings, mode)]
    x, y, w, h = box.in_pixels(info.width, info.height)
    if w < 8 or h < 8 or x + w > info.width or y + h > info.height:
        raise SubextractError(f"--region {mode}: box must lie inside the {info.width}x{info.height} picture")
    return [Band(x, y, w // 2 * 2, h // 2 * 2, "user")]


@dataclass(frozen=True)
class PrescanFrames:
    """The pre-scan's keyframes, each seen every way the pre-scans need it (one decode)."""

    detector: list[np.ndarray]  # grey, at the text detector's input size
    grey: list[np.ndarray] = field(default_factory=list)  # grey at the segmenter's analysis size
    colour: list[np.ndarray] = field(default_factory=list)  # ... its Y, U and V planes as three channels
    analysis_scale: float | None = None  # the analysis size over the picture's; None: not decoded
    retry: list[np.ndarray] = field(default_factory=list)  # grey at prescan_retry_side, for a second look
    retry_scale: float | None = None  # ... that size over the picture's; None: no second look


def prescan_frames(info: VideoInfo, settings: RegionSettings, start: float, end: float | None,
                   analysis_scale: float | None = None) -> PrescanFrames:
    """Up to ``prescan_frames`` keyframes spread over the range (only keyframes are decoded:
    cheap), at the detector's input size and, with ``analysis_scale``, also at that scale, grey
    and in colour: one decode gives every look, pixel for pixel as separate decodes would."""
    scale = min(1.0, settings.prescan_det_side / max(info.width, info.height))
    retry_scale = min(1.0, settings.prescan_retry_side / max(info.width, info.height))
    retry_scale = retry_scale if retry_scale > scale else None
    looks = [Look(scale)] + ([Look(analysis_scale), Look(analysis_scale, colour=True)] if analysis_scale else []) \
        + ([Look(retry_scale)] if retry_scale else [])
    whole = Band(0, 0, info.width, info.height, "frame")
    if end is None and not info.duration:
        # A live stream has no end to spread the looks over: watch the time 8 looks take, then decide.
        end = start + 8 * settings.prescan_interval
    request = DecodeRequest(info.path, [whole], start=start, end=end, keyframes_only=True)
    span = max(1e-3, (end or info.duration or 1.0) - start)
    # Short videos need fewer looks: one per prescan_interval seconds, at least 8.
    buckets = max(8, min(settings.prescan_frames, round(span / settings.prescan_interval)))
    picked: dict[int, tuple[np.ndarray, ...]] = {}
    for pts, pictures in decode_looks(request, looks):
        bucket = min(buckets - 1, int((pts - start) / span * buckets))
        if bucket not in picked:
            picked[bucket] = tuple(picture.copy() for picture in pictures)
    chosen = [picked[k] for k in sorted(picked)]
    retry = [pictures[-1] for pictures in chosen] if retry_scale else []
    if not analysis_scale:
        return PrescanFrames([pictures[0] for pictures in chosen], retry=retry, retry_scale=retry_scale)
    return PrescanFrames([pictures[0] for pictures in chosen], [pictures[1] for pictures in chosen],
                         [pictures[2] for pictures in chosen], analysis_scale, retry, retry_scale)


def prescan_detector_side(settings: RegionSettings) -> int:
    """The largest picture side the pre-scan's text detector is given (its second look's)."""
    return max(settings.prescan_det_side, settings.prescan_retry_side)


def detect_boxes(frames: Sequence[np.ndarray], detector, scale: float, max_line_height: float,
                 indices: Sequence[int] | None = None) -> list[TextBox]:
    """Line boxes in each frame (``indices``: the frames' numbers, default their order); shapes no
    text line has (tall blobs the detector sometimes returns on cartoons or textures) are dropped.
    Frames are detected on all cores at once (the detector releases the GIL), as nothing else runs yet."""
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        detected = list(pool.map(detector, frames))
    boxes = []
    for index, frame, found in zip(indices if indices is not None else range(len(frames)), frames, detected):
        frame_height = frame.shape[0] / scale
        for x0, y0, x1, y1 in found:
            box = TextBox(index, x0 / scale, y0 / scale, x1 / scale, y1 / scale)
            if box.height <= max_line_height * frame_height and box.x1 - box.x0 >= 0.8 * box.height:
                boxes.append(box)
    return boxes


def _crop(frame: np.ndarray, box: TextBox, scale: float) -> np.ndarray:
    x0, y0 = int(box.x0 * scale), int(box.y0 * scale)
    return frame[y0:max(y0 + 2, int(box.y1 * scale)), x0:max(x0 + 2, int(box.x1 * scale))]


def _edges(frame: np.ndarray, box: TextBox, scale: float) -> np.ndarray:
    crop = _crop(frame, box, scale).astype(np.float32)
    return np.hypot(cv2.Sobel(crop, cv2.CV_32F, 1, 0), cv2.Sobel(crop, cv2.CV_32F, 0, 1))


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of two edge maps; 0 where either has no edge (a flat picture shows no
    glyphs to be the same)."""
    a, b = a - a.mean(), b - b.mean()
    a_energy, b_energy = float((a * a).sum()), float((b * b).sum())
    if a_energy == 0 or b_energy == 0:
        return 0.0
    return float((a * b).sum()) / float(np.sqrt(a_energy * b_energy))


def _same_picture(a: np.ndarray, b: np.ndarray, line_height: float, settings: RegionSettings) -> bool:
    """Whether two crops show the same glyphs: their edge maps correlate as a whole, and so does
    every window half a line high and wide that holds edges. Two subtitles of one size at one
    place do not match. Nor do two lines that differ in a character or two (a counter, a name
    before each line), which the whole box forgives: over the changed characters a window
    correlates 0.09-0.85 (measured on numbered back-to-back cues, Latin and Chinese) while the
    line's other windows correlate ~0.99. A translucent logo over changing footage takes the
    footage's edges into every window alike (0.76-0.88 each, measured on a 40 % logo over
    video): a window is a changed glyph where it falls below ``same_glyphs`` and also
    ``glyph_drop`` below the pair's typical window, which must itself reach ``same_edges``."""
    if _correlation(a, b) < settings.same_edges:
        return False
    width = max(3, round(line_height / 2))
    starts = range(0, max(1, a.shape[1] - width + 1), max(1, width // 2))
    energy = [float(np.abs(a[:, x:x + width]).sum() + np.abs(b[:, x:x + width]).sum()) for x in starts]
    # A window over the space between words holds only compression noise, which correlates at random.
    floor = _GLYPH_WINDOW_ENERGY * float(np.mean(energy)) if energy else 0.0
    windows = [_correlation(a[:, x:x + width], b[:, x:x + width]) for x, held in zip(starts, energy) if held >= floor]
    if not windows:
        return True
    typical = float(np.median(windows))
    least = min(settings.same_glyphs, typical - settings.glyph_drop)
    return typical >= settings.same_edges and min(windows) >= least


def _glyph_pixels(crop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(glyph, ring): the pixels of a crop's strokes (its white top-hat, Otsu's split of it, with
    a kernel half the line high, wider than any stroke) and the pixels just around them."""
    size = max(3, crop.shape[0] // 2 | 1)
    lift = cv2.morphologyEx(crop, cv2.MORPH_TOPHAT, cv2.getStructuringElement(cv2.MORPH_RECT, (size, size)))
    _, glyph = cv2.threshold(lift, 0, 1, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    ring = cv2.dilate(glyph, np.ones((3, 3), np.uint8)) & (1 - glyph)
    return glyph.astype(bool), ring.astype(bool)


def _margin(crop: np.ndarray, glyph: np.ndarray, ring: np.ndarray) -> float:
    """How far the glyph pixels stand above the pixels around them, on average."""
    if not glyph.any() or not ring.any():
        return 0.0
    return float(crop[glyph].mean()) - float(crop[ring].mean())


def split_static(boxes: Sequence[TextBox], frames: Sequence[np.ndarray], scale: float,
                 settings: RegionSettings, fine: Sequence[np.ndarray] = (),
                 fine_scale: float | None = None) -> tuple[list[TextBox], list[TextBox]]:
    """(static, moving): text showing the same glyphs at the same place in most frames is a logo
    or watermark. Where a frame's detector saw a line at the box's place, its glyphs must be the
    box's (``_same_picture``); where it saw none overlapping the box, the box's strokes must still
    stand out there by ``static_strokes`` of their margin in the box's own frame (a translucent
    logo over a bright picture escapes the detector, not the eye; where a subtitle has gone, its
    strokes' pixels stand no higher than those around them). A moving box whose glyphs an earlier
    frame showed at the same place is left out of ``moving``: one sign seen twice must not count
    as two subtitles recurring at its height. Glyphs are compared in ``fine`` (the same frames at
    ``fine_scale``, larger than the detector's) where given: one changed character is a few
    pixels at the detector's size."""
    pictures, picture_scale = (fine, fine_scale) if fine and fine_scale else (frames, scale)
    static, moving = [], []
    for box in boxes:
        # Each other frame's largest overlap with the box: over 0.6 the detector saw a line at its
        # place, 0 it saw none there.
        overlap = {frame: 0.0 for frame in range(len(frames)) if frame != box.frame}
        for other in boxes:
            if other.frame != box.frame:
                overlap[other.frame] = max(overlap[other.frame], box.iou(other))
        edges = _edges(pictures[box.frame], box, picture_scale)
        same = {box.frame} | {frame for frame, iou in overlap.items()
                              if iou > 0.6 and _same_picture(edges, _edges(pictures[frame], box, picture_scale),
                                                             box.height * picture_scale, settings)}
        unseen = [frame for frame, iou in overlap.items() if iou == 0]
        is_static = False
        if len(frames) >= 3 and len(same) + len(unseen) >= settings.static_share * len(frames):
            own = _crop(pictures[box.frame], box, picture_scale)
            glyph, ring = _glyph_pixels(own)
            margin = _margin(own, glyph, ring)
            least = settings.static_strokes * margin
            shown = {frame for frame in unseen if margin > 0
                     and _margin(_crop(pictures[frame], box, picture_scale), glyph, ring) >= least}
            is_static = len(same | shown) >= settings.static_share * len(frames)
        if is_static:
            static.append(box)
        elif min(same) == box.frame:
            moving.append(box)
    return static, moving


def subtitle_rows(boxes: Sequence[TextBox], info: VideoInfo, settings: RegionSettings) -> Rows:
    """Vertical extents of the zones where centred text recurs, most supported first."""
    centred = [b for b in boxes if abs(b.centre_x - info.width / 2) <= settings.centre_tolerance * info.width]
    zones: list[list[TextBox]] = []
    for box in sorted(centred, key=lambda b: b.centre_y):
        zone = zones[-1] if zones else None
        # Stacked lines of a two-line cue touch each other: a gap under one line height joins them.
        if zone and box.y0 - max(b.y1 for b in zone) < max(b.height for b in zone):
            zone.append(box)
        else:
            zones.append([box])
    # Seen in one keyframe, a zone is a line near the top or bottom: a glyph-sized box seen once is
    # most often a piece of the picture (a crack in sunlit rock made a top band read 50 times).
    supported = [z for z in zones if len({b.frame for b in z}) >= 2
                 or (_near_edge(z, info, settings.edge_zone) and not all(b.glyph_sized for b in z))]
    supported.sort(key=lambda z: -len({b.frame for b in z}))
    if not supported:
        return []
    best = len({b.frame for b in supported[0]})
    return [(min(b.y0 for b in z), max(b.y1 for b in z), float(np.median([b.height for b in z])))
            for z in supported if len({b.frame for b in z}) >= 0.3 * best][:2]


def _near_edge(zone: Sequence[TextBox], info: VideoInfo, edge_zone: float) -> bool:
    centre = float(np.mean([b.centre_y for b in zone]))
    return centre <= edge_zone * info.height or centre >= (1 - edge_zone) * info.height


def bands_from_rows(rows, info: VideoInfo, settings: RegionSettings) -> list[Band]:
    bands = []
    for top, bottom, line_height in rows:
        pad = settings.line_padding * line_height
        label = "bottom" if (top + bottom) / 2 > info.height / 2 else "top"
        # Cues with more lines than the pre-scan saw grow away from the frame edge they sit on; on
        # the edge side the band runs to the edge (a line the detector missed may sit there).
        growth = settings.extra_lines * line_height
        y0 = 0 if label == "top" else max(0, int(top - pad - growth)) // 2 * 2
        y1 = info.height if label == "bottom" else min(info.height, int(bottom + pad + growth + 1))
        bands.append(Band(0, y0, info.width // 2 * 2, max(16, (y1 - y0) // 2 * 2), label))
    return sorted(bands, key=lambda b: b.y)




@dataclass(frozen=True)
class Region:
    bands: list[Band]
    static: list[TextBox]  # logos and watermarks: text that stays put
    lines: list[TextBox]  # the subtitle lines the pre-scan found
    strips: list[LineStrip]  # ... in luma at the detector's size: how they are drawn
    frames: PrescanFrames | None = None  # the pre-scan's keyframes (the appearance reads the lines there)
    warnings: list[str] = field(default_factory=list)  # what the user should know (text blacked out, no subtitle seen)


def subtitle_lines(moving: Sequence[TextBox], rows, info: VideoInfo, settings: RegionSettings) -> list[TextBox]:
    """The centred lines inside the subtitle zones."""
    return [box for box in moving if any(top <= box.centre_y <= bottom for top, bottom, _ in rows)
            and abs(box.centre_x - info.width / 2) <= settings.centre_tolerance * info.width]


def line_strips(lines: Sequence[TextBox], frames: Sequence[np.ndarray], scale: float) -> list[LineStrip]:
    """Each line's rows, half a line height more above and below, across the whole frame: the
    line's own columns and the picture beside it."""
    strips = []
    for box in lines:
        frame = frames[box.frame]
        pad = 0.5 * box.height
        y0, y1 = max(0, int((box.y0 - pad) * scale)), min(frame.shape[0], int((box.y1 + pad) * scale) + 1)
        strips.append((frame[y0:y1], int(box.x0 * scale), int(box.x1 * scale) + 1))
    return strips


def find_bands(info: VideoInfo, settings: RegionSettings, detector: Callable[[], Callable], start: float = 0.0,
               end: float | None = None, analysis_scale: float | None = None) -> Region:
    """The bands, the static boxes inside them and the subtitle lines seen; falls back to the
    bottom band when no text is seen. ``detector()`` gives the text detector once the pre-scan
    frames are decoded (its set-up may still be under way until then). Bands the user chose are
    pre-scanned too: the lines inside them tell how the subtitles are drawn, and a logo inside
    them is blacked out as in the bands found. With ``analysis_scale`` the keyframes are also
    kept at that scale, grey and in colour (``Region.frames``)."""
    fixed = fixed_bands(settings.mode, info, settings)
    prescan = prescan_frames(info, settings, start, end, analysis_scale)
    frames = prescan.detector
    scale = frames[0].shape[1] / info.width if frames else 1.0
    text_detector = detector()
    boxes = detect_boxes(frames, text_detector, scale, settings.max_line_height)
    boxes += _second_look(prescan, {box.frame for box in boxes}, text_detector, settings)
    static, moving = split_static(boxes, frames, scale, settings, prescan.grey, prescan.analysis_scale)
    if fixed is not None:
        lines = [box for box in moving if any(band.y <= box.centre_y <= band.y + band.height
                                               and band.x <= box.centre_x <= band.x + band.width for band in fixed)]
        return Region(fixed, static, lines, line_strips(lines, frames, scale), prescan,
                      _lone_static_text(lines, static, fixed, info, settings, len(frames)))
    band_rows, rows = band_and_line_rows(moving, info, settings)
    bands = bands_from_rows(band_rows, info, settings) if band_rows else [_edge_band(info, settings, "bottom")]
    lines = subtitle_lines(moving, rows, info, settings)
    return Region(bands, static, lines, line_strips(lines, frames, scale), prescan,
                  _lone_static_text(lines, static, bands, info, settings, len(frames)))


def band_and_line_rows(moving: Sequence[TextBox], info: VideoInfo, settings: RegionSettings) -> tuple[Rows, Rows]:
    """(the rows that place the bands, the rows whose lines are the subtitles'). The second look's
    lines teach the appearance, but where the first look saw subtitles they place no band: fainter
    lines (a fade, a half-hidden line) would move its edges. They are subtitle lines where all
    lines' rows say so: the first look's one line of small text at 480p made a row too narrow for
    the others, and the appearance lost one line of five."""
    rows = subtitle_rows(moving, info, settings)
    if not any(box.second_look for box in moving):
        return rows, rows
    return subtitle_rows([box for box in moving if not box.second_look], info, settings) or rows, rows


def _second_look(prescan: PrescanFrames, seen: set[int], detector, settings: RegionSettings) -> list[TextBox]:
    """Line boxes in the keyframes where the detector found none at its first size, found at
    ``prescan_retry_side``, where it found text in at most ``prescan_retry_share`` of them: strokes
    a pixel or two wide at 720p fade out at 480 px (a light Arabic face with a thin outline was
    found in 1 of 7 keyframes at 480, in 6 at 640). Where the first look saw the subtitles, the
    keyframes it saw none in mostly show none: looked at again, they added faint lines of fades
    and half-hidden text, which then taught the text test their style."""
    if not prescan.retry_scale or len(seen) > settings.prescan_retry_share * len(prescan.retry):
        return []
    unseen = [index for index in range(len(prescan.retry)) if index not in seen]
    boxes = [replace(box, second_look=True) for box in detect_boxes(
        [prescan.retry[index] for index in unseen], detector, prescan.retry_scale, settings.max_line_height, unseen)]
    if boxes:
        logger.debug("pre-scan: %d of %d keyframes showed no text at %d px; %d lines found at %d px", len(unseen),
                     len(prescan.retry), settings.prescan_det_side, len(boxes), settings.prescan_retry_side)
    return boxes


def _lone_static_text(lines: Sequence[TextBox], static: Sequence[TextBox], bands: Sequence[Band], info: VideoInfo,
                      settings: RegionSettings, frames: int) -> list[str]:
    """The warning owed when no subtitle line was found and centred text inside the bands was
    blacked out as a logo: that text may have been the subtitles, and nothing else will be read."""
    blacked = [box for box in static if abs(box.centre_x - info.width / 2) <= settings.centre_tolerance * info.width
               and any(box.y1 > band.y and box.y0 < band.y + band.height for band in bands)]
    if lines or not blacked:
        return []
    x0, y0 = min(box.x0 for box in blacked), min(box.y0 for box in blacked)
    x1, y1 = max(box.x1 for box in blacked), max(box.y1 for box in blacked)
    return [f"the only text line the pre-scan found ({x1 - x0:.0f}x{y1 - y0:.0f} at {x0:.0f},{y0:.0f}) showed the "
            f"same glyphs in {len({box.frame for box in blacked})} of its {frames} frames: it was taken for a logo "
            f"or watermark and blacked out, and no subtitle was found; if it is a subtitle, it may be missed"]
