"""The subtitle band of a cue's middle frame, as a PNG: what the proofreader compares the text with.

Made on demand from the stored upload by FFmpeg (one seek, one frame, cropped to the cue's band)
and kept in the job's folder, so a job costs no pictures until someone proofreads it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from subextract.errors import SubextractError
from subextract.stages.align import Cue


def crop_png(video: Path, cue: Cue, bands: list[dict], target: Path) -> bytes:
    """The PNG at ``target``, made first when missing."""
    from subextract.stages.probe import ffmpeg_exe
    from subextract.stages.source import input_args

    if target.is_file():
        return target.read_bytes()
    if not 0 <= cue.band < len(bands):
        raise SubextractError("the cue's band is not known")
    band = bands[cue.band]
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part.png")
    middle = (cue.start + cue.end) / 2
    result = subprocess.run(
        [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", "-ss", f"{middle:.3f}",
         *input_args(str(video)), "-i", str(video), "-frames:v", "1",
         "-vf", f"crop={band['width']}:{band['height']}:{band['x']}:{band['y']}", "-f", "image2", "-c:v", "png",
         "-y", str(partial)], capture_output=True, text=True, errors="replace", check=False, timeout=60)
    if result.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        raise SubextractError("FFmpeg could not cut the frame")
    partial.replace(target)
    return target.read_bytes()
