"""Tesseract 5's LSTM recogniser, in this process through the tesserocr wheel (which bundles
libtesseract), for the scripts PP-OCRv6 cannot read.

Each line box is read on its own (page segmentation "single line": no layout analysis) from
clean binarised pictures of the line: the bright strokes lifted off their surroundings (a white
top-hat), black on white, and others drawn from them at several sizes; the reading most of them
agree with is kept (``TesseractRecogniser.read_line``). The grey median with its dark outline
halo reads far worse: Tesseract's own thresholding keeps the halo as a second stroke.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import cv2
import numpy as np
from PIL import Image
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cdist

from subextract.errors import SubextractError
from subextract.schema import LineBox
from subextract.stages.ocr import TextLine
from subextract.stages.ocr.scripts import TesseractLanguage, model_folder
from subextract.stages.ocr.tesseract_text import letters_of

log = logging.getLogger(__name__)

# Tesseract's reading of a line changes with the picture it is given in ways no one picture
# fixes (an Arabic line read right at 56 px was garbage at 80 px and the other way round; grown
# strokes read a light face and spoil a regular one), and its confidence does not tell a right
# reading from a wrong one (a Thai line misread at 0.9 beside its right reading at 0.6). So a
# line is read from several pictures: the lifted strokes, the strokes their outline encloses and
# the lifted strokes grown, at each of these heights in turn, and the reading the others agree
# with most is kept (``_consensus``). Measured with bench/tesseract_lines.py on the segment
# pictures of the scripts and faces sets (303): read within 10 % of their letters 279 -> 295, CER
# 0.027 -> 0.012, at 2.3x the reading CPU (the held-out set's 43: 32 -> 35, CER 0.075 -> 0.049).
_LINE_HEIGHTS = (96, 80, 64, 56)
# Where those pictures do not agree, the line is read again from pictures cut to its ink's rows
# (with _INK_MARGIN of them above and below), at heights that make the ink _INK_HEIGHTS high.
# Tesseract reads a single-line picture scaled to its LSTM's input height, the whole picture's: a
# light Naskh line whose ink fills two fifths of the detector's padded row (the usual share on
# every script video) came out as other words from all twelve pictures (0.22-0.51); cut to its
# ink at 48-64 px it read right at 0.84-0.89. Measured with bench/tesseract_lines.py on the
# scripts and faces sets' 303 segment pictures: read within 10 % of their letters 297 -> 299, CER
# 0.0120 -> 0.0082, reading CPU +15 % (heights and margin chosen there: 64 or 48 alone, or a 0.1
# margin, read 295-298 at CER 0.0089-0.0141; the held-out set's 43: 35 -> 35, CER 0.060 -> 0.042).
_INK_HEIGHTS = (64, 48)
_INK_MARGIN = 0.2
# The ink's rows are found in the lifted picture at this one of _LINE_HEIGHTS (already made).
_INK_PROBE_HEIGHT = 80
# ... and the pictures are at most this high (a speck of ink would call for thousands of rows).
_MAX_INK_SCALED_HEIGHT = 4 * _INK_PROBE_HEIGHT
# Reading stops early once this many readings agree letter for letter, from pictures of two heights
# at least and one of them at least this confident: the pictures of one height agree on noise or
# on one misreading (three of them on a dot too few, at 0.41-0.51).
_AGREEING = 3
_AGREED_CONFIDENCE = 0.45
# The stroke lift is measured against the line's surroundings within this share of its height
# (wider than a stroke, narrower than a glyph's counter plus outline).
_TOPHAT_SHARE = 0.45
_MIN_LIFT = 20  # grey levels; below this a pixel is no stroke whatever Otsu says
# A pixel is ink by how much darker than the text's own brightness it is not (ramping over this
# many levels, from _TEXT_LEVEL_MARGIN below it) ...
_TEXT_LEVEL_MARGIN = 60
_TEXT_LEVEL_RAMP = 40
# ... and by how far it is lifted above its surroundings, as a share of the strongest lift
# within a line height (ramping between these).
_LIFT_RATIO_LOW, _LIFT_RATIO_HIGH = 0.35, 0.6
_PEAK_WINDOW_SHARE = 0.5
_EDGE_ROWS = 0.25  # the top and bottom share of a line crop where pieces of the next line show
# Ink where a disc of this many times the line's median stroke thickness fits (and at least this
# share of the picture's height: a few pixels) is no stroke (see _without_thick_ink). Dots and
# tone marks are about one and a half strokes thick.
_THICK_INK = 3.0
_THICK_MIN_SHARE = 0.04
_BORDER = 12  # white margin around the line: Tesseract clips glyphs touching the picture's edge
# Ink with no dark rim on an outlined line (see _without_rimless_pieces). The rim is looked for
# within this share of the line height of a piece's edge (an outline is 2-4 px of an 80 px
# line); the surroundings beyond it, out to _FAR_SHARE, tell an outline from a dark picture.
_RIM_SHARE = 0.05
_RIM_DARKER = 160  # grey levels below the text's: an outline (near black), not a mid-grey picture
_FAR_SHARE = 0.2
_RIMMED = 0.6  # a piece is outlined when this share of the pixels around it is clearly dark ...
_RIMLESS = 0.25  # ... and has no rim below this share
_OUTLINED_INK = 0.5  # the line is outlined when this share of its ink is in outlined pieces ...
_BRIGHT_BEYOND = 0.25  # ... and this share of what lies beyond their outline is not dark
# A light face (KacstBook: strokes 2-3 px at a 47 px size) binarises to hairlines that the LSTM
# models, trained on regular weights, read as noise or not at all. Grown by a pixel on each
# side (this kernel at the reading height) they read.
_THICKEN = 3
# An outlined line's enclosed strokes (``enclosed_line``) need this much contrast in the crop
# (grey levels between its darkest and brightest pixels) ...
_ENCLOSED_CONTRAST = 80
# ... and must show ink over this share of the columns the line's lifted strokes show (within a
# few pixels): where part of a plain line lies over a bright picture, the enclosed picture keeps
# only the rest, which Tesseract reads, part of a line, alike at every height (three such
# readings would agree).
_ENCLOSED_COLUMNS = 0.9
# The consensus reading must be shared at least this much (normalised similarity of its letters) by
# another picture's reading of the line.
_SHARED = 0.5


def binarised_line(grey: np.ndarray, box: LineBox, height: int) -> np.ndarray:
    """The line at ``box`` of a grey band picture as dark strokes on white, scaled to a height
    Tesseract reads well. Subtitle strokes are bright (the segmenter's stroke mask is a white
    top-hat too) and stand above their surroundings: a pixel is ink as far as it is both nearly
    as bright as the text and lifted like a stroke, so a bright background, an outline or a
    shadow all become white. The edges keep their anti-aliasing (a hard threshold measured
    worse: Arabic dots and thin Cyrillic strokes broke up at subtitle sizes)."""
    x0, y0, x1, y1 = box
    crop = grey[y0:y1, x0:x1]
    if crop.size == 0:
        return np.full((height, height), 255, np.uint8)
    scale = height / crop.shape[0]
    if abs(scale - 1.0) > 0.05:
        crop = cv2.resize(crop, None, fx=scale, fy=scale,
                          interpolation=cv2.INTER_CUBIC if scale > 1 else cv2.INTER_AREA)
    size = max(3, int(_TOPHAT_SHARE * crop.shape[0]) | 1)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (size, size))
    lift = cv2.morphologyEx(crop, cv2.MORPH_TOPHAT, kernel).astype(np.float32)
    # How far a pixel is lifted, against the strongest lift near it: the picture behind a line
    # changes along it (plain white text over a bright sky is lifted far less than over a dark
    # wall), so one threshold for the whole line loses the text over the bright part.
    side = int(_PEAK_WINDOW_SHARE * crop.shape[0]) | 1
    window = cv2.getStructuringElement(cv2.MORPH_RECT, (side, side))
    peak = cv2.dilate(lift, window)
    ratio = np.where(peak >= _MIN_LIFT, lift / np.maximum(peak, 1.0), 0.0)
    stroke = np.clip((ratio - _LIFT_RATIO_LOW) / (_LIFT_RATIO_HIGH - _LIFT_RATIO_LOW), 0, 1)
    text_level = float(np.percentile(crop[ratio >= _LIFT_RATIO_HIGH], 90)) if (ratio >= _LIFT_RATIO_HIGH).any() \
        else 255.0
    bright = np.clip((crop - (text_level - _TEXT_LEVEL_MARGIN)) / _TEXT_LEVEL_RAMP, 0, 1)
    picture = (255 - 255 * bright * stroke).astype(np.uint8)
    picture = _without_thick_ink(_without_edge_pieces(_without_rimless_pieces(picture, crop,
                                                                               text_level - _RIM_DARKER)))
    return cv2.copyMakeBorder(picture, _BORDER, _BORDER, _BORDER, _BORDER, cv2.BORDER_CONSTANT, value=255)


def enclosed_line(grey: np.ndarray, box: LineBox, height: int) -> np.ndarray | None:
    """The line at ``box`` as the bright strokes an outline encloses, dark on white at ``height``:
    pixels brighter than halfway between the crop's darkest (the outline) and brightest (the
    text) that no path of such pixels joins to the crop's edge. Where the picture behind an
    outlined line is bright too (a sky, a pale wall, light grass), the lift of ``binarised_line``
    keeps the strokes only in part, mottled, and Tesseract read light faces (FreeSerif, KacstOne,
    Noto Naskh) as nothing or as other words; the outline parts text from picture whatever its
    brightness. None where the crop has no such contrast or nothing is enclosed (a plain line)."""
    x0, y0, x1, y1 = box
    crop = grey[y0:y1, x0:x1]
    if crop.size == 0:
        return None
    scale = height / crop.shape[0]
    crop = cv2.resize(crop, None, fx=scale, fy=scale, interpolation=cv2.INTER_CUBIC if scale > 1 else cv2.INTER_AREA)
    darkest, brightest = np.percentile(crop, (2, 99.5))
    if brightest - darkest < _ENCLOSED_CONTRAST:
        return None
    middle = (darkest + brightest) / 2
    light = (crop > middle).astype(np.uint8)
    _, labels = cv2.connectedComponents(light, connectivity=4)  # 4: an outline's diagonal gap is no way out
    edge = np.unique(np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]]))
    enclosed = light.astype(bool) & ~np.isin(labels, edge)
    if not enclosed.any():
        return None
    level = np.clip((crop.astype(np.float32) - middle) / (brightest - middle), 0, 1)  # anti-aliased edges
    picture = (255 - 255 * level * enclosed).astype(np.uint8)
    return cv2.copyMakeBorder(picture, _BORDER, _BORDER, _BORDER, _BORDER, cv2.BORDER_CONSTANT, value=255)


def _covers(picture: np.ndarray, lifted: np.ndarray) -> bool:
    """Whether ``picture`` shows ink over ``_ENCLOSED_COLUMNS`` of the columns ``lifted`` does,
    within an eighth of the line's height."""
    ours, theirs = (picture < 128).any(axis=0), (lifted < 128).any(axis=0)
    width = min(ours.size, theirs.size)  # the two scalings may round a column apart
    reach = 2 * (picture.shape[0] // 8) + 1
    ours = cv2.dilate(ours[:width].astype(np.uint8)[None, :], np.ones((1, reach), np.uint8))[0] > 0
    theirs = theirs[:width]
    return bool((ours & theirs).sum() >= _ENCLOSED_COLUMNS * max(int(theirs.sum()), 1))


def grown_line(picture: np.ndarray) -> np.ndarray:
    """A line picture of ``binarised_line`` with its strokes grown by a pixel on each side."""
    return cv2.erode(picture, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (_THICKEN, _THICKEN)))


def _consensus(readings: list[TextLine]) -> TextLine:
    """Of one line's readings from different pictures, the one the others agree with most: its
    own confidence plus each other reading's confidence times how alike their letters are (a
    misreading is one picture's, the text is what most pictures read; measured against the
    most confident reading on the scripts and faces sets' lines, from the same twelve pictures: 246 against 237 of 251 read
    within 10 % of their letters). A reading with no letters or digits is no candidate, and one no
    other reading shares half its letters with is none."""
    letters = [letters_of(line.text) for line in readings]
    candidates = [i for i, text in enumerate(letters) if text]
    if not candidates:
        return max(readings, key=lambda line: line.confidence)

    alike = cdist(letters, letters, scorer=Levenshtein.normalized_similarity, dtype=np.float64)
    others = [[j for j in range(len(readings)) if j != i] for i in range(len(readings))]

    def support(i: int) -> float:
        return readings[i].confidence + sum(readings[j].confidence * alike[i, j] for j in others[i])

    best = max(candidates, key=support)
    if not any(alike[best, j] >= _SHARED for j in others[best]):
        # No other picture reads it even half alike: one picture's noise (a street's texture read
        # by the Thai model as "พฬพฟ-" at 0.63 beside "1 0๐", "แห", "2 6 จ"), not a line.
        return TextLine("", 0.0, readings[best].box)
    return readings[best]


def _without_edge_pieces(picture: np.ndarray) -> np.ndarray:
    """Ink touching the top or bottom edge and lying mostly in the outer rows is a piece of the
    line above or below (two-line cues sit close): whitened, so Tesseract does not read it as
    accents or punctuation. (A joined Arabic word reaching the edge with a tall letter has its
    middle in the line's own rows and stays.)"""
    ink = (picture < 128).astype(np.uint8)
    _, labels, stats, centroids = cv2.connectedComponentsWithStats(ink, connectivity=8)
    height = picture.shape[0]
    top, bottom = stats[:, cv2.CC_STAT_TOP], stats[:, cv2.CC_STAT_TOP] + stats[:, cv2.CC_STAT_HEIGHT]
    outer = (centroids[:, 1] < _EDGE_ROWS * height) | (centroids[:, 1] > (1 - _EDGE_ROWS) * height)
    edge = np.flatnonzero(((top == 0) | (bottom == height)) & outer)
    edge = edge[edge != 0]  # label 0 is the paper
    if edge.size:
        picture = picture.copy()
        picture[np.isin(labels, edge)] = 255
    return picture


def _without_thick_ink(picture: np.ndarray) -> np.ndarray:
    """Ink far thicker than the line's strokes is a bright thing of the picture beside the text
    (a sheet of paper on the grass touching a plain line, as bright and as lifted as the strokes
    where it is smaller than the lift's kernel): whitened, as far as a disc that thick fits in it
    (an opening), so a letter it touches keeps its strokes. Tesseract read such a blob as letters
    or as nothing, and the line with it. A stroke's thickness is the distance transform along its
    middle (the ridge: pixels no neighbour of which is farther from the paper), and the line's is
    the median over all ridge pixels, which count ink by its length, not its area: a compact blob
    has a short ridge and never sets it."""
    ink = (picture < 128).astype(np.uint8)
    distance = cv2.distanceTransform(ink, cv2.DIST_L2, 5)
    ridge = (distance > 0) & (distance >= cv2.dilate(distance, np.ones((3, 3), np.uint8)))
    if not ridge.any():
        return picture
    radius = max(_THICK_INK * float(np.median(distance[ridge])), _THICK_MIN_SHARE * picture.shape[0])
    if distance.max() <= radius:
        return picture
    side = 2 * int(np.ceil(radius)) + 1
    blobs = cv2.morphologyEx(ink, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (side, side)))
    picture = picture.copy()
    picture[cv2.dilate(blobs, np.ones((3, 3), np.uint8)) > 0] = 255  # with its anti-aliased edge
    return picture


def _without_rimless_pieces(picture: np.ndarray, grey: np.ndarray, dark_below: float) -> np.ndarray:
    """On an outlined line, ink with no dark rim around it is background: whitened.

    The median picture keeps bright things that stay put or pan slowly, such as bright
    horizontal streaks of a panned picture, and where they are as bright and as thin as strokes
    they pass the lift and level tests; Tesseract reads them as marks (Thai above its letters:
    ``เป สรอ ลกผสม``). An outlined subtitle's every piece, dots and marks too, is ringed by its
    dark outline, which a streak of the picture is not. The line's own pieces say whether it is
    outlined (the OCR stage is not told the video's appearance): most of its ink ringed by
    pixels far darker than the text (``dark_below``: an outline is near black, a mid-grey
    picture is no rim), with the picture beyond those rims not that dark. A plain
    line over a dark picture is ringed too, but its surroundings are dark as well, so it is
    left alone, as is any line whose pieces are mostly rimless (plain text over a bright
    picture). Pieces are measured by the distance of each paper pixel to its nearest ink piece
    (one distance transform labels both), so their rims are rings within a few pixels."""
    ink = picture < 128
    if not ink.any():
        return picture
    height = picture.shape[0]
    rim = max(2.0, _RIM_SHARE * height)
    far = max(2 * rim + 2, _FAR_SHARE * height)
    distance, labels = cv2.distanceTransformWithLabels((~ink).astype(np.uint8), cv2.DIST_L2, 5,
                                                       labelType=cv2.DIST_LABEL_CCOMP)
    count = int(labels.max()) + 1
    dark = grey < dark_below
    near = ~ink & (distance <= rim)
    beyond = ~ink & (distance > 2 * rim) & (distance <= far)
    area = np.bincount(labels[ink], minlength=count)
    near_all = np.bincount(labels[near], minlength=count)
    rimmed_share = np.bincount(labels[near & dark], minlength=count) / np.maximum(near_all, 1)
    rimmed = (area > 0) & (rimmed_share >= _RIMMED)
    rimless = (area > 0) & (near_all > 0) & (rimmed_share < _RIMLESS)
    if area[rimmed].sum() < _OUTLINED_INK * area.sum() or not rimless.any():
        return picture
    around = rimmed[labels] & beyond
    if not around.any() or (~dark[around]).mean() < _BRIGHT_BEYOND:
        return picture
    picture = picture.copy()
    picture[rimless[labels] & (distance <= rim)] = 255  # the piece with its anti-aliased edge
    return picture


def line_pictures(grey: np.ndarray, box: LineBox) -> Iterator[tuple[tuple[int, bool], np.ndarray]]:
    """The pictures a line is read from, each with its scale (height, cut to the ink), in the
    order they are read: its lifted strokes (``binarised_line``), the strokes its outline
    encloses (``enclosed_line``) and the lifted strokes grown (``grown_line``) at each of
    ``_LINE_HEIGHTS``, then the same at the heights that make the line's ink ``_INK_HEIGHTS``
    high, cut to the ink's rows. Lazy: the reading stops once pictures agree."""
    probe = None
    for height in _LINE_HEIGHTS:
        lifted = binarised_line(grey, box, height)
        probe = lifted if height == _INK_PROBE_HEIGHT else probe
        yield from (((height, False), picture) for picture in _pictures_at(grey, box, height, lifted))
    ink = _ink_rows(probe)
    if ink is None:
        return
    top, bottom = ink
    for ink_height in _INK_HEIGHTS:
        height = min(int(ink_height / (bottom - top)), _MAX_INK_SCALED_HEIGHT)
        margin = max(2, int(_INK_MARGIN * ink_height))
        # The rows of the probe's ink at this height: the same for the three pictures (a picture
        # binarised at another size can hold a speck of the background above or below the line).
        rows = slice(max(0, _BORDER + int(top * height) - margin), _BORDER + int(np.ceil(bottom * height)) + margin)
        for picture in _pictures_at(grey, box, height, binarised_line(grey, box, height)):
            cut = cv2.copyMakeBorder(picture[rows], _BORDER, _BORDER, 0, 0, cv2.BORDER_CONSTANT, value=255)
            yield (height, True), cut


def _pictures_at(grey: np.ndarray, box: LineBox, height: int, lifted: np.ndarray) -> Iterator[np.ndarray]:
    """``lifted`` (``binarised_line`` at ``height``), the strokes the outline encloses and the lifted ones grown."""
    yield lifted
    enclosed = enclosed_line(grey, box, height)
    if enclosed is not None and _covers(enclosed, lifted):
        yield enclosed
    yield grown_line(lifted)


def _ink_rows(probe: np.ndarray) -> tuple[float, float] | None:
    """Where the line's ink lies in its box, top and bottom as shares of the box's height, from the
    line's lifted picture at ``_INK_PROBE_HEIGHT``; None where it shows no ink."""
    inside = probe[_BORDER:-_BORDER]
    rows = np.flatnonzero((inside < 128).any(axis=1))
    if rows.size == 0:
        return None
    return rows[0] / inside.shape[0], (rows[-1] + 1) / inside.shape[0]


class TesseractRecogniser:
    """One Tesseract model (one language or script) reading single lines. Not thread-safe by
    itself: a lock keeps concurrent callers apart."""

    def __init__(self, language: TesseractLanguage) -> None:
        from tesserocr import OEM, PSM, PyTessBaseAPI

        folder = model_folder(language.model)
        if folder is None:
            raise SubextractError(f"no Tesseract model '{language.model}' found: apt-get install {language.package}")
        self.language, self.folder = language, folder
        try:
            self._api = PyTessBaseAPI(path=str(folder), lang=language.model, psm=PSM.SINGLE_LINE,
                                      oem=OEM.LSTM_ONLY)
        except RuntimeError as exc:
            raise SubextractError(f"Tesseract could not load '{language.model}' from {folder}: "
                                  f"apt-get install {language.package}") from exc
        # Word lists bias LSTM output towards dictionary words; subtitles hold names and slang.
        self._api.SetVariable("load_system_dawg", "0")
        self._api.SetVariable("load_freq_dawg", "0")
        self._lock = threading.Lock()
        self._single_line, self._raw_line = PSM.SINGLE_LINE, PSM.RAW_LINE
        log.debug("Tesseract %s: model %s from %s", self._api.Version(), language.model, folder)

    def read_line(self, grey: np.ndarray, box: LineBox) -> TextLine:
        """The line at ``box``, read from the pictures of ``line_pictures`` until ``_AGREEING``
        readings agree; else the reading the others agree with most (``_consensus``)."""
        readings: list[TextLine] = []
        agreed: dict[str, list[tuple[tuple[int, bool], TextLine]]] = {}
        for scale, picture in line_pictures(grey, box):
            line = self._read_picture(picture, box)
            readings.append(line)
            letters = letters_of(line.text)
            alike = agreed.setdefault(letters, [])
            alike.append((scale, line))
            surest = max((read for _, read in alike), key=lambda read: read.confidence)
            if letters and len(alike) >= _AGREEING and len({at for at, _ in alike}) > 1 \
                    and surest.confidence >= _AGREED_CONFIDENCE:
                return surest
        return _consensus(readings)

    def _read_picture(self, picture: np.ndarray, box: LineBox) -> TextLine:
        with self._lock:
            self._api.SetImage(Image.fromarray(picture))
            text = self._api.GetUTF8Text()
            confidence = self._api.MeanTextConf()
            if not text.strip():
                # Its layout analysis finds no text in some clean lines (joined Arabic words
                # measured so); read as a raw line instead, without layout analysis.
                self._api.SetPageSegMode(self._raw_line)
                self._api.SetImage(Image.fromarray(picture))
                text = self._api.GetUTF8Text()
                confidence = self._api.MeanTextConf()
                self._api.SetPageSegMode(self._single_line)
        # Tesseract gives RTL lines in logical order already (its output is the reading order).
        text = " ".join(text.split())
        return TextLine(text=text, confidence=max(0.0, confidence) / 100.0, box=box)
