"""How this video's subtitles are drawn, learned from the pre-scan's subtitle lines.

The segmenter's text mask is cheapest and most selective when it may demand a dark outline
beside every stroke (bright grass or foliage has none). Many subtitles have no outline, though:
plain white text, soft shadows, translucent boxes — the usual style of streaming platforms and
anime — and coloured text can have the very luma of the picture behind it (orange over white
fur). The pre-scan's detector has already found this video's subtitle lines whatever their
style; their pixels tell which test fits:

- the plane: luma, or the chroma plane in which the lines stand out far more than the picture
  beside them does (a natural picture has little texture in chroma);
- an outline seen around the strokes of every line (on a picture that is not dark itself) keeps
  the outline test; anything else drops it and asks instead for strokes about as bright as the
  lines' own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import cv2
import numpy as np

from subextract.config import SegmentSettings
from subextract.stages.lines import line_boxes
from subextract.stages.mask import text_mask

_BESIDE = cv2.getStructuringElement(cv2.MORPH_RECT, (5, 5))
_AROUND = cv2.getStructuringElement(cv2.MORPH_RECT, (9, 9))  # beyond any outline or shadow
_MIN_STROKES = 40  # a line with fewer stroke pixels says nothing about the style

LineStrip = tuple[np.ndarray, int, int]  # rows holding a line (grey), the line's first and end column


@dataclass(frozen=True)
class Appearance:
    plane: str  # the picture plane the subtitles stand out in ("y", "u", "-u", "v", "-v")
    outlined: bool  # every line seen on a picture that is not dark had a dark pixel beside nearly all of its strokes
    level: int  # how bright the strokes are in that plane (the median over lines of the 95th percentile of
    # their strokes: thin strokes at pre-scan scale keep their full brightness only along their middle)
    lift: int  # how far the strokes stand above their surroundings in that plane (median over lines)
    lines: int  # subtitle lines it was learned from
    # The strokes carry colour (pink, yellow, cyan …): the OCR picture is then read in colour. The
    # recogniser was trained on colour pictures; in luma alone a pink 欲 over a moving picture
    # reads as 欽 in every frame, in colour right at 0.999 (measured).
    coloured: bool = False

    @property
    def decoded_in_colour(self) -> bool:
        return self.plane != "y" or self.coloured

    def describe(self) -> str:
        """In words, for ``-v``."""
        outline = "with a dark outline" if self.outlined else "without an outline"
        colour = "coloured " if self.coloured else ""
        lines = f"{self.lines} line{'' if self.lines == 1 else 's'}"
        return (f"{colour}strokes {outline}, told apart {_PLANE_WORDS.get(self.plane, self.plane)} "
                f"(level {self.level}, {self.lift} above their surroundings), learned from {lines}")


_PLANE_WORDS = {"y": "by brightness", "u": "by their blue tint", "-u": "by their yellow tint",
                "v": "by their red tint", "-v": "by their green tint"}


def _lift(grey: np.ndarray, settings: SegmentSettings) -> np.ndarray:
    kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (settings.stroke_kernel, settings.stroke_kernel))
    return cv2.morphologyEx(grey, cv2.MORPH_TOPHAT, kernel)


def _standing_out(strips: Sequence[LineStrip], settings: SegmentSettings, chroma: bool) -> tuple[float, int]:
    """(how much more the lines' strokes lift than the picture beside them does, the strokes'
    lift), medians over the lines."""
    ratios, lifts = [], []
    for strip, x0, x1 in strips:
        lift = _lift(strip, settings)
        beside = np.concatenate([lift[:, :x0].ravel(), lift[:, x1:].ravel()])
        if x1 <= x0 or not beside.size:
            continue
        # Dark strokes lift too (the gaps between them): in a chroma plane the line must be brighter
        # than the picture beside it is, more than it is darker (its negation carries dark text).
        # In luma an outline is darker still, and dark text on a light box is read by its gaps.
        middle = float(np.median(np.concatenate([strip[:, :x0].ravel(), strip[:, x1:].ravel()])))
        line = strip[:, x0:x1]
        bright = not chroma or float(np.percentile(line, 99)) - middle >= middle - float(np.percentile(line, 1))
        strokes = float(np.percentile(lift[:, x0:x1], 97)) if bright else 0.0
        ratios.append(strokes / max(float(np.percentile(beside, 97)), settings.plane_noise_floor))
        lifts.append(strokes)
    return (float(np.median(ratios)), int(np.median(lifts))) if ratios else (0.0, 0)


def _line_style(crop: np.ndarray, settings: SegmentSettings, contrast: int) -> tuple[float | None, int] | None:
    """(share of strokes with a dark pixel beside them, stroke brightness) of one line's crop;
    the share is None where the line says nothing about an outline. Over a picture brighter than
    ``dark_max + outline_evidence`` around the line, a dark pixel is one of at most ``dark_max``.
    Over a mid-grey one (down to ``outline_floor + outline_evidence``) it is one ``outline_evidence``
    darker than the picture, and the line only shows an outline, never refutes one: a 1 px
    outline at 15 around strokes over a lawn at 96 is plain to see, but a thin outline blurred at
    the analysis size (or a fading one) leaves the pixels beside some strokes no darker than a
    mid-grey picture's own dark spots. Over a darker picture, plain text has as dark pixels
    beside it: the line says nothing."""
    strokes = _lift(crop, settings) >= contrast
    if np.count_nonzero(strokes) < _MIN_STROKES:
        return None
    level = int(np.percentile(crop[strokes], 95))
    around = ~cv2.dilate(strokes.view(np.uint8), _AROUND).view(bool)
    if not around.any():
        return None, level
    dark = min(settings.dark_max, float(np.median(crop[around])) - settings.outline_evidence)
    if dark < settings.outline_floor:
        return None, level
    share = float((cv2.erode(crop, _BESIDE) <= dark)[strokes].mean())
    if dark < settings.dark_max and share < settings.outline_share:
        return None, level
    return share, level


def learn_appearance(strips: Mapping[str, Sequence[LineStrip]], settings: SegmentSettings,
                     glyph_sized: Sequence[bool] = ()) -> Appearance | None:
    """The style of the subtitle lines, from their strips in each candidate plane (``"y"`` at
    least); None when no line shows strokes. Lines ``glyph_sized`` marks (boxes narrower than a
    two-glyph line: mostly a thing of the picture the detector took for a glyph, such as a white
    sheet on a lawn that vetoed the outline of six subtitle lines) say nothing of the outline
    where another line does."""
    standing = {plane: _standing_out(found, settings, chroma=plane != "y") for plane, found in strips.items() if found}
    if "y" not in standing:
        return None
    plane = max(standing, key=lambda p: standing[p][0] * (1.0 if p == "y" else 1 / settings.chroma_advantage))
    lift = standing[plane][1]
    contrast = settings.contrast_min if plane == "y" else max(settings.hold_contrast, lift // 2)
    small = list(glyph_sized) + [False] * (len(strips[plane]) - len(glyph_sized))
    styles = [(style, glyph) for (strip, x0, x1), glyph in zip(strips[plane], small) if x1 > x0
              for style in [_line_style(strip[:, x0:x1], settings, contrast)] if style]
    if not styles:
        return None
    level = int(np.median([level for (_, level), _ in styles]))
    # A line far dimmer than the others was caught mid-fade, its outline faded as much: it says
    # nothing of the outline (a keyframe of a 300 ms fade refuted the outline of six lines).
    voters = [(share, glyph) for (share, line_level), glyph in styles if share is not None
              and line_level >= level - settings.plain_bright_margin]
    shares = [share for share, glyph in voters if not glyph] or [share for share, _ in voters]
    outlined = plane == "y" and bool(shares) and min(shares) >= settings.outline_share
    return Appearance(plane=plane, outlined=outlined, level=level,
                      lift=lift, lines=len(styles), coloured=_stroke_chroma(strips, settings) >= settings.colour_chroma)


def _stroke_chroma(strips: Mapping[str, Sequence[LineStrip]], settings: SegmentSettings) -> float:
    """How far the lines' bright strokes are from grey in chroma (the median over lines of the
    median distance of their stroke pixels from the neutral point); 0 without the chroma planes."""
    luma, blue, red = strips.get("y", ()), strips.get("u", ()), strips.get("v", ())
    if not luma or len(blue) != len(luma) or len(red) != len(luma):
        return 0.0
    distances = []
    for (y, x0, x1), (u, *_), (v, *_) in zip(luma, blue, red):
        line = np.s_[:, x0:x1]
        strokes = _lift(y[line], settings) >= settings.contrast_min
        if y.shape != u.shape or np.count_nonzero(strokes) < _MIN_STROKES:
            continue
        chroma = np.hypot(u[line][strokes].astype(np.float32) - 128, v[line][strokes].astype(np.float32) - 128)
        distances.append(float(np.median(chroma)))
    return float(np.median(distances)) if distances else 0.0


def settings_for(appearance: Appearance | None, settings: SegmentSettings) -> SegmentSettings:
    """The text test for this video: the outline test where its subtitles have an outline;
    otherwise none, and strokes must be nearly as bright as the subtitles' (so the many bright
    thin things of a picture, with no outline test to exclude them, mostly stay out). In a
    chroma plane the strokes' lift is smaller than in luma: the contrast asked for follows it."""
    if appearance is not None and appearance.outlined:
        return settings
    if appearance is None:
        return replace(settings, dark_max=255)
    bright_min = int(np.clip(appearance.level - settings.plain_bright_margin, settings.plain_bright_low,
                             settings.plain_bright_high))
    if appearance.plane == "y":
        return replace(settings, dark_max=255, bright_min=bright_min)
    # A chroma plane is nearly flat where there is no colour: half the strokes' lift is well
    # above its noise, text held lasts down to half of that, and fewer stroke pixels make text
    # (chroma is subsampled: a thin glyph leaves fewer of them than in luma).
    contrast_min = int(np.clip(appearance.lift // 2, settings.plane_noise_floor, settings.contrast_min))
    return replace(settings, dark_max=255, bright_min=bright_min, contrast_min=contrast_min,
                   hold_contrast=min(settings.hold_contrast, max(settings.plane_noise_floor // 2, contrast_min // 2)),
                   min_text_share=settings.min_text_share * settings.chroma_text_share)


def smallest_line_strokes(strips: Sequence[LineStrip], settings: SegmentSettings) -> int:
    """The stroke pixels of the smallest subtitle line in the text mask that ``settings``
    (``settings_for``'s) make, in the strips' pixels; 0 when no line is left. Lines with fewer than
    ``line_kept_share`` of the median line's strokes, or than ``min_line_strokes``, are not counted:
    the mask lost most of them (a bright picture behind plain text, a detector box cut in two)."""
    counts = [int(np.count_nonzero(text_mask(strip, settings)[:, x0:x1])) for strip, x0, x1 in strips if x1 > x0]
    if not counts:
        return 0
    least = max(1.0, settings.min_line_strokes, settings.line_kept_share * float(np.median(counts)))
    return min((count for count in counts if count >= least), default=0)


def line_density(strips: Sequence[LineStrip], settings: SegmentSettings) -> float | None:
    """How densely the subtitle lines' strokes fill their boxes in the text mask ``settings`` make
    (the median over lines of each line's fullest box); None when no line shows strokes. A stroke
    thinner than an analysis pixel loses most of its pixels to the mask's contrast test, so lines
    this sparse are drawn finer than the analysis size resolves."""
    densities = []
    for strip, x0, x1 in strips:
        mask = text_mask(strip, settings)[:, x0:x1]
        boxes = line_boxes(mask, mask.shape, pad=False) if x1 > x0 else ()
        filled = [(np.count_nonzero(mask[y0:y1, bx0:bx1]), (y1 - y0) * (bx1 - bx0)) for bx0, y0, bx1, y1 in boxes]
        if filled:
            strokes, area = max(filled)
            densities.append(strokes / area)
    return float(np.median(densities)) if densities else None
