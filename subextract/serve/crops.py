"""The picture the OCR engine read for a cue, shown beside it on the proofreading page.

A job saves each segment's OCR picture with ``crops.json`` listing them (``subextract.job``'s
``save_crops``); a cue is made of one or more segments of its band, and the one overlapping it
longest is its picture — what the text was read from, for uploads and streams alike.
"""

from __future__ import annotations

import json
from pathlib import Path

from subextract.schema import Cue


def cue_picture(folder: Path, cue: Cue) -> Path | None:
    """The PNG of the segment of ``cue``'s band that overlaps it longest (or, after an edit moved
    the cue off every segment, the nearest one); None when the job saved none."""
    try:
        listing = json.loads((folder / "crops.json").read_text(encoding="utf-8"))["crops"]
    except (OSError, ValueError, KeyError):
        return None
    candidates = [crop for crop in listing if crop.get("band") == cue.band and Path(crop["file"]).name == crop["file"]]
    if not candidates:
        return None
    middle = (cue.start + cue.end) / 2

    def fit(crop: dict) -> tuple[float, float]:
        overlap = min(cue.end, crop["end"]) - max(cue.start, crop["start"])
        return overlap, -abs((crop["start"] + crop["end"]) / 2 - middle)

    path = folder / max(candidates, key=fit)["file"]
    return path if path.is_file() else None
