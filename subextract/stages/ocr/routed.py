"""The embedded engine for every script: RapidOCR (PP-OCRv6) where it reads the line, Tesseract
where the line is in a script PP-OCRv6 lacks.

- ``--lang CODE`` of a Tesseract language (ru, ko, ar …): every row RapidOCR's detector finds
  over the segmenter's strokes is read by that language's model.
- ``--lang all``: each line is first read by PP-OCRv6, as before. A line it reads without
  confidence, as junk or as too few characters goes to script detection by trial: the installed
  models of each script are tried (the scripts and models this video has shown first) and the
  line takes the most confident reading whose text is in the model's script. Tesseract's OSD was
  measured here first: it needs a page of text and returned nothing for 8 of 9 single subtitle
  lines. A Latin line that
  PP-OCRv6 tags as Vietnamese is read again with Tesseract's Vietnamese model, since PP-OCRv6's
  dictionary lacks most of its tone-marked letters (it drops them at high confidence).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import replace

import cv2
import numpy as np

from subextract.config import OcrSettings
from subextract.stages.language import detect_language, line_script, script_of
from subextract.schema import LineBox
from subextract.stages.ocr import Reading, TextLine
from subextract.stages.ocr.rapid import RapidOcrEngine, RapidTextDetector, is_centred, join_fragments, subtitle_boxes
from subextract.stages.ocr.scripts import (TESSERACT_LANGUAGES, TesseractLanguage, installed_models,
                                           require_language, resolved_language, routable_scripts)
from subextract.stages.ocr.tesseract import TesseractRecogniser
from subextract.stages.ocr.tesseract_text import cleaned, letters_of
from subextract.stages.ocr_fixes import is_junk

log = logging.getLogger(__name__)

# With --lang CODE a Tesseract line is taken when read with at least this confidence (its mean
# word confidence; Greek lines read right score from 0.48, background read as Greek 0.40-0.43)
# and in the language's script.
MIN_CONFIDENCE = 0.45
# ... and under --lang all, where the script models are tried on a line PP-OCRv6 could not
# read, with this much times the share of the line's letters and digits in the model's script
# (a repeat of an Arabic line read right scored 0.52; texture read as some script gives a
# lower share or no real word) and ...
ROUTED_CONFIDENCE = 0.5
# ... at least this many letters of that script: one or two are what a model reads off texture.
MIN_LETTERS = 3
# Trying stops at the first model that reads the line this well.
GOOD_ENOUGH = 0.88
# A detector row is PP-OCRv6's when the lines it read there span this share of its width.
_COVERED = 0.7
# A line box holds at least this many characters per box height of width (a Latin letter is
# about half a text height wide, a Han character one; the segmenter's boxes are padded).
_MIN_FILL = 0.35
_RAPID_SCRIPTS = (None, "Han", "Latin")
_RECHECK_SLACK = 0.05
# A line PP-OCRv6 read (not junk) is replaced only by a reading this much more confident.
_REPLACE_MARGIN = 0.1


def _letters_in(text: str, script: str) -> int:
    return sum(1 for c in text if c.isalpha() and script_of(c) == script)


def _longest_word(text: str, script: str) -> int:
    """Letters of ``script`` in the longest run of them (marks inside a word do not break it)."""
    longest = run = 0
    for c in text:
        if c.isalpha() and script_of(c) == script:
            run += 1
            longest = max(longest, run)
        elif not unicodedata.category(c).startswith("M"):
            run = 0
    return longest


# Digits between letters of one word: what PP-OCRv6 makes of a script it lacks ("n77aav").
_DIGITS_INSIDE_WORD = re.compile(r"[^\W\d_]\d+[^\W\d_]")


# A line read off background by a model is short words ("ν ορ"); a subtitle line has a word of
# at least three letters (Hangul: two syllables; the abugidas: two consonants, their vowel
# signs are marks, not letters: हटा, जाता).
MIN_WORD = {"Hangul": 2, "Devanagari": 2, "Bengali": 2, "Tamil": 2}
MIN_SCRIPT_SHARE = 0.8
_SURE, _MIN_MEAN_WORD = 0.7, 3.0
MAX_MIXED_WORDS = 0.25


class RoutedEngine:
    """An OCR engine (``read_batch``) over RapidOCR and Tesseract models, chosen per line."""

    name = "rapidocr"

    def __init__(self, settings: OcrSettings, rapid: RapidOcrEngine | None = None) -> None:
        self.settings = settings
        self.rapid = rapid or RapidOcrEngine(settings)
        self._recognisers: dict[str, TesseractRecogniser] = {}
        self.fixed: TesseractLanguage | None = None
        self.routes: dict[str, tuple[TesseractLanguage, ...]] = {}
        if settings.lang in TESSERACT_LANGUAGES:
            self.fixed = require_language(settings.lang)
            self._recogniser(self.fixed)  # loaded now: a broken model fails before decoding starts
        else:
            self.routes = routable_scripts()
        self._installed = installed_models()
        self._vietnamese = TESSERACT_LANGUAGES["vi"] if "vie" in self._installed else None
        self._recent: list[str] = []  # scripts in the order they were last read in this video
        self._won: dict[str, str] = {}  # script -> the model that last read a line of it
        self.routed_lines = 0
        self._detector = self.rapid.text_detector()

    def _recogniser(self, language: TesseractLanguage) -> TesseractRecogniser:
        if language.model not in self._recognisers:
            self._recognisers[language.model] = TesseractRecogniser(language)
        return self._recognisers[language.model]

    def text_detector(self) -> RapidTextDetector:
        """The detector of the RapidOCR models it routes around, for the region pre-scan."""
        return self._detector

    def read_batch(self, images: Sequence[np.ndarray], line_boxes: Sequence[Sequence[LineBox]] | None = None,
                   frames: Sequence[Sequence[np.ndarray]] | None = None) -> list[Reading]:
        """As ``OcrEngine.read_batch``; ``frames``, a few single frames per picture, give a line
        Tesseract reads without confidence a second look (PP-OCRv6's lines read from the median
        picture alone: it read them as well as or better than single frames, 0 edits over 20
        outlined Chinese lines against 3.6 per frame)."""
        boxes = [subtitle_boxes(lines) for lines in line_boxes] if line_boxes else [()] * len(images)
        singles = frames or [()] * len(images)
        if self.fixed is None:
            return [self._read_routed(image, tuple(lines)) for image, lines in zip(images, boxes)]
        return [self._read_fixed(image, tuple(lines), tuple(others)) for image, lines, others in
                zip(images, boxes, singles)]

    # --lang CODE ------------------------------------------------------------------------------

    def _read_fixed(self, image: np.ndarray, boxes: tuple[LineBox, ...],
                    frames: tuple[np.ndarray, ...] = ()) -> Reading:
        """Every line the detector finds, read by the language's model. The detector's boxes,
        not the segmenter's: a stroke mask's rows split Arabic's dots from its baseline and Thai
        or Devanagari marks from their letters (measured: 11 px boxes for a 27 px Arabic line).
        Where the detector finds no text row over the segment's strokes (at ``det_side``, then a
        centred one at ``fine_det_side``: ``_detected_rows``), nothing is read: the strokes are the
        picture's (a busy shot's strokes were read as Arabic words at 0.87). A
        row that reads as noise is read again from the segmenter's boxes over it; one read
        without confidence, from the segment's single ``frames`` too (``_agreed``)."""
        bgr = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR) if image.ndim == 2 else image
        rows = self._detected_rows(bgr, boxes)
        lines = []
        for row in rows:
            line = self._read_row(_grey(image), row, boxes)
            if frames and (line is None or line.confidence < self.settings.second_look_below):
                line = _agreed([line, *(self._read_row(_grey(frame), row, boxes) for frame in frames)])
            if line is not None:
                lines.append(replace(line, box=row))
        return Reading(lines=tuple(lines))

    def _read_row(self, grey: np.ndarray, row: LineBox, boxes: tuple[LineBox, ...]) -> TextLine | None:
        """The detector's row read by the language's model; where it reads as noise, the
        segmenter's boxes over it, which hug the strokes: the text sits larger in the crop, with
        less of the picture around it (plain Naskh over grass: the row read as noise at 0.2, the
        strokes' box read right at 0.68)."""
        for box in (row, *(box for box in boxes if box[1] < row[3] and row[1] < box[3])):
            line = self._read_line_fixed(grey, box)
            if line is not None:
                return line
        return None

    def _read_line_fixed(self, grey: np.ndarray, box: LineBox) -> TextLine | None:
        """The line at ``box`` read by the language's model, if it reads as text of its script."""
        line = cleaned(self._recogniser(self.fixed).read_line(grey, box), self.settings.lang)
        if line.confidence >= MIN_CONFIDENCE and self._plausible(line, self.fixed.script):
            return TextLine(line.text, line.confidence, line.box, language=self.settings.lang)
        return None

    def _detected_rows(self, bgr: np.ndarray, strokes: tuple[LineBox, ...]) -> list[LineBox]:
        """The detector's text lines, one box per row, with a margin for the recogniser; where
        the segmenter found subtitle strokes, only the rows over them (not scene text)."""
        rows = _rows_over(self._detector(bgr), strokes)
        if not rows and strokes and (fine := self.rapid.fine_text_detector(bgr)) is not None:
            # As the detector's own reading looks again (RapidOcrEngine._read): a line over a
            # bright busy picture (Thai over white fur) is found at the band's own scale. There
            # the detector also boxes the picture's things: only a centred row is a subtitle's
            # (a tripod beside the line's place, boxed the band's height, read "0 0").
            rows = [row for row in _rows_over(fine(bgr), strokes) if is_centred(row, bgr.shape[1])]
        return _padded_rows(rows, bgr.shape)

    @staticmethod
    def _plausible(line: TextLine, script: str) -> bool:
        """Text, and if not read confidently, words of a real length: background read by a
        model at 0.45-0.6 comes out as two-letter words ("الوا وذ ]د الى خم اى")."""
        if not RoutedEngine._is_text(line.text, script):
            return False
        if line.confidence >= _SURE:
            return True
        if script in MIN_WORD:  # short words are real here, a short line read unsurely is not: "उद"
            return _letters_in(line.text, script) >= MIN_LETTERS
        if script == "Latin":  # Vietnamese read off background: "r rẻ"
            return _longest_word(line.text, script) >= MIN_LETTERS
        # ... and with letters: digits alone read unsurely are what a tripod's legs read as ("0 0").
        words = [w for w in line.text.split() if _letters_in(w, script)]
        return bool(words) and sum(_letters_in(w, script) for w in words) >= _MIN_MEAN_WORD * len(words)

    @staticmethod
    def _is_text(text: str, script: str) -> bool:
        """Not junk, and in the model's script (a Latin-script model: any letters)."""
        if is_junk(text):
            return False
        if script_of(text) is None:
            return any(c.isdigit() for c in text)
        if script == "Latin":
            return True
        # A line of another script read by this model comes out as a few of its letters among
        # digits and other scripts' letters.
        signs = sum(c.isalpha() or c.isdigit() for c in text)
        words = text.split()
        # ... and with digits inside its words (a Greek line read by the Thai model: "ท๓6ท6ุ").
        mixed = sum(any(c.isdigit() for c in w) and any(c.isalpha() for c in w) for w in words)
        return _longest_word(text, script) >= MIN_WORD.get(script, MIN_LETTERS) \
            and _letters_in(text, script) >= MIN_SCRIPT_SHARE * signs and mixed < MAX_MIXED_WORDS * len(words)

    # --lang all -------------------------------------------------------------------------------

    def _read_routed(self, image: np.ndarray, boxes: tuple[LineBox, ...]) -> Reading:
        bgr = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR) if image.ndim == 2 else image
        if boxes:
            rapid_lines = [self.rapid.recognise_line(bgr, box) for box in boxes]
            if all(self._trusted(line) for line in rapid_lines):
                return self._vietnamese_again(image, Reading(lines=tuple(rapid_lines)))
        # As RapidOcrEngine does: the detector reads the band. Then each row it read without
        # confidence or as junk goes to the script models, and a line they read replaces it.
        reading = self.rapid.read_with_detector(bgr)
        if not self.routes:
            return self._vietnamese_again(image, reading)
        # The detector's rows again, without recognition: RapidOCR drops the boxes it reads as
        # empty or with a low score, which is how it reads a script it does not know.
        rows = [line.box for line in join_fragments([TextLine("x", 1.0, box) for box in self._detector(bgr)])]
        grey = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
        routed = []
        for row, box in zip(rows, _padded_rows(rows, grey.shape)):
            read = [line for line in reading.lines if _same_row(line.box, row) or _same_row(row, line.box)]
            # What PP-OCRv6 read of the row, and over how much of its width: a fragment of an
            # unknown script read as one confident Han character covers a sliver of it.
            covered = sum(line.box[2] - line.box[0] for line in read) / max(1, row[2] - row[0])
            if read and covered >= _COVERED and all(self._trusted(line) for line in read):
                continue
            best = max(read, key=lambda line: line.confidence, default=TextLine("", 0.0, row))
            # A reading too short for its box counts for nothing against another script's.
            held = best.confidence * min(1.0, covered) if self._filled(best) else 0.0
            line = self._route(grey, TextLine(best.text, held, box))
            if line is not None:
                routed.append(line)
        if not routed:
            return self._vietnamese_again(image, reading)
        kept = [line for line in reading.lines if not any(_same_row(line.box, other.box) for other in routed)]
        merged = sorted([*kept, *routed], key=lambda line: (line.box[1] + line.box[3]) / 2)
        return self._vietnamese_again(image, Reading(lines=tuple(merged)))

    def _trusted(self, line: TextLine) -> bool:
        """PP-OCRv6 read the line with confidence, and as many characters as its box holds: an
        unknown script comes out as a confident character or two (Hangul as 合)."""
        return self.rapid.trusted(line) and self._filled(line)

    @staticmethod
    def _filled(line: TextLine) -> bool:
        """As many characters as the box holds, in a script PP-OCRv6 reads well (its few Greek
        letters come out for Greek lines, wrongly, at 0.8-0.9), and, in a Latin line, words
        without digits between letters (Hebrew read as "n77aav anrl"; "3D", "MP3", "1080p" are
        words). A Chinese or Japanese line has no spaces between words, and its numbers and Latin
        terms sit among them: 输入2FA代码, read at 0.9997, counted as such a word, went to the
        script models and came back as Greek."""
        x0, y0, x1, y1 = line.box
        words = line.text.split() if line_script(line.text) == "Latin" else []
        mixed = sum(bool(_DIGITS_INSIDE_WORD.search(w)) for w in words)
        return len(line.text.replace(" ", "")) >= _MIN_FILL * (x1 - x0) / max(1, y1 - y0) \
            and script_of(line.text) in _RAPID_SCRIPTS and mixed < MAX_MIXED_WORDS * max(1, len(words))

    def _route(self, grey: np.ndarray, rapid_line: TextLine) -> TextLine | None:
        """The line read by the installed script model that reads it best, or None."""
        order = [s for s in self._recent if s in self.routes] + [s for s in self.routes if s not in self._recent]
        best: tuple[TextLine, str, float, str] | None = None
        for script, language in ((script, language) for script in order for language in self._models(script)):
            line = cleaned(self._recogniser(language).read_line(grey, rapid_line.box), "")
            letters = sum(c.isalpha() for c in line.text)
            in_script = _letters_in(line.text, script)
            # A model reading another script's line (or background) gives letters of other scripts,
            # digits or too few letters, often at a fair confidence: the share in its script counts.
            score = line.confidence * in_script / max(1, letters + sum(c.isdigit() for c in line.text))
            # Once the video has shown a script, its lines are taken as with --lang CODE.
            floor = MIN_CONFIDENCE if script in self._recent else ROUTED_CONFIDENCE
            if score < floor or not self._plausible(line, script):
                continue
            if best is None or score > best[2]:
                best = (line, script, score, language.model)
            if score >= GOOD_ENOUGH or self._won.get(script) == language.model:
                break  # confident, or the model that read this video's lines of the script
        if best is None or rapid_line.confidence and best[2] <= rapid_line.confidence + _REPLACE_MARGIN:
            return None
        line, script, _, model = best
        # Russian's model reads a Ukrainian line confidently, dropping its і: a line whose text
        # is in another language of the script is read again by that language's model.
        code = detect_language(line.text)
        own = resolved_language(code) if code in TESSERACT_LANGUAGES else None
        if own is not None and own.model != model and any(m.model == own.model for m in self.routes[script]):
            again = cleaned(self._recogniser(own).read_line(grey, rapid_line.box), "")
            if again.confidence >= line.confidence - _RECHECK_SLACK and self._plausible(again, script):
                line, model = again, own.model
        self._won[script] = model
        self.routed_lines += 1
        self._recent = [script] + [s for s in self._recent if s != script]
        return TextLine(line.text, line.confidence, line.box, language=detect_language(line.text))

    def _models(self, script: str) -> list[TesseractLanguage]:
        """The script's models, the one that last read a line of it first."""
        won = self._won.get(script)
        return sorted(self.routes[script], key=lambda language: language.model != won)

    def _vietnamese_again(self, image: np.ndarray, reading: Reading) -> Reading:
        """Latin lines in Vietnamese read again by Tesseract's Vietnamese model."""
        if self._vietnamese is None or not any(detect_language(line.text) == "vi" for line in reading.lines):
            return reading
        grey = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
        recogniser = self._recogniser(self._vietnamese)
        lines = []
        for line in reading.lines:
            if detect_language(line.text) == "vi":
                again = recogniser.read_line(grey, line.box)
                if again.confidence >= MIN_CONFIDENCE and not is_junk(again.text):
                    line = TextLine(again.text, again.confidence, line.box, language="vi")
            lines.append(line)
        return Reading(lines=tuple(lines))


def _grey(image: np.ndarray) -> np.ndarray:
    return image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)


def _agreed(readings: Sequence[TextLine | None]) -> TextLine | None:
    """Of one line's readings (None: read as noise), the one whose letters most of the others
    share, the more confident of equals: a frame's noise misleads the model one way, the text
    reads alike in several (measured on the multi-script videos' unsure lines: fewer edits than
    taking the most confident, which a confident misreading wins). The first reading is the
    median picture's: where it read noise, a line only one single frame reads is noise too (one of
    four frames of another script's line read as digits by the Russian model; the text itself
    reads alike in the frames that read it)."""
    read = [line for line in readings if line is not None]
    if not read:
        return None
    letters = [letters_of(line.text) for line in read]
    chosen, chosen_letters = max(zip(read, letters), key=lambda pair: (letters.count(pair[1]), pair[0].confidence))
    if readings[0] is None and letters.count(chosen_letters) < 2:
        return None
    return chosen


def _rows_over(boxes: Sequence[LineBox], strokes: Sequence[LineBox]) -> list[LineBox]:
    """The detector's ``boxes`` joined into rows; with ``strokes`` (the segmenter's line boxes),
    only the rows over them."""
    rows = [line.box for line in join_fragments([TextLine("x", 1.0, box) for box in boxes])]
    if strokes:
        rows = [row for row in rows if any(row[1] < box[3] and box[1] < row[3] for box in strokes)]
    return rows


def _padded_rows(boxes: Sequence[LineBox], shape: tuple[int, ...]) -> list[LineBox]:
    """Detector boxes (top to bottom) with the margin the recogniser needs (they hug the
    glyphs), reaching at most halfway to the row above or below."""
    padded = []
    for i, (x0, y0, x1, y1) in enumerate(boxes):
        pad_y, pad_x = int(0.2 * (y1 - y0)) + 2, int(0.4 * (y1 - y0)) + 2
        top = max(0, y0 - pad_y) if i == 0 else max(y0 - pad_y, (boxes[i - 1][3] + y0) // 2)
        bottom = min(shape[0], y1 + pad_y) if i == len(boxes) - 1 else min(y1 + pad_y, (y1 + boxes[i + 1][1]) // 2)
        padded.append((max(0, x0 - pad_x), top, min(shape[1], x1 + pad_x), bottom))
    return padded


def _same_row(a: LineBox, b: LineBox) -> bool:
    centre = (a[1] + a[3]) / 2
    return b[1] <= centre <= b[3]


def routes_lines(lang: str) -> bool:
    """Whether ``--lang lang`` needs Tesseract: its language is one, or every line is kept and
    some script model is installed (without any, PP-OCRv6 alone reads as it always did)."""
    if lang in TESSERACT_LANGUAGES:
        return True
    if lang not in ("all", "auto"):
        return False
    try:
        import tesserocr  # noqa: F401  (the wheel is a dependency; a broken install reads as before)
    except ImportError:
        log.warning("tesserocr is not importable: only the scripts PP-OCRv6 knows are read")
        return False
    return bool(routable_scripts())


def embedded_engine(settings: OcrSettings) -> RapidOcrEngine | RoutedEngine:
    """The embedded engine for ``settings.lang``: RapidOCR alone where PP-OCRv6 reads the
    language, routed to Tesseract's models where a script needs them."""
    return RoutedEngine(settings) if routes_lines(settings.lang) else RapidOcrEngine(settings)
