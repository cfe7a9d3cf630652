"""The analysis size follows how finely the subtitles are drawn: lines whose strokes are thinner
than an analysis pixel (a serif's hairlines at 1080p seen at 640 px) are analysed at
``fine_analysis_width``, with the pre-scan's keyframes decoded again at that size."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from conftest import Font, _filter_path, _font_dir, find_font, run_ffmpeg

from subextract.config import load_settings
from subextract.pipeline.run import _analysis_width, _finer_width, _thin_lines, scan_video
from subextract.stages.appearance import learn_appearance, line_density, settings_for
from subextract.stages.mask import analysis_view

SETTINGS = load_settings().segment
SAMPLE = Path(__file__).resolve().parents[1] / "sample_videos" / "zh_bottom.mp4"  # 1280x720, outlined Chinese
_RNG = np.random.default_rng(11)


def line_picture(width: int, stroke: int, stem: int = 6) -> np.ndarray:
    """A band ``width`` pixels wide with a centred line of 14 glyph-like boxes of bars, as a Ming
    serif draws them: two vertical stems 6 px thick and three horizontal strokes ``stroke`` pixels
    thick (hairlines where thin), 80 levels above a grainy mid-grey picture
    (orange over grass); sizes off the 3:1 grid, so bars fall at every phase of the analysis pixels."""
    scale = width / 1920
    height = round(240 * scale)
    picture = np.clip(90 + _RNG.normal(0, 4, (height, width)), 0, 255).astype(np.uint8)
    glyph, gap, top = round(71 * scale), round(13 * scale), round(85 * scale)
    left = (width - 14 * glyph - 13 * gap) // 2
    for index in range(14):
        x0 = left + index * (glyph + gap)
        for y in (top, top + glyph // 2, top + glyph - stroke):
            picture[y:y + stroke, x0:x0 + glyph] = 170
        for x in (x0 + glyph // 4, x0 + 3 * glyph // 4):
            picture[top:top + glyph, x:x + round(stem * scale)] = 170
    return picture


def strips_at_analysis_size(stroke: int, picture_width: int = 1920, stem: int = 6) -> dict[str, list]:
    """The pre-scan's strips of three such lines as the segmenter sees them: the band scaled to
    ``analysis_width`` (the columns the line spans, as the detector's box would give them)."""
    view = analysis_view(line_picture(picture_width, stroke, stem), SETTINGS.analysis_width)
    columns = np.flatnonzero((view > 110).any(axis=0))
    return {"y": [(view, int(columns[0]), int(columns[-1]) + 1)] * 3}


@pytest.mark.parametrize("stroke, expected", [(2, 960), (6, None)])
def test_hairline_strokes_are_analysed_finer_and_regular_ones_are_not(stroke, expected):
    """Horizontal strokes 2 px thick at 1920 px are 0.67 px at 640: they fall under the mask's
    contrast, the stems alone fill little of the line's box; 6 px thick (2 px at 640) they stay."""
    strips = strips_at_analysis_size(stroke)
    appearance = learn_appearance(strips, SETTINGS)
    density = line_density(strips["y"], settings_for(appearance, SETTINGS))
    assert (density < SETTINGS.thin_line_density) == (expected is not None)
    assert _thin_lines(strips, appearance, SETTINGS) == (expected is not None)


def test_lines_with_no_stroke_left_at_the_analysis_size_are_analysed_finer():
    """Stems and bars all 1 px thick at 1920 px (a third of a pixel at 640): the pre-scan found
    the lines, but the text test the video gets sees no stroke in any of them (no density at all)."""
    strips = strips_at_analysis_size(1, stem=1)
    appearance = learn_appearance(strips, SETTINGS)
    assert line_density(strips["y"], settings_for(appearance, SETTINGS)) is None
    assert _thin_lines(strips, appearance, SETTINGS)


def test_no_line_found_is_no_thin_line():
    assert not _thin_lines({}, None, SETTINGS)


@pytest.mark.parametrize("picture_width, expected", [(640, None), (800, 800), (1280, 960), (1920, 960)])
def test_the_finer_size_is_capped_at_the_picture_width_and_never_the_analysis_size(picture_width, expected):
    assert _finer_width(SETTINGS, picture_width) == expected


@pytest.mark.slow
def test_a_thin_video_is_scanned_again_at_the_finer_size():
    """On the outlined 720p sample the lines are dense (analysed at 640); counted as thin, the
    keyframes are decoded again at 960 and the smallest line's strokes are measured there (a
    strip of another size would leave them unmeasured: 0)."""
    settings = load_settings()
    regular = scan_video(str(SAMPLE), settings)
    assert regular.segment_settings.analysis_width == 640 and regular.segment_settings.line_strokes > 0
    thin = scan_video(str(SAMPLE), replace(settings, segment=replace(settings.segment, thin_line_density=1.0)))
    assert thin.segment_settings.analysis_width == 960
    assert thin.segment_settings.line_strokes > regular.segment_settings.line_strokes


@pytest.mark.parametrize("picture_width, expected", [(640, 640), (1280, 640), (1920, 640), (2560, 854), (3840, 1280)])
def test_the_analysis_size_is_never_below_a_third_of_the_picture(picture_width, expected):
    assert _analysis_width(SETTINGS, picture_width) == expected


@pytest.mark.slow
def test_a_4k_videos_thin_outline_keeps_the_outline_test(tmp_path, cjk_font, tmp_path_factory):
    """Outlined Chinese at 4K whose outline is drawn 3 px wide in the picture's pixels (borders not
    scaled with the script): at 640 px, a sixth, the outline is gone and the video is read with the
    test for plain text; at a third of the picture (1280 px) it is seen."""
    video = _burned(tmp_path, tmp_path_factory, cjk_font, ("字幕的轮廓很细", "但仍然可见", "第三行字幕在这里"), (3840, 2160),
                    144, 3, "gradients=s=3840x2160:r=5:c0=0xa0b4c8:c1=0xc8b48c:x0=0:y0=0:x1=3840:y1=2160:speed=0.02:seed=1")
    settings = load_settings()
    scan = scan_video(str(video), settings)
    assert scan.segment_settings.analysis_width == 1280
    assert scan.segment_settings.dark_max == settings.segment.dark_max  # the outline test kept
    sixth = scan_video(str(video), replace(settings, segment=replace(settings.segment, max_analysis_downscale=6)))
    assert sixth.segment_settings.analysis_width == 640
    assert sixth.segment_settings.dark_max == 255  # read as plain text


def _burned(tmp_path, tmp_path_factory, font: Font, cues: tuple[str, ...], size: tuple[int, int], font_size: int,
            outline: float, background: str) -> Path:
    """``cues`` burned at ``size`` with an outline ``outline`` px wide in the picture's pixels (borders
    not scaled with the script) over ``background`` (a lavfi source), 5 frames a second and a keyframe
    each second (the pre-scan reads keyframes only)."""
    ass = tmp_path / "o.ass"
    events = "\n".join(f"Dialogue: 0,0:00:0{2 * i}.00,0:00:0{2 * i + 2}.00,Default,,0,0,0,,{text}"
                       for i, text in enumerate(cues))
    ass.write_text(f"""[Script Info]
ScriptType: v4.00+
PlayResX: {size[0]}
PlayResY: {size[1]}
ScaledBorderAndShadow: no

[V4+ Styles]
Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding
Style: Default,{font.family},{font_size},&H00FFFFFF,&H00FFFFFF,&H00000000,&H00000000,0,0,0,0,100,100,0,0,1,{outline},0,2,10,10,{size[1] // 18},1

[Events]
Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text
{events}
""", encoding="utf-8")
    video = tmp_path / f"o{outline}.mp4"
    run_ffmpeg("-f", "lavfi", "-i", background,
               "-t", "6", "-vf", f"ass=filename={_filter_path(ass)}:fontsdir={_filter_path(_font_dir(tmp_path_factory, font))}",
               "-c:v", "libx264", "-preset", "ultrafast", "-crf", "26", "-g", "5", "-pix_fmt", "yuv420p", str(video))
    return video


# Pale grain (light grass, a sunlit wall): a 1 px outline blended with it is no longer dark.
BRIGHT = "color=c=0xe0e8c0:s=1280x720:r=5,noise=c0s=16:allf=t+u:all_seed=3"
DARK = "color=c=0x303848:s=1280x720:r=5,noise=c0s=30:allf=t+u:all_seed=3"


NASKH = find_font(("NotoNaskhArabic-Regular.ttf",), ":lang=ar")  # fonts-noto-core: a light face
ARABIC = ("لا يوجد تعليق", "اختر طابعة شبكة", "عنوان غير صالح")


@pytest.mark.slow
@pytest.mark.skipif(NASKH is None, reason="needs fonts-noto-core (scripts/setup.sh --test installs it)")
def test_an_outline_thinner_than_an_analysis_pixel_is_analysed_finer(tmp_path, tmp_path_factory):
    """A light Arabic face with a 1.2 px outline at 720p over a pale grain: at 640 px the outline
    is blended with the picture beside under two thirds of the strokes (0.59-0.65), the lines look
    plain; at 960 px it shows beside 0.89-0.97 of them, and the video is analysed there with the
    outline test. Without the finer size (factor 1) it would be read as plain text."""
    video = _burned(tmp_path, tmp_path_factory, NASKH, ARABIC, (1280, 720), 46, 1.2, BRIGHT)
    settings = load_settings()
    scan = scan_video(str(video), settings)
    assert scan.segment_settings.analysis_width == 960
    assert scan.segment_settings.dark_max == settings.segment.dark_max  # the outline test kept
    coarse = scan_video(str(video), replace(settings, segment=replace(settings.segment, fine_analysis_factor=1.0)))
    assert coarse.segment_settings.analysis_width == 640 and coarse.segment_settings.dark_max == 255


@pytest.mark.slow
def test_plain_lines_stay_at_the_analysis_size(tmp_path, cjk_font, tmp_path_factory):
    """The same lines without an outline: plain at the finer size too, analysed at 640 px."""
    video = _burned(tmp_path, tmp_path_factory, cjk_font, ("字幕的轮廓很细", "但仍然可见", "第三行字幕在这里"), (1280, 720), 46, 0,
                    DARK)
    scan = scan_video(str(video), load_settings())
    assert scan.segment_settings.analysis_width == 640 and scan.segment_settings.dark_max == 255
