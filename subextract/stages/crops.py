"""``--save-crops DIR``: each segment's OCR picture as a PNG named by its time, and ``crops.json``
listing them with what was read — for proofreading, or for users who OCR the crops elsewhere.

While the run goes on, ``crops.jsonl`` grows by one line per picture saved (its file, times, band
and text line boxes), so that a service can show a cue's picture the moment the cue streams out,
before ``crops.json`` is written at the end."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import cv2
import numpy as np

from subextract.errors import SubextractError
from subextract.schema import Reading, Segment
from subextract.stages.write import clock, write_text


def check_crops_folder(folder: str, force: bool) -> None:
    """``--save-crops DIR`` before any work: a ``crops.json`` already there (someone's proofreading
    of an earlier run) is replaced only with ``--force``, as an output file is."""
    listing = Path(folder) / "crops.json"
    if listing.exists() and not force:
        raise SubextractError(f"--save-crops {folder}: holds a crops.json already (use --force to replace it)")


class CropSaver:
    """Saves pictures as segments are accepted (a read picture is dropped to keep memory flat) and
    writes the listing at the end."""

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SubextractError(f"--save-crops {folder}: cannot create the folder ({exc.strerror})") from None
        if not os.access(self.folder, os.W_OK):
            raise SubextractError(f"--save-crops {folder}: the folder is not writable")
        self._saved: list[tuple[Segment, int, str]] = []
        self._index = self.folder / "crops.jsonl"
        self._index.unlink(missing_ok=True)  # a rerun's listing starts afresh

    def save(self, segment: Segment, key: int) -> None:
        """The picture of a segment to be read (``key``: its reading); a segment reusing an earlier
        reading is listed with that reading's picture."""
        earlier = next((name for _, k, name in self._saved if k == key), None)
        name = earlier or f"{clock(segment.start, '-')}_{clock(segment.end, '-')}_band{segment.band}.png"
        if earlier is None:
            # Encoded here and written by Python: cv2.imwrite says only "False", never why (a full disk).
            encoded, png = cv2.imencode(".png", np.ascontiguousarray(segment.image))
            try:
                if not encoded:
                    raise OSError(0, "the picture could not be encoded")
                (self.folder / name).write_bytes(png.tobytes())
            except OSError as exc:
                raise SubextractError(f"--save-crops {self.folder}: cannot write {name} ({exc.strerror})") from None
        self._saved.append((segment, key, name))
        entry = {"file": name, "start": round(segment.start, 3), "end": round(segment.end, 3), "band": segment.band,
                 "lines": [list(box) for box in segment.lines]}
        try:
            with open(self._index, "a", encoding="utf-8") as index:
                index.write(json.dumps(entry) + "\n")
        except OSError as exc:
            raise SubextractError(f"--save-crops {self.folder}: cannot write crops.jsonl ({exc.strerror})") from None

    def finish(self, readings: Mapping[int, Reading], prepared: Mapping[int, Reading]) -> None:
        """``readings``: the engine's, by key; ``prepared``: the same as the cues took them
        (other languages' lines dropped)."""
        listing = [{"file": name, "start": round(segment.start, 3), "end": round(segment.end, 3),
                    "band": segment.band, "lines": [list(box) for box in segment.lines],
                    "text": prepared[key].text if key in prepared else None,
                    "confidence": round(readings[key].confidence, 4) if key in readings else None}
                   for segment, key, name in self._saved]
        write_text(str(self.folder / "crops.json"),
                   json.dumps({"crops": listing}, ensure_ascii=False, indent=2) + "\n")
