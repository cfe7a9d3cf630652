"""Subtitle documents of a job's cues: SRT, WebVTT and JSON by ``stages.write``, ASS by pysubs2."""

from __future__ import annotations

from collections.abc import Sequence

from subextract.schema import Cue

FORMATS = {"srt": "application/x-subrip", "vtt": "text/vtt", "ass": "text/x-ssa", "json": "application/json"}


def render_ass(cues: Sequence[Cue]) -> str:
    import pysubs2

    document = pysubs2.SSAFile()
    for cue in cues:
        # ASS reads "{...}" as override tags: braces are escaped as libass reads them; "\N" breaks lines.
        text = r"\N".join(line.replace("{", r"\{").replace("}", r"\}") for line in cue.lines)
        document.events.append(pysubs2.SSAEvent(start=round(cue.start * 1000), end=round(cue.end * 1000), text=text))
    return document.to_string("ass")


def render_document(cues: Sequence[Cue], fmt: str, metadata: dict | None) -> str:
    from subextract.stages.write import render

    return render_ass(cues) if fmt == "ass" else render(cues, fmt, metadata)
