"""The extraction pipeline, ``extract()``: probe → region → appearance → decode → segment → OCR →
align. It wires the stages (each in ``stages/``, their data in ``schema.py``) and owns concurrency.

Decoding runs in FFmpeg's own process and OCR in a worker thread (ONNX Runtime releases the GIL),
so reading frames, segmenting and OCR overlap. Segments are OCR'd as soon as they close; the
worker takes whatever has queued up as one batch, which lets batching engines fill the device.
The embedded engine is set up on a thread of its own while FFmpeg probes and pre-scans, and
the worker tags each reading's language (py3langid loads its model then) while decoding goes on.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace

import numpy as np

from subextract.config import SegmentSettings, Settings, load_settings
from subextract.pipeline.stream import CueCallback, CueStream
from subextract.errors import SubextractError
from subextract.langtags import EVERY_LANGUAGE, reading_language
from subextract.schema import Band, Cue, DamagedSpan, Reading, Segment, VideoInfo
from subextract.stages.align import align
from subextract.stages.appearance import (Appearance, LineStrip, learn_appearance, line_density, settings_for,
                                          smallest_line_strokes)
from subextract.stages.boundary import refine_boundaries
from subextract.stages.crops import CropSaver
from subextract.stages.language import LanguageFilter, detect_language
from subextract.stages.ocr import OcrEngine, OcrFailure, engine_traits, set_up
from subextract.stages.ocr_fixes import fix_common_errors
from subextract.stages.probe import probe
from subextract.stages.region import Region, TextBox, find_bands, line_strips, prescan_detector_side, prescan_frames
from subextract.stages.guard import RecallGuard
from subextract.stages.sample import DecodeReport, DecodeRequest, decode_frames, scaled_size, yuv_to_bgr
from subextract.stages.mask import exact_lost_share, glyph_changed, mask_difference
from subextract.stages.segment import Segmenter

logger = logging.getLogger(__name__)

# (seconds of video done, seconds to do or None when unknown (a live stream), segments so far)
ProgressCallback = Callable[[float, float | None, int], None]
StageCallback = Callable[[str], None]  # what the run is doing now, in words ("probing", ...)


@dataclass
class Stats:
    frames: int = 0
    segments: int = 0
    ocr_calls: int = 0
    guard_calls: int = 0  # text detector calls of the recall guard (stages/guard.py)
    ocr_seconds: float = 0.0  # time spent inside the engine's read_batch: crops/s = ocr_calls / ocr_seconds
    reused_readings: int = 0
    wall_seconds: float = 0.0
    video_seconds: float = 0.0
    lines_read: int = 0  # text lines the engine read in the segments, before --lang kept some
    lines_kept: int = 0
    languages_read: dict[str, int] = field(default_factory=dict)  # language tag → lines read in it

    @property
    def realtime_factor(self) -> float:
        return self.video_seconds / self.wall_seconds if self.wall_seconds > 0 else 0.0

    @property
    def languages_seen(self) -> list[str]:
        """The languages of the lines read, the most read first."""
        return sorted(self.languages_read, key=lambda tag: -self.languages_read[tag])


@dataclass
class ExtractionResult:
    info: VideoInfo
    bands: list[Band]
    cues: list[Cue]
    stats: Stats
    warnings: list[str] = field(default_factory=list)
    complete: bool = True
    error: str | None = None  # what stopped the run early (an OCR engine failure); the cues before it are kept
    damaged: list[DamagedSpan] = field(default_factory=list)  # decode errors: cues overlapping these may be wrong
    lang: str = "all"  # the language asked for

    def metadata(self, video: str | None = None) -> dict:
        """What ``--format json`` says beside the cues: the video, the bands used, run statistics."""
        s = self.stats
        return {"video": video or self.info.path, "duration": self.info.duration, "width": self.info.width,
                "height": self.info.height, "language": self.lang, "languages_seen": s.languages_seen,
                "bands": [dataclasses.asdict(band) for band in self.bands],
                "stats": {"ocr_calls": s.ocr_calls, "guard_calls": s.guard_calls,
                          "ocr_seconds": round(s.ocr_seconds, 3), "segments": s.segments,
                          "frames": s.frames, "wall_seconds": round(s.wall_seconds, 3),
                          "realtime_factor": round(s.realtime_factor, 2), "lines_read": s.lines_read,
                          "lines_kept": s.lines_kept},
                "complete": self.complete, "warnings": self.warnings,
                "damaged": [dataclasses.asdict(span) for span in self.damaged]}

    def to_string(self, format: str = "srt") -> str:
        """The cues as ``format`` (srt, vtt, ass, txt, json, jsonl) would write them."""
        from subextract.stages.write import render

        return render(self.cues, format, self.metadata())

    def save(self, path: str | os.PathLike[str], format: str | None = None) -> None:
        """Write the cues as ``format`` (srt, vtt, ass, txt, json, jsonl; default: from the file's
        extension, else srt), replacing the file atomically."""
        from subextract.stages.write import FORMATS, write_text

        path = os.fspath(path)
        suffix = path.rsplit(".", 1)[-1].lower() if "." in path else ""
        write_text(path, self.to_string(format or (suffix if suffix in FORMATS else "srt")))


_READ = np.zeros((0, 0), np.uint8)  # what a segment's picture becomes once it has been read


class _OcrWorker:
    """Reads queued segments in batches on a background thread; results keyed by submission order."""

    def __init__(self, engine: "Future[OcrEngine]", max_batch: int = 16, second_look: bool = False) -> None:
        self._engine = engine
        self.max_batch = max_batch
        self.second_look = second_look  # the engine reads unsure lines again from the segments' frames
        self.results: dict[int, Reading] = {}
        self.calls = 0
        self.seconds = 0.0
        self.error: BaseException | None = None
        self.on_results: Callable[[], None] | None = None  # told when readings came in (cue streaming)
        self._queue: queue.Queue[tuple[int, Segment] | None] = queue.Queue(maxsize=256)
        self._thread = threading.Thread(target=self._run, name="ocr", daemon=True)
        self._thread.start()

    def submit(self, key: int, segment: Segment) -> None:
        if self.error is None:
            self._queue.put((key, segment))

    def close(self) -> None:
        """Wait for the queued reads; an engine failure stays in ``error`` for the caller."""
        self._queue.put(None)
        self._thread.join()

    def _read(self, engine: OcrEngine, segments: list[Segment]) -> list[Reading]:
        images, lines = [segment.image for segment in segments], [segment.lines for segment in segments]
        if self.second_look:
            return engine.read_batch(images, lines, frames=[segment.frames for segment in segments])
        return engine.read_batch(images, lines)

    def _run(self) -> None:
        try:
            engine = self._engine.result()
        except BaseException as exc:  # the caller raises the set-up failure itself
            self.error = exc
        done = False
        while not done:
            batch = [self._queue.get()]
            while len(batch) < self.max_batch and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            if batch[-1] is None:
                batch.pop()
                done = True
            if not batch or self.error is not None:
                continue
            began = time.perf_counter()
            try:
                readings = self._read(engine, [segment for _, segment in batch])
            except BaseException as exc:  # surfaced to the decode loop by submit()/close()
                self.error = exc
                if isinstance(exc, OcrFailure):  # the engine read part of the batch before failing
                    self.results.update((key, r) for (key, _), r in zip(batch, exc.readings) if r is not None)
                continue
            finally:
                self.seconds += time.perf_counter() - began
            self.calls += len(batch)
            for (key, segment), reading in zip(batch, readings):
                self.results[key] = tag_reading(reading)
                # Segments stay listed until the end for alignment, which needs only their times
                # and masks: dropping the picture keeps memory flat over a long film.
                segment.image, segment.frames = _READ, ()
            if self.on_results is not None:
                self.on_results()


class _ReadingCache:
    """A repeated subtitle (same mask) reuses its earlier reading instead of another OCR call, and
    so does a segment split off the one just before it that keeps the same strokes at the same
    pixels both ways, with no glyph changed (a cut under the subtitle split it; text replaced in
    place keeps few; a line changed in one character keeps all but that one)."""

    def __init__(self, settings: SegmentSettings) -> None:
        self._seen: dict[int, list[tuple[Segment, int, int]]] = {}
        self._latest: dict[int, tuple[Segment, int]] = {}
        self._settings = settings

    def lookup(self, segment: Segment) -> int | None:
        strokes = int(np.count_nonzero(segment.mask))
        s = self._settings
        for earlier, key, earlier_strokes in self._seen.get(segment.band, []):
            if abs(earlier_strokes - strokes) <= s.repeat_stroke_count_share * max(strokes, 1) \
                    and earlier.mask_hash - segment.mask_hash <= s.repeat_hash_bits \
                    and earlier.mask.shape == segment.mask.shape \
                    and mask_difference(earlier.mask, segment.mask) < s.repeat_difference \
                    and not glyph_changed(earlier.mask, segment.mask, s.repeat_glyph_change):
                return key
        latest = self._latest.get(segment.band)
        if latest is not None:
            before, key = latest
            if before.end == segment.start and before.mask.shape == segment.mask.shape \
                    and exact_lost_share(before.mask, segment.mask) <= s.change_threshold \
                    and exact_lost_share(segment.mask, before.mask) <= s.change_threshold \
                    and not glyph_changed(before.mask, segment.mask, s.repeat_glyph_change):
                return key
        return None

    def remember(self, segment: Segment, key: int) -> None:
        self._seen.setdefault(segment.band, []).append((segment, key, int(np.count_nonzero(segment.mask))))

    def follow(self, segment: Segment, key: int) -> None:
        self._latest[segment.band] = (segment, key)


def tag_reading(reading: Reading) -> Reading:
    """Every line gets a language tag (one the engine set, a VLM's own, is kept) and the OCR
    confusions common in that language fixed."""
    tagged = (line if line.language != "und" else replace(line, language=detect_language(line.text))
              for line in reading.lines)
    return Reading(lines=tuple(replace(line, text=fix_common_errors(line.text, line.language)) for line in tagged))


def language_filter(lang: str, band_count: int) -> Callable[[int, Reading], Reading]:
    """Readings as alignment takes them, given in each band's time order (``(band, reading)``,
    each reading once): lines tagged with their language (the worker did that already unless
    the engine failed part-way), those ``--lang`` does not keep dropped. Whether a Latin line of
    a Chinese video is kept depends on what its band showed before (``LanguageFilter``)."""
    filters = [LanguageFilter(lang) for _ in range(band_count)]

    def prepare(band: int, reading: Reading) -> Reading:
        return Reading(lines=filters[band].keep(tag_reading(reading).lines))

    return prepare


def prepared_readings(segments: Sequence[tuple[Segment, int]], readings: Mapping[int, Reading], lang: str,
                      band_count: int) -> dict[int, Reading]:
    """``language_filter``'s reading for each key of ``segments`` (in the order the decode loop
    accepted them, each band's in time order) that was read."""
    prepare = language_filter(lang, band_count)
    prepared: dict[int, Reading] = {}
    for segment, key in segments:
        if key in readings and key not in prepared:
            prepared[key] = prepare(segment.band, readings[key])
    return prepared


def _band_blackouts(static: list[TextBox], bands: list[Band]) -> list[tuple[int, int, int, int]]:
    """Static text boxes (logos, watermarks) that overlap a band, padded, in picture pixels."""
    boxes = []
    for box in static:
        if any(box.y1 > band.y and box.y0 < band.y + band.height for band in bands):
            pad = 0.2 * box.height
            x0, y0 = max(0, int(box.x0 - pad)), max(0, int(box.y0 - pad))
            boxes.append((x0, y0, int(box.x1 + pad) - x0 + 1, int(box.y1 + pad) - y0 + 1))
    return boxes


def _engine_future(engine: OcrEngine | None, settings: Settings) -> Future:
    """The OCR engine, being set up: segments queue for it meanwhile, so only the first read
    waits for the engine, never the decoding."""
    if engine is None:
        return set_up(settings.ocr)
    future: Future = Future()
    future.set_result(engine)
    return future


@dataclass
class VideoScan:
    """A video before any subtitle is read: what it is, where its subtitles are and how it is
    decoded for them (the first half of the split level's stage A)."""

    video: str
    info: VideoInfo
    start: float
    end: float | None
    bands: list[Band]
    request: DecodeRequest
    segment_settings: SegmentSettings
    warnings: list[str] = field(default_factory=list)  # the region search's, for the result
    line_height: float | None = None  # the subtitle lines' median height the pre-scan saw (picture pixels)


@dataclass
class SegmentedVideo:
    """Every segment of a video, each with the key of the reading it takes: a repeated subtitle
    has the key of its first showing, so one OCR read serves every showing."""

    scan: VideoScan
    segments: list[tuple[Segment, int]]
    report: DecodeReport
    last_pts: float
    guard_calls: int = 0  # text detector calls of the recall guard

    def first_showings(self) -> list[tuple[Segment, int]]:
        """The segments that need a read (the picture of the others was dropped)."""
        return [(segment, key) for index, (segment, key) in enumerate(self.segments) if key == index]


# (segment, its reading's key, True for a first showing that needs a read): called before a
# repeat's picture is dropped
SegmentCallback = Callable[[Segment, int, bool], None]
# (frame time, the segments so far, each band's horizon: the time up to which its segments are
# final) after each decoded frame → False to stop decoding
FrameCallback = Callable[[float, list[tuple[Segment, int]], list[float]], bool]


def scan_video(video: str, settings: Settings, start: float = 0.0, end: float | None = None, *,
               detector: Callable[[], object] | None = None,
               on_stage: StageCallback | None = None) -> VideoScan:
    """Probe, find the subtitle band, learn the subtitles' appearance and plan the decode.
    ``detector`` gives the text detector of the region pre-scan (default: RapidOCR's own models)."""
    stage = on_stage or (lambda _name: None)
    detector = detector or _standalone_detector(settings, prescan_detector_side(settings.region))
    stage("probing")
    info = probe(video)
    start, end = _checked_range(info, start, end)
    stage("finding the subtitle band" if settings.region.mode == "auto" else "starting")
    settings = replace(settings, segment=replace(settings.segment,
                                                 analysis_width=_analysis_width(settings.segment, info.width)))
    region = find_bands(info, settings.region, detector, start, end,
                        analysis_scale=min(1.0, settings.segment.analysis_width / info.width))
    bands, static = region.bands, region.static
    strips, strip_scale = _strips_by_plane(region)
    glyph_sized = [box.glyph_sized for box in region.lines]
    appearance = learn_appearance(strips, settings.segment, glyph_sized)
    finer = _finer_width(settings.segment, info.width)
    thin = finer is not None and _thin_lines(strips, appearance, settings.segment)
    if finer is not None and (thin or (appearance is not None and not appearance.outlined)):
        # The same keyframes decoded again at the finer size: what the appearance and the smallest
        # line's strokes are measured on must be what the segmenter will see.
        fine_settings = replace(settings, segment=replace(settings.segment, analysis_width=finer))
        fine_region = replace(region, frames=prescan_frames(info, settings.region, start, end,
                                                            analysis_scale=min(1.0, finer / info.width)))
        fine_strips, fine_scale = _strips_by_plane(fine_region)
        fine_appearance = learn_appearance(fine_strips, fine_settings.segment, glyph_sized)
        # An outline drawn 2 px wide at 720p is a pixel at 640 px, blended into a bright picture
        # behind it (light grass): seen there as plain text, the video lost a whole cue to the
        # grass's strokes; at the finer size the outline shows.
        outline = fine_appearance is not None and fine_appearance.outlined
        if thin or outline:
            logger.info("subtitle lines %s at %d px: analysed at %d px", "drawn thinner than a pixel" if thin
                        else "outlined only finer than a pixel", settings.segment.analysis_width, finer)
            settings, region, strips, strip_scale, appearance = \
                fine_settings, fine_region, fine_strips, fine_scale, fine_appearance
    logger.info("subtitle bands: %s; static text blacked out: %d boxes", ", ".join(
        f"{b.label} {b.x},{b.y} {b.width}x{b.height}" for b in bands), len(static))
    logger.info("subtitle appearance: %s", appearance.describe() if appearance is not None
                else "not learned (no subtitle line found in the pre-scan): the preset's settings")
    scale = min(1.0, settings.region.max_width / max(b.width for b in bands))
    request = DecodeRequest(video, bands, scale=scale, start=start, end=end, sample_fps=settings.sample.fps,
                            reference_frames_only=settings.sample.reference_frames_only,
                            blackout=_band_blackouts(static, bands),
                            mask_plane=appearance.plane if appearance is not None and appearance.decoded_in_colour
                            else None,
                            frame_duration=1.0 / settings.sample.fps if settings.sample.fps else info.frame_duration)
    plane_strips = strips.get(appearance.plane if appearance is not None else "y", [])
    styled = settings_for(appearance, settings.segment)
    segment_settings = _with_line_strokes(styled, _bar_setting_strips(plane_strips, region.lines, styled),
                                          strip_scale, bands, scale)
    # Sampled frames are too far apart to follow a fade (the boundary refinement snaps those cues),
    # and a fade is measured on the OCR picture, which is not in the plane of a chroma mask.
    if settings.sample.fps or request.mask_plane:
        segment_settings = replace(segment_settings, fade_frames=0)
    line_height = float(np.median([box.height for box in region.lines])) if region.lines else None
    return VideoScan(video, info, start, end, bands, request, segment_settings, region.warnings, line_height)


def _analysis_width(settings: SegmentSettings, picture_width: int) -> int:
    """``analysis_width``, or the picture's width over ``max_analysis_downscale`` where that is
    wider: an outline or shadow drawn in the picture's own pixels (2-3 px whatever its size) is
    gone from a 4K band scaled to 640 px, a sixth of it."""
    return max(settings.analysis_width, math.ceil(picture_width / settings.max_analysis_downscale))


def _finer_width(settings: SegmentSettings, picture_width: int) -> int | None:
    """``fine_analysis_factor`` times the analysis width, at most the picture's; None where that is
    no finer."""
    width = min(picture_width, round(settings.analysis_width * settings.fine_analysis_factor))
    return width if width > settings.analysis_width else None


def _thin_lines(strips: Mapping[str, Sequence[LineStrip]], appearance: Appearance | None,
                settings: SegmentSettings) -> bool:
    """Whether the pre-scan's lines, in the text test this video gets, fill less than
    ``thin_line_density`` of their boxes at the analysis size: thin strokes (a Ming serif's
    hairlines at 1080p, a third of the way down) leave too few pixels there for the segmenter to
    see them as a text line; or whether none of them shows a stroke there at all (a light Arabic
    face outlined at 720p: KacstOffice's lines fell under the test's contrast and the video was
    read with 59 stroke pixels for its smallest line; with no stroke in any line no appearance is
    learned at all)."""
    lines = strips.get(appearance.plane if appearance is not None else "y", [])
    density = line_density(lines, settings_for(appearance, settings))
    if not lines or (density is not None and density >= settings.thin_line_density):
        return False
    logger.debug("subtitle lines fill %.0f %% of their boxes at %d px", 100 * (density or 0.0), settings.analysis_width)
    return True


def _standalone_detector(settings: Settings, side: int | None = None) -> Callable[[], object]:
    """RapidOCR's own text detector, taking pictures up to ``side`` (default: the recall guard's,
    ``prescan_det_side``), for an engine whose models hold none, set up on a thread of its own from
    now on: its imports and model load (about a second of a VLM run's start) go on beside probing
    and the pre-scan's decode, which wait for nothing."""
    side = side or settings.region.prescan_det_side
    future: Future = Future()

    def load() -> None:
        try:
            from subextract.stages.ocr.rapid import RapidTextDetector

            future.set_result(RapidTextDetector.standalone(side, settings.ocr.threads))
        except BaseException as exc:  # raised where the pre-scan asks for the detector
            future.set_exception(exc)

    threading.Thread(target=load, name="detector-setup", daemon=True).start()
    return future.result


def segment_video(scan: VideoScan, settings: Settings, *, on_segment: SegmentCallback | None = None,
                  after_frame: FrameCallback | None = None,
                  detector: Callable[[], object] | None = None) -> SegmentedVideo:
    """Decode the band and cut it into segments, repeated subtitles resolved to their first
    showing's key. ``on_segment`` sees each segment as it closes (the OCR worker reads first
    showings meanwhile); ``after_frame`` may stop decoding early. ``detector`` gives the recall
    guard's text detector (default: RapidOCR's own models, loaded now); never the OCR engine's own,
    which the OCR worker is calling meanwhile."""
    segment_settings = scan.segment_settings
    guard = None
    if settings.guard.enabled:
        guard = RecallGuard((detector or _standalone_detector(settings))(), settings.guard,
                            scan.line_height * scan.request.scale if scan.line_height else None,
                            [scaled_size(band, scan.request.scale)[1] for band in scan.bands],
                            settings.region.centre_tolerance)
        # A text the guard finds began an interval earlier, or two where it missed the text once:
        # the segmenter keeps that many frames to look back over.
        frames_between = math.ceil(2 * settings.guard.interval / scan.request.frame_duration)
        segment_settings = replace(segment_settings, look_back_frames=max(
            segment_settings.look_back_frames, frames_between + segment_settings.confirm_frames))
    segmenters = [Segmenter(i, segment_settings) for i in range(len(scan.bands))]
    cache = _ReadingCache(settings.segment)
    segments: list[tuple[Segment, int]] = []

    def accept(segment: Segment) -> None:
        if not segment.settled and segment.end - segment.start < settings.align.min_duration:
            # a glimpse of stroke-like background, or flicker too short to become a cue
            logger.info("band %d, %.2f-%.2f s: shown too briefly to be a cue (align.min_duration), not read",
                        segment.band, segment.start, segment.end)
            return
        if segment.image.ndim == 3:
            segment.image = yuv_to_bgr(segment.image)
            segment.frames = tuple(yuv_to_bgr(frame) for frame in segment.frames)
        key = cache.lookup(segment)
        first = key is None
        if first:
            key = len(segments)
            cache.remember(segment, key)
        if on_segment is not None:
            on_segment(segment, key, first)
        if not first:
            segment.image = _READ  # read already as an earlier segment: held on to, a film's repeats add up
            segment.frames = ()
        cache.follow(segment, key)
        segments.append((segment, key))

    report = DecodeReport()
    last_pts = scan.start
    stopped = False
    for frame in decode_frames(scan.request, report):
        last_pts = frame.pts
        if guard is not None and guard.due(frame.pts) and not all(segmenter.sure for segmenter in segmenters):
            lines = guard.check(frame.pts, frame.bands)
            for index, segmenter in enumerate(segmenters):
                if not segmenter.sure:
                    segmenter.vouch([line.box for line in lines if line.band == index])
        for index, (segmenter, band_image) in enumerate(zip(segmenters, frame.bands)):
            mask_image = frame.mask_bands[index] if frame.mask_bands else None
            for segment in segmenter.push(frame.pts, band_image, mask_image):
                accept(segment)
        if after_frame is not None and not after_frame(frame.pts, segments,
                                                       [segmenter.horizon for segmenter in segmenters]):
            stopped = True
            break
    if not stopped:
        step = 1.0 / settings.sample.fps if settings.sample.fps else scan.info.frame_duration
        end_pts = last_pts + step if report.frames else scan.start
        if scan.end is not None and report.frames and last_pts + 1.0 >= scan.end:
            # Decoding reached --end: what shows at the last frame shows until the range ends, not
            # one (sampling) step after it, wherever the samples fell.
            end_pts = scan.end
        for segmenter in segmenters:
            for segment in segmenter.finish(end_pts):
                accept(segment)
    return SegmentedVideo(scan, segments, report, last_pts, guard.calls if guard is not None else 0)


def cues_from_segments(segmented: SegmentedVideo, readings: dict[int, Reading], settings: Settings,
                       lang: str = "all", *, engine_error: str | None = None,
                       stats: Stats | None = None) -> ExtractionResult:
    """Align the segments and their readings (``tag_reading``'s, by key) into cues, snap their
    boundaries, and say what went wrong on the way. After an engine failure (``engine_error``)
    only the segments read before it become cues. ``stats.wall_seconds`` is the caller's."""
    scan, report, last_pts = segmented.scan, segmented.report, segmented.last_pts
    start, end, info = scan.start, scan.end, scan.info
    stats = stats or Stats()
    segments = [(segment, key) for segment, key in segmented.segments if key in readings]
    if settings.sample.fps:
        def decode_range(range_start: float, range_end: float):
            return decode_frames(replace(scan.request, start=range_start, end=range_end, sample_fps=None,
                                         reference_frames_only=False))

        refined = refine_boundaries([segment for segment, _ in segments], decode_range, info.frame_duration,
                                    scan.segment_settings)
        segments = [(segment, key) for segment, (_, key) in zip(refined, segments)]
    if end is not None:  # a re-decode at native rate may see the frame at --end itself: nothing lasts past it
        segments = [(replace(segment, end=min(segment.end, end)) if segment.end > end else segment, key)
                    for segment, key in segments]
    warnings, complete = ([], False) if engine_error is not None else _decode_warnings(report, info, start, end,
                                                                                        last_pts)
    warnings = [*scan.warnings, *warnings]
    stats.frames, stats.segments, stats.guard_calls = report.frames, len(segments), segmented.guard_calls
    cues = _cues(segments, readings, settings, lang, len(scan.bands), stats)
    if lang not in EVERY_LANGUAGE and stats.lines_read and not stats.lines_kept:
        warnings.append(language_warning(stats, lang))
    if report.refused:
        from subextract.stages.netguard import describe_refusals

        warnings.append(f"the stream named addresses it may not reach, which were not fetched: "
                        f"{describe_refusals(report.refused)}")
        complete = False
    # Errors where decoding stopped are the truncation the warning above already names.
    damaged = [span for span in report.damaged if complete or span.start < last_pts - 1.0]
    if damaged:
        warnings.append(damage_warning(damaged, cues))
        complete = False
    # A live stream's duration is unknown (0): what was read is what was processed.
    stats.video_seconds = max(0.0, (end if end is not None else info.duration or last_pts) - start)
    return ExtractionResult(info=info, bands=scan.bands, cues=cues, stats=stats, warnings=warnings,
                            complete=complete, error=engine_error, damaged=damaged, lang=lang)


def extract(video: str | os.PathLike[str], settings: Settings | str | Sequence[str] | None = None, *,
            lang: str = "all", start: float = 0.0, end: float | None = None, region: str | None = None,
            fps: float | None = None, config: str | Sequence[str] | None = None, engine: OcrEngine | None = None,
            progress: ProgressCallback | None = None, on_cue: CueCallback | None = None,
            on_stage: StageCallback | None = None, save_crops: str | os.PathLike[str] | None = None
            ) -> ExtractionResult:
    """Extract the burned-in subtitles of ``video`` (a path or a URL) as cues.

    The keywords are the command line's options: ``lang`` (``zh``, ``en-US``, ``English``…),
    ``region`` (``auto``, ``bottom``, ``top``, ``X,Y,W,H`` in pixels, fractions or percentages),
    ``fps``, ``config`` (a preset name or YAML path, or several, layered), e.g.
    ``extract("talk.mp4", config="fast", region="bottom")``. ``settings``: loaded settings, or
    what ``config`` takes (``extract("talk.mp4", "fast")``); ``region`` and ``fps`` override
    either. ``on_cue`` gets each cue, in the order of the returned list, as soon as it is final
    (with ``fps``, boundaries are final only after the closing refinement, so at the end).
    ``save_crops``: a folder for each segment's OCR picture.

    The split level of ``subextract.scale`` runs the same steps apart: ``scan_video`` and
    ``segment_video`` on CPU workers, the reads elsewhere, ``cues_from_segments`` per video."""
    began = time.perf_counter()
    video = os.fspath(video)
    lang = reading_language(lang, "lang")
    settings = _api_settings(settings, config, region, fps)
    crops = CropSaver(os.fspath(save_crops)) if save_crops else None
    settings = replace(settings, ocr=replace(settings.ocr, lang=lang))  # the OCR engine routes scripts by it
    stage = on_stage or (lambda _name: None)
    ready = _engine_future(engine, settings)

    # Pre-scan frames are decoded at prescan_det_side already, so a shared detector keeps their size.
    # Only an engine whose models hold a detector is waited for: the region search waits for no other's start.
    shared = engine_traits(settings.ocr.engine).text_detector
    detector = (lambda: ready.result().text_detector()) if shared else \
        _standalone_detector(settings, prescan_detector_side(settings.region))
    # The recall guard looks while the OCR worker reads on its own thread: it must not call the
    # engine's models (RapidOCR keeps each call's use_det/use_rec in the instance: a read between
    # them came back a detection only), so it gets models of its own, loaded beside the pre-scan;
    # their input is capped at prescan_det_side as before, not at the pre-scan's second look's side.
    guard_detector = _standalone_detector(settings) if settings.guard.enabled else detector
    scan = scan_video(video, settings, start, end, detector=detector, on_stage=stage)
    stage("reading")
    stats = Stats()
    worker = _OcrWorker(ready, second_look=engine_traits(settings.ocr.engine).second_look)
    stream = CueStream(settings.align, len(scan.bands), language_filter(lang, len(scan.bands)), on_cue) \
        if on_cue else None
    if stream is not None:
        worker.on_results = stream.refresh  # a stalled live stream still gets its cues out

    def on_segment(segment: Segment, key: int, first: bool) -> None:
        if not first:
            stats.reused_readings += 1
        if crops is not None:
            crops.save(segment, key)
        if first:
            worker.submit(key, segment)

    total = ((scan.end if scan.end is not None else scan.info.duration) - scan.start) \
        if scan.end is not None or scan.info.duration else None

    def after_frame(pts: float, segments: list[tuple[Segment, int]], horizons: list[float]) -> bool:
        if worker.error is not None:
            return False  # the engine failed: keep what was read, decode no further
        if stream is not None and not settings.sample.fps:
            stream.update(segments, worker.results, horizons)
        if progress is not None:
            progress(pts - scan.start, total, len(segments))
        return True

    try:
        segmented = segment_video(scan, settings, on_segment=on_segment, after_frame=after_frame,
                                  detector=guard_detector)
    finally:
        worker.close()
    if ready.exception() is not None:
        raise ready.exception()
    if worker.error is not None and not isinstance(worker.error, SubextractError):
        raise worker.error
    if settings.sample.fps:
        stage("snapping boundaries")
    stats.ocr_calls, stats.ocr_seconds = worker.calls, worker.seconds
    result = cues_from_segments(segmented, worker.results, settings, lang,
                                engine_error=str(worker.error) if worker.error is not None else None, stats=stats)
    if crops is not None:
        crops.finish(worker.results, prepared_readings(segmented.segments, worker.results, lang,
                                                       len(scan.bands)))
    if stream is not None:
        stream.finish(result.cues)
    stats.wall_seconds = time.perf_counter() - began
    return result


def _api_settings(settings: Settings | str | Sequence[str] | None, config: str | Sequence[str] | None,
                  region: str | None, fps: float | None) -> Settings:
    """``extract``'s settings: loaded ones or a config, then ``region`` and ``fps`` over them."""
    if isinstance(settings, Settings):
        if config is not None:
            raise SubextractError("extract: give settings or config, not both")
        if fps is not None and not 0 < fps < float("inf"):
            raise SubextractError(f"fps {fps}: must be a positive number")
        return replace(settings, region=replace(settings.region, mode=region or settings.region.mode),
                       sample=replace(settings.sample, fps=fps if fps is not None else settings.sample.fps))
    if settings is not None and config is not None:
        raise SubextractError("extract: give a config as settings or as config, not both")
    return load_settings(config if config is not None else settings,
                         {"region": {"mode": region}, "sample": {"fps": fps}})


def damage_warning(spans: list[DamagedSpan], cues: list[Cue]) -> str:
    """One line naming the damaged spans and the cues inside them."""
    hit = [cue for cue in cues if any(span.overlaps(cue.start, cue.end) for span in spans)]
    where = "; ".join(span.describe() for span in spans[:5]) + (f"; {len(spans) - 5} more" if len(spans) > 5 else "")
    cues_text = (f"{len(hit)} cue{'' if len(hit) == 1 else 's'} there may be wrong or missing lines "
                 f"({', '.join(f'{c.start:.2f}–{c.end:.2f} s' for c in hit[:5])}{', …' if len(hit) > 5 else ''})"
                 if hit else "no cue there, but subtitles shown there may be missing")
    return f"the video is damaged at {where}: {cues_text}; FFmpeg: {spans[0].first_error}"



def _with_line_strokes(settings: SegmentSettings, strips: Sequence[LineStrip], strip_scale: float | None,
                       bands: Sequence[Band], decode_scale: float) -> SegmentSettings:
    """``settings`` with the strokes of this video's smallest subtitle line (``smallest_line_strokes``),
    when their strips were decoded (at ``strip_scale`` of the picture) at the segmenter's analysis
    size: a narrower band chosen by the user is analysed at another scale, where the count says
    nothing exact."""
    if not strips or strip_scale is None:
        return settings
    band_width = max(band.width for band in bands) * decode_scale
    analysis_scale = decode_scale * min(1.0, settings.analysis_width / band_width)
    if abs(strip_scale - analysis_scale) > 0.02 * analysis_scale:
        return settings
    strokes = smallest_line_strokes(strips, settings)
    logger.info("subtitle lines: the smallest fills %d stroke pixels at analysis size", strokes)
    return replace(settings, line_strokes=strokes)


def _bar_setting_strips(strips: Sequence[LineStrip], lines: Sequence[TextBox],
                        settings: SegmentSettings) -> Sequence[LineStrip]:
    """The strips (of ``lines``, in order) whose smallest line sets the lower bar for text. Lines
    only the pre-scan's second look found are fainter or thinner than the subtitles the first
    look saw (a keyframe mid-fade, a half-hidden line): they set no lower bar than those, where
    one of those counts (``smallest_line_strokes``'s floors). Small plain text at 480p: the first
    look's one line, cut short by the detector, kept too few strokes to count, and the first cue
    started 1.4 s late without a bar."""
    first_look = [strip for strip, box in zip(strips, lines) if not box.second_look]
    if len(strips) != len(lines) or not first_look or len(first_look) == len(strips):
        return strips
    return first_look if smallest_line_strokes(first_look, settings) else strips


def _strips_by_plane(region: Region) -> tuple[dict[str, list[LineStrip]], float | None]:
    """The pre-scan's subtitle lines in luma and in each chroma plane, both ways round, at the
    segmenter's analysis size (thin strokes vanish from chroma at the detector's smaller size):
    grey (the segmenter's luma is FFmpeg's grey, not the raw Y plane) and both chroma planes of
    the same keyframes, which the region pre-scan's one decode kept at that size; and that size
    over the picture's (None: only the detector's grey strips, at its size)."""
    strips = {"y": region.strips}
    frames = region.frames
    if not region.lines or frames is None or frames.analysis_scale is None:
        return strips, None
    scale = frames.analysis_scale
    strips["y"] = line_strips(region.lines, frames.grey, scale)
    for index, plane in ((1, "u"), (2, "v")):
        found = line_strips(region.lines, [frame[..., index] for frame in frames.colour], scale)
        strips[plane] = found
        strips[f"-{plane}"] = [(255 - strip, x0, x1) for strip, x0, x1 in found]
    return strips, scale


def language_warning(stats: Stats, lang: str) -> str:
    """What to say when lines were read but ``--lang`` kept none of them (an empty output
    otherwise looks like a video without subtitles)."""
    seen = stats.languages_seen
    tags = f"all tagged {seen[0]}" if len(seen) == 1 else \
        "tagged " + ", ".join(f"{tag} ({stats.languages_read[tag]})" for tag in seen) if seen else "none tagged"
    return (f"{stats.lines_read} line{'' if stats.lines_read == 1 else 's'} read, {tags}; --lang {lang} kept none "
            f"(--lang all keeps every line)")


def _cues(segments, results, settings: Settings, lang: str, band_count: int, stats: Stats) -> list[Cue]:
    cues: list[Cue] = []
    prepared = prepared_readings(segments, results, lang, band_count)
    for band in range(band_count):
        pairs = [(segment, prepared[key], results[key]) for segment, key in segments if segment.band == band]
        for segment, reading, raw in pairs:
            read = [line for line in raw.lines if line.text.strip()]
            stats.lines_read += len(read)
            stats.lines_kept += sum(1 for line in reading.lines if line.text.strip())
            for line in read:
                if line.language != "und":
                    stats.languages_read[line.language] = stats.languages_read.get(line.language, 0) + 1
            if not reading.text.strip():
                logger.info("band %d, %.2f-%.2f s: nothing read%s (the engine read %r)", band, segment.start,
                            segment.end, "" if lang in ("all", "auto") else f" in {lang}", raw.text)
        cues.extend(align([(segment, reading) for segment, reading, _ in pairs], settings.align))
    return sorted(cues, key=lambda c: (c.start, c.band))


def _checked_range(info: VideoInfo, start: float, end: float | None) -> tuple[float, float | None]:
    if start < 0 or (end is not None and end <= start):
        raise SubextractError(f"invalid time range: --start {start} --end {end}")
    if info.duration and start >= info.duration:
        raise SubextractError(f"--start {start:g} s is past the end of the video ({info.duration:.2f} s)")
    if end is not None and info.duration and end > info.duration:
        end = None
    return start, end


def _decode_warnings(report: DecodeReport, info: VideoInfo, start: float, end: float | None,
                     last_pts: float) -> tuple[list[str], bool]:
    expected_end = end if end is not None else info.duration
    if report.frames == 0:
        detail = f": {report.errors[-1]}" if report.errors else ""
        raise SubextractError(f"{info.path}: no frame could be decoded{detail}")
    # A cut file's demuxer says so; without that, the last frame more than a second before the
    # stated end (a container's duration may include a slightly longer audio track), or more than
    # one frame before it where a frame lasts longer (a 0.001 fps file's last frame shows for 1000 s).
    stopped_early = bool(expected_end) and (last_pts + max(1.0, info.frame_duration) < expected_end or
                                            (report.ended_early and last_pts + 2 * info.frame_duration < expected_end))
    if report.returncode not in (0, None) or stopped_early:
        detail = f" ({report.errors[-1]})" if report.errors else ""
        return [f"decoding stopped at {last_pts:.2f} s of {expected_end:.2f} s: the file looks truncated or "
                f"corrupt{detail}; cues found before that point were kept"], False
    return [], True
