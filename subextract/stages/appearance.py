"""How this video's subtitles are drawn, learned from the pre-scan's subtitle boxes.

The segmenter's text mask is cheapest and most selective when it may demand a dark outline
beside every stroke (bright grass or foliage has none). Many subtitles have no outline, though:
plain white text, soft shadows, translucent boxes — the usual style of streaming platforms and
anime. The pre-scan's detector has already found this video's subtitle lines whatever their
style; their pixels tell which test fits: an outline seen around the strokes of every line keeps
the outline test, anything else drops it and instead asks for strokes about as bright as the
subtitles' own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import cv2
import numpy as np

from subextract.config import SegmentSettings

_BESIDE = cv2.getStructuringElement(cv2.MORPH_RECT, (5, 5))
_AROUND = cv2.getStructuringElement(cv2.MORPH_RECT, (9, 9))  # beyond any outline or shadow
_MIN_STROKES = 40  # a crop with fewer stroke pixels says nothing about the style


@dataclass(frozen=True)
class Appearance:
    outlined: bool  # every line seen on a picture that is not dark had a dark pixel beside nearly all of its strokes
    level: int  # how bright the strokes are (grey, the median over lines of the 95th percentile of their strokes:
    # thin strokes at pre-scan scale keep their full brightness only along their middle)
    lines: int  # subtitle lines it was learned from


def _line_style(crop: np.ndarray, settings: SegmentSettings) -> tuple[float | None, int] | None:
    """(share of strokes with a dark pixel beside them, stroke brightness) of one line's crop;
    the share is None where the picture around the line is dark itself (plain text there has
    dark pixels beside it too: the line says nothing about an outline)."""
    kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (settings.stroke_kernel, settings.stroke_kernel))
    strokes = cv2.morphologyEx(crop, cv2.MORPH_TOPHAT, kernel) >= settings.contrast_min
    if np.count_nonzero(strokes) < _MIN_STROKES:
        return None
    level = int(np.percentile(crop[strokes], 95))
    around = ~cv2.dilate(strokes.view(np.uint8), _AROUND).view(bool)
    if not around.any() or np.median(crop[around]) <= settings.dark_max + settings.outline_evidence:
        return None, level
    dark_beside = cv2.erode(crop, _BESIDE) <= settings.dark_max
    return float(dark_beside[strokes].mean()), level


def learn_appearance(crops: Sequence[np.ndarray], settings: SegmentSettings) -> Appearance | None:
    """The style of the subtitle lines in ``crops`` (grey), or None when none shows strokes."""
    styles = [style for crop in crops if crop.size for style in [_line_style(crop, settings)] if style]
    if not styles:
        return None
    # A dark picture puts dark pixels beside plain strokes too: an outline needs several lines' say.
    shares = [share for share, _ in styles if share is not None]
    outlined = bool(shares) and min(shares) >= settings.outline_share
    return Appearance(outlined=outlined, level=int(np.median([level for _, level in styles])), lines=len(styles))


def settings_for(appearance: Appearance | None, settings: SegmentSettings) -> SegmentSettings:
    """The text test for this video: the outline test where its subtitles have an outline;
    otherwise none, and strokes must be nearly as bright as the subtitles' (so the many bright
    thin things of a picture with no outline test to exclude them mostly stay out)."""
    if appearance is not None and appearance.outlined:
        return settings
    if appearance is None:
        return replace(settings, dark_max=255)
    bright_min = int(np.clip(appearance.level - settings.plain_bright_margin, settings.plain_bright_low,
                             settings.plain_bright_high))
    return replace(settings, dark_max=255, bright_min=bright_min)
