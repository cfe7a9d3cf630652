"""The picture the OCR engine read for a cue, shown beside it on the proofreading page.

A job saves each segment's OCR picture, listed in ``crops.jsonl`` as it goes and in
``crops.json`` at the end (``stages/crops.py``); a cue is made of one or more segments of its
band, and the one overlapping it longest is its picture — what the text was read from, for
uploads and streams alike. ``lines_picture`` cuts the segment's text lines out of the band, so
that the page can show them at the video's own pixel size instead of a whole band shrunk to fit.
"""

from __future__ import annotations

import json
from pathlib import Path

from subextract.schema import Cue

PADDING = 0.35  # of the median line height, kept around the lines (strokes reach past the box)
MIN_PADDING = 4  # pixels


def _listing(folder: Path) -> list[dict]:
    try:
        return json.loads((folder / "crops.json").read_text(encoding="utf-8"))["crops"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:  # the job is still running: the pictures saved so far
        lines = (folder / "crops.jsonl").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    listing = []
    for line in lines:
        try:
            listing.append(json.loads(line))
        except ValueError:
            break  # a line being written right now
    return listing


def _segment_of(folder: Path, cue: Cue) -> dict | None:
    """The saved segment of ``cue``'s band that overlaps it longest (or, after an edit moved the
    cue off every segment, the nearest one)."""
    candidates = [crop for crop in _listing(folder)
                  if isinstance(crop, dict) and crop.get("band") == cue.band
                  and isinstance(crop.get("file"), str) and Path(crop["file"]).name == crop["file"]]
    if not candidates:
        return None
    middle = (cue.start + cue.end) / 2

    def fit(crop: dict) -> tuple[float, float]:
        overlap = min(cue.end, crop["end"]) - max(cue.start, crop["start"])
        return overlap, -abs((crop["start"] + crop["end"]) / 2 - middle)

    return max(candidates, key=fit)


def cue_picture(folder: Path, cue: Cue) -> Path | None:
    """The PNG of the band picture ``cue`` was read from; None when the job saved none."""
    segment = _segment_of(folder, cue)
    if segment is None:
        return None
    path = folder / segment["file"]
    return path if path.is_file() else None


def lines_picture(folder: Path, cue: Cue) -> bytes | None:
    """PNG bytes of the cue's text lines (the box around them, padded) at the band picture's own
    scale; the whole band when its segment found no lines; None without a picture."""
    import cv2

    segment = _segment_of(folder, cue)
    path = folder / segment["file"] if segment is not None else None
    if path is None or not path.is_file():
        return None
    picture = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if picture is None:
        return None
    boxes = [box for box in segment.get("lines") or [] if isinstance(box, list) and len(box) == 4]
    if boxes:
        heights = sorted(y1 - y0 for _, y0, _, y1 in boxes)
        pad = max(MIN_PADDING, round(heights[len(heights) // 2] * PADDING))
        height, width = picture.shape[:2]
        x0, y0 = max(0, min(b[0] for b in boxes) - pad), max(0, min(b[1] for b in boxes) - pad)
        x1, y1 = min(width, max(b[2] for b in boxes) + pad), min(height, max(b[3] for b in boxes) + pad)
        if x1 > x0 and y1 > y0:
            picture = picture[y0:y1, x0:x1]
    ok, encoded = cv2.imencode(".png", picture)
    return encoded.tobytes() if ok else None
