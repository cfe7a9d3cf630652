"""Lines whose text changes by a character or two (a counter, a name before each line): they are
no logo to black out (region), each change starts a new segment on its own frame (segmenter),
and the readings are not merged back as OCR jitter (alignment, reuse). Issue 24, class 5: 60
back-to-back numbered cues on a flat 640x360 picture were blacked out as static text, 0 cues,
no warning."""

from __future__ import annotations

import dataclasses

import cv2
import numpy as np
import pytest

from subextract.config import load_settings
from subextract.pipeline.run import _ReadingCache
from subextract.schema import Reading, TextLine
from subextract.stages.align import align
from subextract.stages.mask import carried_strokes, dense_lines_holding, glyph_replaced, min_text_pixels, text_mask
from subextract.stages.region import TextBox, split_static
from subextract.stages.segment import Segmenter
from conftest import FPS, _filter_path, _font_dir, _ass_time, run_ffmpeg
from test_segment import SETTINGS, background, segments_of, times, with_text

REGION = load_settings().region
ALIGN = load_settings().align
FONT = cv2.FONT_HERSHEY_SIMPLEX


# --------------------------------------------------------------------------------------------
# Region: a line that changes is no logo
# --------------------------------------------------------------------------------------------

def _counter_frame(index: int) -> tuple[np.ndarray, list[TextBox]]:
    """A flat picture with a logo and a centred line that differs from the other frames' only in
    its first digit (the keyframes of back-to-back numbered cues: 11, 21, 31 ...)."""
    frame = np.full((360, 640), 70, np.uint8)
    cv2.putText(frame, "TV9", (560, 40), FONT, 0.9, 255, 2)
    cv2.putText(frame, f"Subtitle number {index + 1}1", (190, 330), FONT, 0.9, 255, 2)
    return frame, [TextBox(index, 556, 16, 616, 46), TextBox(index, 186, 306, 466, 338)]


def test_a_line_changing_in_one_character_is_no_logo_but_the_logo_is():
    frames, boxes = zip(*(_counter_frame(i) for i in range(6)))
    static, moving = split_static([b for pair in boxes for b in pair], list(frames), 1.0, REGION)
    assert {b.x0 for b in static} == {556} and len(static) == 6
    assert {b.x0 for b in moving} == {186}


# --------------------------------------------------------------------------------------------
# Segmenter: a glyph replaced in place
# --------------------------------------------------------------------------------------------

def _counter_frames(kind: str, change: int = 30, count: int = 60) -> list[tuple[float, np.ndarray]]:
    return [(pts, with_text(background(i, kind), "SCENE 12" if i >= change else "SCENE 11"))
            for i, pts in enumerate(times(count))]


@pytest.mark.parametrize("kind", ["flat", "panning"])
def test_a_line_replaced_by_one_differing_in_a_character_splits_on_its_frame(kind):
    t = times(60)
    segments = segments_of(_counter_frames(kind), end=2.4)
    assert [(s.start, s.end) for s in segments] == [(t[0], t[30]), (t[30], 2.4)]
    assert segments[1].text_changed and segments[1].before_start == t[29]


def test_a_line_shown_on_and_off_one_frame_is_not_a_changed_glyph():
    """A glyph must show in every frame of the confirmation, not flicker for one."""
    frames = [(pts, with_text(background(i, "flat"), "SCENE 12" if i == 30 else "SCENE 11"))
              for i, pts in enumerate(times(60))]
    assert len(segments_of(frames, end=2.4)) == 1


def _stepping_figure(img: np.ndarray, i: int, hold: int) -> np.ndarray:
    """A bright stroke of the picture with dark edges (a bird, a hand) above the line, moved 4 px
    every ``hold`` frames: footage of a lower frame rate than the video's holds each picture."""
    x, y = 120 + 4 * (i // hold), 6
    stroke = np.array([(x, y + 14), (x + 8, y + 4), (x + 14, y + 10), (x + 22, y)], np.int32)
    cv2.polylines(img, [stroke], False, 10, 6)
    cv2.polylines(img, [stroke], False, 245, 2)
    return img


@pytest.mark.parametrize("kind", ["flat", "panning"])
@pytest.mark.parametrize("hold", [4, 6])
def test_steady_text_over_a_figure_moving_in_steps_is_one_segment(kind, hold):
    """The figure is lost at one place and found at the next at once, and held there, as a
    replaced glyph is: but it is off the text's line, and the text did not change (it was split
    every step, each piece read on its own with OCR jitter: one cue became ten)."""
    frames = [(pts, _stepping_figure(with_text(background(i, kind), "SCENE 11"), i, hold))
              for i, pts in enumerate(times(75))]
    assert [(s.start, s.end) for s in segments_of(frames, end=3.0)] == [(0.0, 3.0)]


def test_a_cut_between_static_pictures_changes_no_glyph():
    """Stable strokes of the picture all over the band change at a cut: some window may hold as
    many lost and new strokes as a glyph, but the text's glyphs are not what changed."""
    rng = np.random.default_rng(8)
    before = np.full((80, 640), 90, np.uint8)
    after = before.copy()
    for picture in (before, after):
        for _ in range(80):
            x, y = int(rng.integers(0, 620)), int(rng.integers(0, 70))
            cv2.line(picture, (x, y), (x + 12, y + 8), 0, 5)
            cv2.line(picture, (x, y), (x + 12, y + 8), 250, 1)
    text = with_text(before, "SCENE 11")
    core = text_mask(text, SETTINGS)
    later = [text_mask(with_text(after, "SCENE 11"), SETTINGS)] * 3
    lines = dense_lines_holding(core, min_text_pixels(core.size, SETTINGS), SETTINGS.min_line_density)
    assert not glyph_replaced(core, core, later, SETTINGS.repeat_glyph_change, lines)
    changed = [text_mask(with_text(before, "SCENE 12"), SETTINGS)] * 3
    assert glyph_replaced(core, core, changed, SETTINGS.repeat_glyph_change, lines)


# --------------------------------------------------------------------------------------------
# Alignment and reuse: another text, however alike, keeps its own reading and cue
# --------------------------------------------------------------------------------------------

def _reading(text: str) -> Reading:
    return Reading(lines=(TextLine(text=text, confidence=0.99, box=(0, 0, 10, 10)),))


def test_alike_readings_split_by_a_changed_glyph_stay_two_cues():
    first, second = segments_of(_counter_frames("flat"), end=2.4)
    cues = align([(first, _reading("SCENE 11")), (second, _reading("SCENE 12"))], ALIGN)
    assert [c.text for c in cues] == ["SCENE 11", "SCENE 12"]
    second.text_changed = False  # OCR jitter of one text (a misread digit) is still merged
    assert [c.text for c in align([(first, _reading("SCENE 11")), (second, _reading("SCENE 12"))], ALIGN)] == \
        ["SCENE 11"]


def test_a_split_whose_two_readings_differ_only_in_spacing_is_one_cue():
    """The segmenter saw a change (a cut behind the line moved its strokes) but both halves read the
    same characters, spaced differently around a Latin word: one subtitle, one cue."""
    first, second = segments_of(_counter_frames("flat"), end=2.4)
    assert second.text_changed
    cues = align([(first, _reading("密钥长度为256-bit")), (second, _reading("密钥长度为 256-bit"))], ALIGN)
    assert [(c.start, c.end) for c in cues] == [(first.start, second.end)]
    cues = align([(first, _reading("密钥长度为256-bit")), (second, _reading("密钥长度为 266-bit"))], ALIGN)
    assert len(cues) == 2


def test_a_segment_split_off_where_a_glyph_changed_is_read_again():
    first, second = segments_of(_counter_frames("flat"), end=2.4)
    cache = _ReadingCache(SETTINGS)
    cache.remember(first, 0)
    cache.follow(first, 0)
    assert cache.lookup(second) is None


# --------------------------------------------------------------------------------------------
# End to end: libass-burned numbered cues on a flat picture
# --------------------------------------------------------------------------------------------

def _flat_clip(path, fonts, cues, width: int, height: int, seconds: int, gop: int) -> None:
    ass = path.with_suffix(".ass")
    events = "\n".join(f"Dialogue: 0,{_ass_time(s)},{_ass_time(e)},Default,,0,0,0,,{text}" for s, e, text in cues)
    ass.write_text(f"""[Script Info]
ScriptType: v4.00+
PlayResX: {width}
PlayResY: {height}
ScaledBorderAndShadow: yes

[V4+ Styles]
Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding
Style: Default,{fonts[1]},{height // 12},&H00FFFFFF,&H00FFFFFF,&H00000000,&H00000000,0,0,0,0,100,100,0,0,1,0,0,2,10,10,{height // 18},1

[Events]
Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text
{events}
""", encoding="utf-8")
    run_ffmpeg("-f", "lavfi", "-i", f"color=c=0x406080:size={width}x{height}:rate={FPS}", "-t", str(seconds),
               "-vf", f"ass=filename={_filter_path(ass)}:fontsdir={_filter_path(fonts[0])}",
               "-c:v", "libx264", "-preset", "veryfast", "-g", str(gop), "-pix_fmt", "yuv420p", str(path))


@pytest.fixture(scope="module")
def latin_fonts(tmp_path_factory, latin_font):
    return _font_dir(tmp_path_factory, latin_font), latin_font.family


@pytest.mark.slow
def test_back_to_back_numbered_cues_on_a_flat_picture_are_each_read(tmp_path, latin_fonts):
    """Every keyframe of the pre-scan (one each 2 s) shows the line at the same place, differing
    in its digits: once that was a logo, blacked out, and not one cue came out."""
    cues = [(float(i), float(i + 1), f"Subtitle number {10 + 11 * i}") for i in range(14)]
    video = tmp_path / "numbered.mp4"
    _flat_clip(video, latin_fonts, cues, 640, 360, 14, gop=2 * FPS)
    from subextract import extract

    result = extract(str(video))
    assert [(c.start, c.end, c.text) for c in result.cues] == cues
    assert result.warnings == []


@pytest.mark.slow
def test_the_only_line_taken_for_a_logo_is_reported(tmp_path, latin_fonts):
    """A centred line that never changes is blacked out as a logo: with no other text found,
    the result says so instead of coming back empty without a word."""
    video = tmp_path / "still.mp4"
    _flat_clip(video, latin_fonts, [(0.0, 8.0, "The same words all along")], 640, 360, 8, gop=FPS)
    from subextract import extract

    result = extract(str(video))
    assert result.cues == []
    assert len(result.warnings) == 1 and "taken for a logo" in result.warnings[0]


# --------------------------------------------------------------------------------------------
# Segmenter: held pictures of lower-frame-rate footage
# --------------------------------------------------------------------------------------------

def _repeat_flags(pictures: list[np.ndarray]) -> list[bool]:
    segmenter = Segmenter(0, SETTINGS)
    flags = []
    for i, picture in enumerate(pictures):
        list(segmenter.push(i / 25, picture))
        flags.append(segmenter._repeat)
    return flags


@pytest.mark.parametrize("changed, moved", [(0.25, False), (0.2502, True)])
def test_a_frame_repeating_a_moved_picture_is_no_new_look_but_one_repeating_a_text_change_is(changed, moved):
    """A frame repeating the one before it (no pixel more than held_noise, 10, apart) after a
    change of more than held_moved_share (a quarter) of the band's pixels repeats a moved picture:
    it confirms no change of the text. After a smaller change (text changed over a still picture)
    the repeats are looks like any."""
    still = with_text(background(0, "flat"), "SCENE 11")
    step = still.copy()
    step.reshape(-1)[:round(changed * step.size)] += 11  # a pan's step: this share of the pixels (the top rows), by 11
    noisy = step.copy()
    noise = noisy.reshape(-1)[::7]
    noise[noise < 240] += 10  # compression noise within held_noise: still the same picture
    flags = _repeat_flags([still, still, step, step, noisy, step])
    assert flags == [False, False, False, moved, moved, moved]
    assert SETTINGS.held_moved_share == 0.25 and SETTINGS.held_noise == 10


def test_a_replacement_needs_two_looks_not_three_frames_of_one_held_picture():
    """Three frames confirm a line replaced in place, but two of them at least must be looks at
    the band: a moved picture and its two repeats are one look, and the fourth frame, a new
    picture still showing the replacement, confirms it from its first frame."""
    segmenter = Segmenter(0, SETTINGS)
    for i in range(5):
        list(segmenter.push(i / 25, with_text(background(0, "flat"), "SCENE 11")))
    segment = segmenter._open
    view = with_text(background(0, "flat"), "OTHER LINE")
    replaced = text_mask(view, SETTINGS)  # 55.4 % lost at their pixels
    confirmed = []
    for pts, repeat in ((0.20, False), (0.24, True), (0.28, True), (0.32, False)):
        segmenter._repeat = repeat
        confirmed.append(segmenter._track_replacement(segment, replaced, view, pts))
    assert confirmed == [False, False, False, True] and segment.replaced_start == 0.20
    segment.replaced_frames = segment.replaced_looks = 0
    segmenter._repeat = False
    assert [segmenter._track_replacement(segment, replaced, view, pts)
            for pts in (0.4, 0.44, 0.48)] == [False, False, True]


def _held_pan(i: int, hold: int, text: str) -> np.ndarray:
    """Frame ``i`` of footage of a lower frame rate than the video's: each picture of a pan, with a
    bright stroke of the picture on the text's line (a crack in sunlit rock beside the last glyph),
    held ``hold`` frames, the stroke 14 px further at each new picture (back at the tenth)."""
    step = i // hold
    img = with_text(background(step * hold, "panning"), text)
    x = 410 + 14 * (step % 10)
    stroke = np.array([(x, 54), (x + 6, 40), (x + 12, 50), (x + 18, 36)], np.int32)
    cv2.polylines(img, [stroke], False, 10, 6)
    cv2.polylines(img, [stroke], False, 245, 2)
    return img


@pytest.mark.parametrize("hold", [2, 3])
def test_a_stroke_stepping_beside_the_text_in_held_pictures_changes_no_glyph(hold):
    """Each new picture loses the stroke at one place of the line and shows it at the next, and its
    repeats confirm that: three frames of one held picture are one look, and the next picture
    moved the stroke again (the held-out Thai over rock was split at every step, 0.12 s)."""
    frames = [(pts, _held_pan(i, hold, "SCENE 11")) for i, pts in enumerate(times(60))]
    assert [(s.start, s.end) for s in segments_of(frames, end=2.4)] == [(0.0, 2.4)]


@pytest.mark.parametrize("hold", [2, 3])
def test_a_glyph_changed_with_a_new_held_picture_splits_on_its_frame(hold):
    """The counter changes on the frame a new picture comes (each picture, flat, brighter or darker
    than the one before: every pixel changes): its repeats are no looks, so the frames confirming
    the change run on to the next picture, and the split is on the change's own frame."""
    change, t = 30, times(75)

    def picture(i: int) -> np.ndarray:
        step = i // hold
        return with_text(np.full((80, 640), 80 + 16 * (step % 2), np.uint8), "SCENE 12" if i >= change else "SCENE 11")

    segments = segments_of([(pts, picture(i)) for i, pts in enumerate(t)], end=3.0)
    assert [(s.start, s.end) for s in segments] == [(t[0], t[change]), (t[change], 3.0)]
    assert segments[1].text_changed and segments[1].before_start == t[change - 1]


def _field_strokes() -> list[np.ndarray]:
    """A pan of stroke-like texture: 300 thin bright strokes with dark rims (foliage, a panned
    still), on a field twice the band's width, passing the outline test as text does."""
    rng = np.random.default_rng(7)
    xs, ys = rng.integers(0, 1280, 300), rng.integers(4, 76, 300)
    dx0, dy0, dx1, dy1 = (rng.integers(-8, 9, 300) if k % 2 == 0 else rng.integers(-10, 11, 300) for k in range(4))
    return [np.array([(x, y), (x + a, y + b), (x + c, y + d)], np.int32)
            for x, y, a, b, c, d in zip(xs, ys, dx0, dy0, dx1, dy1)]


_FIELD_STROKES = _field_strokes()


def _stroke_field(offset: int) -> np.ndarray:
    img = np.full((80, 640), 90, np.uint8)
    for stroke in _FIELD_STROKES:
        cv2.polylines(img, [stroke - [offset, 0]], False, 10, 5)
    for stroke in _FIELD_STROKES:
        cv2.polylines(img, [stroke - [offset, 0]], False, 245, 1)
    return img


def _field_pan(i: int, change: int | None = None, new: str = "", hold: int = 2) -> np.ndarray:
    """Frame ``i`` of footage holding each picture ``hold`` frames, the field a pixel further at
    each new picture, under "SCENE 11" (``new`` from frame ``change``)."""
    return with_text(_stroke_field(i // hold), new if change is not None and i >= change else "SCENE 11")


def test_strokes_a_pan_carried_are_found_where_it_carried_them():
    before, after = _stroke_field(0), _stroke_field(3)  # the picture moved 3 px to the left
    before_mask, after_mask = text_mask(before, SETTINGS), text_mask(after, SETTINGS)
    carried = carried_strokes(before, before_mask, after)
    assert carried is not None
    assert np.count_nonzero(after_mask & carried) >= 0.95 * np.count_nonzero(after_mask)
    assert np.count_nonzero(after_mask & before_mask) < 0.5 * np.count_nonzero(after_mask)  # not where they were
    assert carried_strokes(before, before_mask, before) is None  # no motion: nothing carried


@pytest.mark.parametrize("hold", [2, 3])
def test_a_cue_over_a_pan_of_stroke_like_texture_is_one_segment(hold):
    """The core of a young segment holds the field's strokes with the text's; each step of the pan
    took most of them from their pixels and brought as many new ones, packed like text: a
    "replacement" confirmed every 0.16 s (the held-out Thai over a panned forest: seven segments
    for one cue), and with pictures held three frames a "changed glyph" every 0.12 s. The new
    strokes were the frame before's, carried by the pan: no new text. The cue comes over the field
    at frame 30 and goes at frame 60, both on a new picture of the pan."""
    t = times(75)
    frames = [(pts, _field_pan(i, hold=hold) if 30 <= i < 60 else _stroke_field(i // hold)) for i, pts in enumerate(t)]
    assert [(s.start, s.end) for s in segments_of(frames, end=3.0)] == [(t[30], t[60])]


@pytest.mark.parametrize("change", [30, 31])  # on a new picture of the pan, and on its repeat
@pytest.mark.parametrize("new", ["OTHER LINE", "A NEW SUBTITLE HERE"])
def test_a_cue_replaced_over_a_pan_of_stroke_like_texture_splits_on_its_frame(change, new):
    """The new line's strokes are no stroke the pan carried: the replacement stands, on its own frame."""
    t = times(60)
    segments = segments_of([(pts, _field_pan(i, change, new)) for i, pts in enumerate(t)], end=2.4)
    assert [(s.start, s.end) for s in segments] == [(0.0, t[change]), (t[change], 2.4)]


def test_new_strokes_are_the_pans_only_where_it_carried_nearly_all_and_left_no_line():
    """``_carried_by_pan``: the field moved a pixel carries 99 % of its strokes. A sixth of the new
    strokes left where the pan puts none (a fade-in over a picture drifting by under a pixel,
    rounded to a pixel: 84 % carried) is no pan's; nor is a line of text among carried strokes."""
    segmenter = Segmenter(0, SETTINGS)
    before, after = _stroke_field(0), _stroke_field(1)
    reference = (before, text_mask(before, SETTINGS))
    field = text_mask(after, SETTINGS)
    assert segmenter._carried_by_pan(field, after, reference)
    specks = np.zeros_like(field)
    specks[::6, ::6] = True  # strewn, no line
    specks &= ~cv2.dilate(field.view(np.uint8), np.ones((3, 3), np.uint8)).view(bool)
    uncarried = round(0.16 / 0.84 * np.count_nonzero(field))
    ys, xs = np.nonzero(specks)
    strewn = field.copy()
    strewn[ys[:uncarried], xs[:uncarried]] = True
    assert not segmenter._carried_by_pan(strewn, after, reference)
    strewn_fewer = field.copy()
    strewn_fewer[ys[:uncarried // 3], xs[:uncarried // 3]] = True  # 94 % carried
    assert segmenter._carried_by_pan(strewn_fewer, after, reference)
    # A short line ("HI", 280 strokes against the field's 2,000) leaves 88 % carried: under a share
    # of 0.8 only the line tells it from the pan's strokes.
    with_line = field | text_mask(with_text(np.full((80, 640), 90, np.uint8), "HI"), SETTINGS)
    looser = Segmenter(0, dataclasses.replace(SETTINGS, replacement_carried_share=0.8))
    assert not looser._carried_by_pan(with_line, after, reference)
    assert looser._carried_by_pan(field, after, reference)
    assert not segmenter._carried_by_pan(field, before, reference)  # no motion: nothing carried


@pytest.mark.parametrize("hold, start", [(2, 21), (2, 22), (3, 31)])
def test_a_cue_coming_over_a_young_segment_of_a_panned_field_starts_on_its_frame(hold, start):
    """The field's strokes alone open segments; one a frame or two old when the cue comes keeps
    most of its strokes within a pixel (the pan moved them one), so the cue's line added to it
    looked like that segment's own text fading in, and the cue began with the field's frames. A
    fade-in keeps its strokes at their very pixels; a pan's strokes are not at theirs."""
    t = times(75)
    frames = [(pts, _field_pan(i, hold=hold) if start <= i < 60 else _stroke_field(i // hold))
              for i, pts in enumerate(t)]
    assert [(s.start, s.end) for s in segments_of(frames, end=3.0)] == [(t[start], t[60])]
