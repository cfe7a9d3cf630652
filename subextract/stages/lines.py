"""Where the text lines of a segment are, read off its stroke mask (no text detector needed).

Text detection costs several times the recognition of a line on a CPU; a segment's core mask
already marks its glyphs, so rows rich in strokes give the lines and the stroke columns in
them the extent. The OCR engine may use these boxes to recognise line crops directly and falls
back to its detector when it does not trust the result.
"""

from __future__ import annotations

import numpy as np
from subextract.schema import LineBox



def _runs(active: np.ndarray, max_gap: int) -> list[tuple[int, int]]:
    """(first, last) index of the runs of True, bridging gaps up to ``max_gap``."""
    indices = np.flatnonzero(active)
    if indices.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(indices) > max_gap + 1)
    firsts = [int(indices[0]), *indices[breaks + 1].tolist()]
    lasts = [*indices[breaks].tolist(), int(indices[-1])]
    return list(zip(firsts, lasts))


def _text_extent(strokes: np.ndarray, line_height: int) -> tuple[int, int] | None:
    """Columns of the line's main text: word gaps are bridged, distant specks are left out."""
    clusters = _runs(np.count_nonzero(strokes, axis=0) > 0, max_gap=2 * line_height)
    weights = [np.count_nonzero(strokes[:, a:b + 1]) for a, b in clusters]
    kept = [c for c, w in zip(clusters, weights) if w >= 0.1 * max(weights)]
    return (kept[0][0], kept[-1][1]) if kept else None


def _split_stacked(rows: np.ndarray, y0: int, y1: int, min_height: int) -> list[tuple[int, int]]:
    """Split a run of rows holding several lines set close together at the sparse rows between
    them (descenders above, ascenders below): a valley in the middle of the run. A part is split
    again only while it is much taller than its sibling (three or more lines)."""
    height = y1 - y0 + 1
    if height < 2 * min_height:
        return [(y0, y1)]
    profile = rows[y0:y1 + 1]
    low, high = int(0.3 * height), int(0.7 * height) + 1
    valley = low + int(np.argmin(profile[low:high]))
    if profile[valley] >= 0.2 * profile.max():
        return [(y0, y1)]
    parts = [(y0, y0 + valley - 1), (y0 + valley + 1, y1)]
    shortest = min(b - a + 1 for a, b in parts)
    return [line for a, b in parts
            for line in (_split_stacked(rows, a, b, min_height) if b - a + 1 >= 1.6 * shortest else [(a, b)])]


def _fragment_of(rows: np.ndarray, part: tuple[int, int], line: tuple[int, int]) -> bool:
    """Whether rows ``part`` are a sliver of ``line`` next to them rather than a line of their own:
    less than half as tall and with a densest row less than half as full, at most their own
    height away. Italic and serif lines set a sparse row (or none) between their capitals and
    ascenders and their x-height, or above their descenders: cut there, the sliver made a box a
    third of a line high, read as a garbled line."""
    (a0, a1), (b0, b1) = part, line
    height, gap = a1 - a0 + 1, max(b0 - a1, a0 - b1) - 1
    return height < 0.5 * (b1 - b0 + 1) and rows[a0:a1 + 1].max() < 0.5 * rows[b0:b1 + 1].max() and gap <= height


def _with_fragments_joined(rows: np.ndarray, lines: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``lines`` (top to bottom) with each sliver of a neighbouring line's rows joined to it."""
    lines = list(lines)
    joined = True
    while joined:
        joined = False
        for i, part in enumerate(lines):
            neighbours = [j for j in (i - 1, i + 1) if 0 <= j < len(lines) and _fragment_of(rows, part, lines[j])]
            if neighbours:
                j = min(neighbours, key=lambda k: max(lines[k][0] - part[1], part[0] - lines[k][1]))
                lines[j] = (min(part[0], lines[j][0]), max(part[1], lines[j][1]))
                del lines[i]
                joined = True
                break
    return lines


def line_boxes(core: np.ndarray, band_shape: tuple[int, int], min_height: int = 4,
               pad: bool = True) -> tuple[LineBox, ...]:
    """Boxes (in band pixels) of the text lines in a stroke mask computed on a scaled band,
    with a margin for the recogniser unless ``pad`` is false."""
    scale_y = band_shape[0] / core.shape[0]
    scale_x = band_shape[1] / core.shape[1]
    rows = np.count_nonzero(core, axis=1)
    if not rows.any():
        return ()
    boxes = []
    runs = _runs(rows >= max(2, 0.08 * rows.max()), max_gap=1)
    lines = [line for run in runs for line in _split_stacked(rows, *run, min_height)]
    for y0, y1 in _with_fragments_joined(rows, lines):
        height = y1 - y0 + 1
        if height < min_height:
            continue
        extent = _text_extent(core[y0:y1 + 1], height)
        if extent is None:
            continue
        x0, x1 = extent
        pad_y, pad_x = (0.35 * height, 0.6 * height) if pad else (0, 0)
        boxes.append((max(0, int((x0 - pad_x) * scale_x)), max(0, int((y0 - pad_y) * scale_y)),
                      min(band_shape[1], int((x1 + 1 + pad_x) * scale_x)),
                      min(band_shape[0], int((y1 + 1 + pad_y) * scale_y))))
    return tuple(boxes)
