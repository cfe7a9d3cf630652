"""The embedded CPU engine: RapidOCR on ONNX Runtime, with the PP-OCR models its wheel ships."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import cv2
import numpy as np

from subextract.config import OcrSettings
from subextract.schema import LineBox, Reading, TextLine
from subextract.stages.ocr_fixes import is_junk


# A segmenter line box less than this share of the tallest one's height is no subtitle line.
_MIN_BOX_SHARE = 0.3
# The detector's second look (ocr.fine_det_side) is taken where it sees the band this many times larger.
_FINER = 1.25
# Subtitle lines are centred. A detector's box whose middle is off the band's by more than this
# share of its height (glyph bearings move it a little) but within _CENTRED_WITHIN of the band's
# width has missed a glyph at one end: a faint "一" before 次性密码支持 over a bright sky moved it
# by a third of the line's height.
_CENTRE_SLACK = 0.25
_CENTRED_WITHIN = 0.1


def _rapidocr(det_side: int, threads: int):
    from rapidocr import RapidOCR

    engine = RapidOCR(params={
        "Global.log_level": "error",
        "Global.use_cls": False,
        # limit_type "max" bounds the detector's input: the default ("min", 736) scales a
        # 1280x144 band *up* to 6545x736 and makes detection ~20x slower for no gain.
        "Det.limit_type": "max",
        "Det.limit_side_len": det_side,
        "EngineConfig.onnxruntime.intra_op_num_threads": threads,
        "EngineConfig.onnxruntime.inter_op_num_threads": 1,
    })
    logging.getLogger("RapidOCR").setLevel(logging.ERROR)
    return engine


class RapidOcrEngine:
    name = "rapidocr"

    def __init__(self, settings: OcrSettings) -> None:
        self.settings = settings
        self._engine = _rapidocr(settings.det_side, settings.threads)
        self._fine_engine = None  # made on first use: most videos never need it

    def text_detector(self) -> "RapidTextDetector":
        """The detector of this engine's models, for the region pre-scan (no second load)."""
        return RapidTextDetector(self._engine)

    # Recognising the segmenter's line boxes (found in the stroke mask) skips text detection,
    # which costs several times as much on a CPU.
    def read_batch(self, images: Sequence[np.ndarray], line_boxes: Sequence[Sequence[LineBox]] | None = None,
                   frames: Sequence[Sequence[np.ndarray]] | None = None) -> list[Reading]:
        """As ``OcrEngine.read_batch``. The segments' single ``frames`` are not read: the median
        picture reads PP-OCRv6's lines as well as or better than they do (``RoutedEngine``)."""
        boxes = line_boxes or [()] * len(images)
        readings = []
        for image, lines in zip(images, boxes):
            bgr = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR) if image.ndim == 2 else image
            lines = subtitle_boxes(lines)
            reading = self._read_lines(bgr, lines) if lines else None
            readings.append(reading if reading is not None else self._read(bgr))
        return readings

    def _read_lines(self, bgr: np.ndarray, lines: Sequence[LineBox]) -> Reading | None:
        """Recognise the given line crops; None when any line is not read with confidence.
        Lines are read one by one and the first untrusted one ends the attempt: a mask full of
        background "lines" (eight or nine of them) would otherwise cost a second of recognition
        before the detector runs anyway."""
        read = []
        for box in lines:
            line = self.recognise_line(bgr, box)
            if not self.trusted(line):
                return None
            read.append(line)
        return Reading(lines=tuple(read))

    def recognise_line(self, bgr: np.ndarray, box: LineBox) -> TextLine:
        """One line crop through the recogniser alone (no detector)."""
        x0, y0, x1, y1 = box
        result = self._engine.recognize_txt([bgr[y0:y1, x0:x1]])
        return TextLine(text=result.txts[0].strip(), confidence=float(result.scores[0]), box=box)

    def trusted(self, line: TextLine) -> bool:
        return line.confidence >= self.settings.trust_line_boxes and not is_junk(line.text)

    def read_with_detector(self, bgr: np.ndarray) -> Reading:
        """The whole band through the detector and the recogniser."""
        return self._read(bgr)

    def _read(self, bgr: np.ndarray) -> Reading:
        reading = self._detect_and_read(self._engine, bgr)
        if not reading.lines and self._finer(bgr):
            # The segmenter saw text here and the detector, at det_side, no line: faint text (a
            # translucent line over bright leaves, 720p, halved to 640 px) is found at the band's
            # own scale. Only such segments pay for the larger picture.
            reading = self._trusted_only(self._detect_and_read(self._fine(), bgr))
        return reading

    def fine_text_detector(self, bgr: np.ndarray) -> "RapidTextDetector | None":
        """The detector at ``fine_det_side`` for a band it sees larger than ``det_side`` does (as
        ``_read`` looks again), else None."""
        return RapidTextDetector(self._fine()) if self._finer(bgr) else None

    def _fine(self):
        if self._fine_engine is None:
            self._fine_engine = _rapidocr(self.settings.fine_det_side, self.settings.threads)
        return self._fine_engine

    def _trusted_only(self, reading: Reading) -> Reading:
        """The second look's lines read with the confidence a mask line needs to be trusted: at
        the larger size the detector also boxes the picture's bars and beams across the band
        (read "XK" at 0.92 in a 480p video's bare segment, a cue of its own)."""
        return Reading(lines=tuple(line for line in reading.lines if self.trusted(line)))

    def _finer(self, bgr: np.ndarray) -> bool:
        """Whether a second look at ``fine_det_side`` sees the band at least _FINER times as large
        as the first did (a 720 px wide band of a vertical video is seen at 640 px already: looking
        again at 720 doubled the cost of its 22 segments of bare picture and found nothing)."""
        side = max(bgr.shape[:2])
        return min(side, self.settings.fine_det_side) >= _FINER * min(side, self.settings.det_side)

    def _detect_and_read(self, engine, bgr: np.ndarray) -> Reading:
        result = engine(bgr, use_det=True, use_cls=False, use_rec=True)
        if result.boxes is None or result.txts is None:
            return Reading(lines=())
        fragments = [
            TextLine(text=text.strip(), confidence=float(score), box=_bounding_box(box))
            for box, text, score in zip(result.boxes, result.txts, result.scores)
            if text.strip() and score >= self.settings.min_confidence
        ]
        lines = [self._whole_centred_line(bgr, line) for line in join_fragments(fragments) if not is_junk(line.text)]
        return Reading(lines=tuple(_subtitle_lines(lines, self.settings.min_line_height)))

    def _whole_centred_line(self, bgr: np.ndarray, line: TextLine) -> TextLine:
        """``line`` read again from its box made symmetric about the band's middle, where it is
        centred but for a glyph's width; the new reading is kept only where it holds the old one
        and more (the glyph the box missed), with confidence."""
        x0, y0, x1, y1 = line.box
        width = bgr.shape[1]
        if _off_centre(line.box, width) <= _CENTRE_SLACK * (y1 - y0) or not is_centred(line.box, width):
            return line
        again = self.recognise_line(bgr, (min(x0, width - x1), y0, max(x1, width - x0), y1))
        old, new = "".join(line.text.split()), "".join(again.text.split())
        if len(new) > len(old) and old in new and again.confidence >= self.settings.min_confidence:
            return again
        return line


def _off_centre(box: LineBox, width: int) -> float:
    """How far the middle of ``box`` is from the band's (``width`` wide), in pixels."""
    return abs((box[0] + box[2]) / 2 - width / 2)


def is_centred(box: LineBox, width: int) -> bool:
    """Whether ``box`` is centred in a band ``width`` wide, as subtitle lines are."""
    return _off_centre(box, width) <= _CENTRED_WITHIN * width


def subtitle_boxes(boxes: Sequence[LineBox]) -> tuple[LineBox, ...]:
    """The segmenter's line boxes that can be subtitle lines: a subtitle's lines share one size,
    and a line of x-height letters alone ("sure.") is still near half as tall as one with
    ascenders and descenders; a box under a third of the tallest is a speck of the picture (a
    white scrap beside a line, 8 px against its 41: read as "一" below the line's confidence, it
    sent the segment to the detector, which joined a tripod's leg to the line as "/")."""
    tallest = max((y1 - y0 for _, y0, _, y1 in boxes), default=0)
    return tuple(box for box in boxes if box[3] - box[1] >= _MIN_BOX_SHARE * tallest)


def _bounding_box(quad: np.ndarray) -> tuple[int, int, int, int]:
    xs, ys = quad[:, 0], quad[:, 1]
    return int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())


def join_fragments(fragments: Sequence[TextLine]) -> list[TextLine]:
    """Join detector boxes that sit on one text line (vertical overlap), left to right, top to bottom."""
    rows: list[list[TextLine]] = []
    for fragment in sorted(fragments, key=lambda f: (f.box[1] + f.box[3]) / 2):
        centre = (fragment.box[1] + fragment.box[3]) / 2
        row = next((r for r in rows if r[0].box[1] <= centre <= r[0].box[3]), None)
        if row is None:
            rows.append([fragment])
        else:
            row.append(fragment)
    lines = []
    for row in rows:
        row.sort(key=lambda f: f.box[0])
        text = " ".join(f.text for f in row)
        weights = [len(f.text) for f in row]
        confidence = sum(w * f.confidence for w, f in zip(weights, row)) / sum(weights)
        box = (min(f.box[0] for f in row), min(f.box[1] for f in row),
               max(f.box[2] for f in row), max(f.box[3] for f in row))
        lines.append(TextLine(text=text, confidence=confidence, box=box))
    return lines


def _subtitle_lines(lines: list[TextLine], min_height_share: float) -> list[TextLine]:
    """Drop small text beside the subtitle (scene text in the band): subtitle lines share one size."""
    if not lines:
        return lines
    tallest = max(line.box[3] - line.box[1] for line in lines)
    return [line for line in lines if line.box[3] - line.box[1] >= min_height_share * tallest]


class RapidTextDetector:
    """Text-line boxes only (no recognition), used by the region pre-scan whatever the OCR engine."""

    def __init__(self, engine) -> None:
        self._engine = engine

    @classmethod
    def standalone(cls, det_side: int, threads: int) -> "RapidTextDetector":
        """Its own models, for an OCR engine that has no text detector."""
        return cls(_rapidocr(det_side, threads))

    def __call__(self, image: np.ndarray) -> list[tuple[int, int, int, int]]:
        bgr = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR) if image.ndim == 2 else image
        result = self._engine(bgr, use_det=True, use_cls=False, use_rec=False)
        if result.boxes is None:
            return []
        return [_bounding_box(box) for box in result.boxes]
