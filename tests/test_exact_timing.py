"""Exact where the product claims exact: on the samples (constant 25 fps, every cue time on a
frame) each cue starts and ends on its very frame, for the default (every frame analysed) and for
``--fps`` (sampled, then snapped). ``fast`` decodes only reference frames and promises boundaries
within two frames (the presets table, docs/usage.md); its test holds it to that bound and no more."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_e2e_samples import FRAME, SAMPLES, VIDEOS, run_cli

from subextract.scoring import FRAME_TOLERANCE_MS, TimedText, _match, load_cues

# SRT keeps whole milliseconds: a frame time such as 1.88 s is 1880 ms exactly, but a float PTS
# may round one way or the other, hence the scorer's tolerance of 1 ms and no more.
EXACT_MS = FRAME_TOLERANCE_MS
FAST_BOUND_MS = 2 * FRAME * 1000 + FRAME_TOLERANCE_MS

MODES = {
    "default": [],
    "fps5": ["--fps", "5"],
    "fast": ["--config", "fast"],
}


def boundary_errors(reference: list[TimedText], hypothesis: list[TimedText]) -> list[tuple[str, float, float]]:
    """(reference text, start error ms, end error ms) per matched pair; every reference cue must be matched."""
    pairs = _match(reference, hypothesis)
    assert len(pairs) == len(reference) == len(hypothesis), (reference, hypothesis)
    return [(reference[r].text, round((hypothesis[h].start - reference[r].start) * 1000, 3),
             round((hypothesis[h].end - reference[r].end) * 1000, 3)) for r, h in pairs]


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("exact")
    cache: dict[tuple[str, str], Path] = {}

    def get(video: Path, mode: str) -> Path:
        if (video.stem, mode) not in cache:
            out = folder / f"{video.stem}.{mode}.srt"
            result = run_cli(str(video), *MODES[mode], "-o", str(out), "--quiet")
            assert result.returncode == 0, result.stderr
            cache[video.stem, mode] = out
        return cache[video.stem, mode]

    return get


def test_the_samples_are_constant_25_fps_with_cue_times_on_frames():
    for video in VIDEOS:
        meta = json.loads(video.with_suffix(".json").read_text()) if video.with_suffix(".json").exists() else {}
        assert meta.get("fps", 25) == 25, video
        for cue in load_cues(video.with_suffix(".srt")):
            for t in (cue.start, cue.end):
                assert abs(t / FRAME - round(t / FRAME)) < 1e-6, (video.stem, t)


@pytest.mark.parametrize("mode", ["default", "fps5"])
@pytest.mark.parametrize("video", VIDEOS, ids=lambda p: p.stem)
def test_boundaries_are_frame_exact(video, mode, extracted):
    errors = boundary_errors(load_cues(video.with_suffix(".srt")), load_cues(extracted(video, mode)))
    off = [e for e in errors if abs(e[1]) > EXACT_MS or abs(e[2]) > EXACT_MS]
    assert not off, f"{mode}: cues off their frames (text, start ms, end ms): {off}"


@pytest.mark.parametrize("video", VIDEOS, ids=lambda p: p.stem)
def test_fast_preset_keeps_its_two_frame_bound(video, extracted):
    errors = boundary_errors(load_cues(video.with_suffix(".srt")), load_cues(extracted(video, "fast")))
    off = [e for e in errors if abs(e[1]) > FAST_BOUND_MS or abs(e[2]) > FAST_BOUND_MS]
    assert not off, f"fast: cues more than two frames off (text, start ms, end ms): {off}"


def test_readme_states_the_fast_bound():
    reference = (SAMPLES.parent / "docs" / "usage.md").read_text(encoding="utf-8")
    fast_row = next(line for line in reference.splitlines() if line.startswith("| `fast`"))
    assert "within 1–2 frames" in fast_row
    readme = " ".join((SAMPLES.parent / "README.md").read_text(encoding="utf-8").split())
    assert "`fast` for long batches (skips most B-frames, boundaries within 1–2 frames)" in readme
