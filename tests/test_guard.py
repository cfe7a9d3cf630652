"""The recall guard (stages/guard.py) and what the segmenter does with the lines it vouches for:
a line the stroke mask cannot see gets a segment of its own, from the first frame showing it;
a line a segment already holds changes nothing; the detector looks at most once an interval,
only where the segmenter is unsure, and takes only centred lines of the subtitles' size."""

from __future__ import annotations

from dataclasses import replace

import cv2
import numpy as np
import pytest

from subextract.config import load_settings
from subextract.stages.guard import RecallGuard
from subextract.stages.mask import text_mask
from subextract.stages.segment import Segmenter
from test_segment import H, SETTINGS, W, _fill, _ys, background, times, with_text
from test_segment_styles import PLAIN

GUARD = load_settings().guard
FRAME = 0.04


def sky(i: int) -> np.ndarray:
    """A bright picture drifting slowly: a sky, snow, a white wall."""
    x = np.linspace(0, 1, W)[None, :]
    return np.repeat((205 + 12 * np.sin(6 * x + 0.15 * i)).astype(np.uint8), H, 0)


def faint(img: np.ndarray, text: str = "HELLO WORLD") -> np.ndarray:
    """White text at half opacity over ``img``: a few tens of levels above a bright picture."""
    out = img.copy()
    fill = _fill(text, _ys(1)[0])
    out[fill] = np.round(0.5 * out[fill] + 0.5 * 255).astype(np.uint8)
    return out


def text_box(text: str = "HELLO WORLD") -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(_fill(text, _ys(1)[0]))
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


def run(frames, vouches: dict[int, list] | None = None, settings=PLAIN):
    """Segments of ``frames``; ``vouches``: frame index → the lines the guard saw in it."""
    segmenter = Segmenter(0, replace(settings, look_back_frames=2 * 13))
    out = []
    for index, (pts, band) in enumerate(frames):
        if vouches and index in vouches:
            segmenter.vouch(vouches[index])
        out.extend(segmenter.push(pts, band))
    out.extend(segmenter.finish(frames[-1][0] + FRAME))
    return out


def faint_frames(first: int = 15, end: int = 45, count: int = 60):
    return [(t, faint(sky(i)) if first <= i < end else sky(i)) for i, t in enumerate(times(count))]


# --------------------------------------------------------------------------------------------
# The segmenter's side: Segmenter.vouch
# --------------------------------------------------------------------------------------------

def test_the_mask_cannot_see_half_transparent_text_over_a_bright_picture():
    assert np.count_nonzero(text_mask(faint(sky(0)), PLAIN)) == 0
    assert run(faint_frames()) == []


def test_a_line_the_mask_cannot_see_gets_a_segment_from_its_first_frame():
    """The guard saw the line at frame 22, seven frames after it appeared: the segment opens
    there and looks back over the frames whose strokes stand as high (still_shown)."""
    ts = times(60)
    segments = run(faint_frames(), vouches={22: [text_box()]})
    assert [(s.start, s.end) for s in segments] == [(ts[15], ts[45])]
    assert segments[0].before_start == ts[14]


def test_a_line_the_open_segment_holds_changes_nothing():
    ts = times(60)
    frames = [(t, with_text(background(i, "panning"), "HELLO WORLD") if 10 <= i < 50 else background(i, "panning"))
              for i, t in enumerate(ts)]
    alone = run(frames, settings=SETTINGS)
    vouched = run(frames, vouches={12: [text_box()], 30: [text_box()]}, settings=SETTINGS)
    assert [(s.start, s.end) for s in vouched] == [(s.start, s.end) for s in alone] == [(ts[10], ts[50])]


def test_a_vouch_where_no_strokes_stand_out_opens_nothing():
    assert run([(t, sky(i)) for i, t in enumerate(times(40))], vouches={10: [text_box()]}) == []


def test_a_vouched_line_is_read_though_its_strokes_are_strewn():
    """A dotted line (strokes spread thinly, as the mask leaves a line over city lights or snow)
    fails the tests of a text line; the detector saw a line there, so it is read."""
    ts = times(40)
    dotted = background(0, "flat").copy()
    for x in range(150, 490, 30):
        cv2.line(dotted, (x, 42), (x, 58), 250, 1)
    frames = [(t, dotted if 5 <= i < 35 else background(0, "flat")) for i, t in enumerate(ts)]
    assert run(frames) == []
    segments = run(frames, vouches={8: [(140, 38, 500, 62)]})
    assert [(s.start, s.end) for s in segments] == [(ts[5], ts[35])]


def test_the_segmenter_is_unsure_until_its_text_settles_and_the_guard_has_seen_its_line():
    segmenter = Segmenter(0, SETTINGS)
    assert not segmenter.sure
    band = with_text(background(0, "flat"), "HELLO WORLD")
    ts = times(SETTINGS.confirm_frames + 3)
    for t in ts[:SETTINGS.confirm_frames]:
        list(segmenter.push(t, band))
        assert not segmenter.sure
    segmenter.vouch([])  # the detector saw no line in this frame: it keeps looking
    list(segmenter.push(ts[SETTINGS.confirm_frames], band))
    assert not segmenter.sure
    segmenter.vouch([text_box()])
    list(segmenter.push(ts[SETTINGS.confirm_frames + 1], band))
    assert segmenter.sure


def test_a_line_elsewhere_leaves_a_denied_segment_as_it_is():
    """Denied (the detector missed its line once), a segment the text test is sure of is not ended
    by a line elsewhere at a later look: that split a Thai cue, its second half read as nothing."""
    ts = times(60)
    frames = [(t, with_text(background(0, "flat"), "HELLO WORLD") if 10 <= i < 50 else background(0, "flat"))
              for i, t in enumerate(ts)]
    segments = run(frames, vouches={15: [], 25: [(200, 2, 440, 16)]}, settings=SETTINGS)
    assert [(s.start, s.end) for s in segments] == [(ts[10], ts[50])]


def test_a_look_that_saw_a_line_elsewhere_leaves_the_segment_sure():
    """Translucent text over snow: the detector saw the text the mask missed beside a core of the
    picture's strokes. That says nothing against the core: the guard does not keep looking (it
    took the segment for a denied one and cut the cue into 3-frame segments)."""
    segmenter = Segmenter(0, SETTINGS)
    band = with_text(background(0, "flat"), "HELLO WORLD")
    ts = times(SETTINGS.confirm_frames + 1)
    for t in ts[:-1]:
        list(segmenter.push(t, band))
    segmenter.vouch([(200, 2, 440, 16)])
    list(segmenter.push(ts[-1], band))
    assert segmenter.sure


def street(i: int) -> np.ndarray:
    """A still street: poles and road markings, thin bright strokes with dark edges that the
    plain-text test takes for text, too many for a short note over them to split a segment."""
    img = np.full((H, W), 100, np.uint8)
    for x in range(10, W, 23):
        cv2.line(img, (x, 0), (x + 15, H), 20, 5)
        cv2.line(img, (x, 0), (x + 15, H), 235, 2)
    return img


def street_with_a_note():
    return [(t, with_text(street(i), "HI THERE") if 30 <= i < 60 else street(i)) for i, t in enumerate(times(80))]


def test_a_note_over_strokes_the_guard_saw_no_line_in_gets_a_segment_of_its_own():
    """Chinese dialogue below, English notes above a still street: the street's strokes were one
    segment of the whole video, read as nothing, and the notes were lost. The guard saw no line
    over that segment (frame 5), then a line bringing strokes of its own (frame 33): the note's
    segment starts and ends with it, without the street's strokes."""
    ts = times(80)
    assert [(s.start, s.end) for s in run(street_with_a_note(), settings=SETTINGS)] == [(ts[0], ts[-1] + FRAME)]
    segments = run(street_with_a_note(), vouches={5: [], 33: [text_box("HI THERE")]}, settings=SETTINGS)
    note = [s for s in segments if s.start == ts[30]]
    assert [(s.start, s.end) for s in note] == [(ts[30], ts[60])]
    (x0, _, x1, _), = note[0].lines
    assert (x1 - x0) < W / 3  # the note's own line, not the street's strokes across the band


def test_a_note_the_detector_sees_late_keeps_the_strokes_it_brought_meanwhile():
    """The detector missed a Thai cue over a denied segment at first and saw it 0.8 s later; by
    then the text had voted into the segment's core. The strokes left out of the line's segment
    are the core as it was denied, not as it is: else the line's own strokes went too and its
    segment read nothing."""
    ts = times(120)

    def picture(i: int) -> np.ndarray:  # the street from frame 20, the note over it from 30 to 100
        if i < 20:
            return background(0, "flat")
        return with_text(street(i), "HI THERE") if 30 <= i < 100 else street(i)

    # Seen at frame 48, the note has shown in 18 of the segment's 28 frames: it is in its core.
    segments = run([(t, picture(i)) for i, t in enumerate(ts)], vouches={25: [], 48: [text_box("HI THERE")]},
                   settings=SETTINGS)
    note = [s for s in segments if s.start == ts[30]]
    assert [(s.start, s.end) for s in note] == [(ts[30], ts[100])]


def test_a_line_over_strokes_the_guard_never_denied_vouches_for_them():
    """Without a look that saw nothing there first, the line is taken for the segment's own."""
    ts = times(80)
    segments = run(street_with_a_note(), vouches={33: [text_box("HI THERE")]}, settings=SETTINGS)
    assert [(s.start, s.end) for s in segments] == [(ts[0], ts[-1] + FRAME)]


def test_a_note_beside_the_pictures_strokes_opens_its_own_segment_where_the_guard_sees_it():
    """A tripod on a still lawn: strokes the text test is sure of, at one side of the band, one
    segment. A cue over the lawn beside it adds too few strokes for the mask to split that segment
    (it began 0.44 s late, at the next cut). The guard sees the line where the core has no strokes
    and the frame's mask a line of its own: the cue's segment starts where it first showed (the
    look back over the frames before the guard's) and leaves the tripod's strokes out."""
    ts = times(80)

    def tripod(i: int) -> np.ndarray:
        img = street(i)
        img[:, :3 * W // 4] = 100
        return img

    frames = [(t, with_text(tripod(i), "HI") if 30 <= i < 60 else tripod(i)) for i, t in enumerate(ts)]
    assert [(s.start, s.end) for s in run(frames, settings=SETTINGS)] == [(ts[0], ts[-1] + FRAME)]
    segments = run(frames, vouches={36: [text_box("HI")]}, settings=SETTINGS)
    note = [s for s in segments if s.start == ts[30]]
    assert [(s.start, s.end) for s in note] == [(ts[30], ts[60])]
    (x0, _, x1, _), = note[0].lines
    assert x1 < 3 * W // 4  # the note's line alone


@pytest.mark.parametrize("core_strokes, added, own", [(0, 60, True), (400, 60, False), (400, 240, True)])
def test_a_line_brings_its_own_text_with_strokes_like_those_already_there(core_strokes, added, own):
    """A note over a still street brings about as many strokes as the street has in its place; the
    strokes of the core's own text that it had not kept (thin Thai strokes, a detector that missed the
    line at one look and saw it at the next) are a tenth of them, and split the cue."""
    segmenter = Segmenter(0, SETTINGS)
    line = np.zeros((H, W), bool)
    line[2:22, 20:300] = True
    core = np.zeros((H, W), bool)
    core[4:20, 20:20 + core_strokes // 16] = True  # a dense block of core_strokes
    plain = core.copy()
    plain[4:20, 200:200 + added // 16] = True  # and a dense block of strokes off the core
    assert segmenter._brings_own_line(core, plain, line) is own


def test_a_denied_segments_own_line_seen_later_vouches_for_it():
    """A detector that missed a subtitle once and sees it later: the line brings no strokes of its
    own, so the segment goes on, now vouched for."""
    ts = times(60)
    frames = [(t, with_text(background(i, "panning"), "HELLO WORLD") if 10 <= i < 50 else background(i, "panning"))
              for i, t in enumerate(ts)]
    segments = run(frames, vouches={15: [], 30: [text_box()]}, settings=SETTINGS)
    assert [(s.start, s.end) for s in segments] == [(ts[10], ts[50])]


def test_the_guards_first_look_at_a_settled_segment_only_checks_it():
    """A line elsewhere in the band (scene text, a detector's box off the subtitle) on the first
    look at a segment the text test is sure of neither ends it nor opens another."""
    ts = times(60)
    frames = [(t, with_text(background(0, "flat"), "HELLO WORLD") if 10 <= i < 50 else background(0, "flat"))
              for i, t in enumerate(ts)]
    elsewhere = (200, 2, 440, 16)
    segments = run(frames, vouches={20: [elsewhere, text_box()]}, settings=SETTINGS)
    assert [(s.start, s.end) for s in segments] == [(ts[10], ts[50])]


# --------------------------------------------------------------------------------------------
# The guard's side: when it looks and what it takes
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def detector():
    from subextract.stages.ocr.rapid import RapidTextDetector

    return RapidTextDetector.standalone(480, 1)


def test_the_guard_looks_at_most_once_an_interval(detector):
    guard = RecallGuard(detector, GUARD, 30.0, [H], 0.2)
    band = background(0, "flat")
    looked = []
    for t in times(250):  # 10 s at 25 fps
        if guard.due(t):
            guard.check(t, [band])
            looked.append(t)
    assert guard.calls == len(looked) == 20
    assert all(b - a >= GUARD.interval - 1e-6 for a, b in zip(looked, looked[1:]))


def test_the_guard_takes_centred_lines_of_the_subtitles_size(detector):
    band = np.full((120, 960), 60, np.uint8)
    (width, height), _ = cv2.getTextSize("Where are you going", cv2.FONT_HERSHEY_SIMPLEX, 1.2, 3)
    left = (960 - width) // 2
    cv2.putText(band, "Where are you going", (left, 80), cv2.FONT_HERSHEY_SIMPLEX, 1.2, 250, 3)  # centred
    cv2.putText(band, "EXIT 12", (20, 40), cv2.FONT_HERSHEY_SIMPLEX, 1.0, 250, 2)  # a sign at the side
    guard = RecallGuard(detector, GUARD, 40.0, [120], 0.2)
    lines = guard.check(0.0, [band])
    assert len(lines) == 1 and lines[0].band == 0
    x0, y0, x1, y1 = lines[0].box
    assert x0 <= left + 10 and x1 >= left + width - 10 and y0 <= 80 - height + 5 and y1 >= 75
    # Lines of another size are scene text, not the subtitles the pre-scan saw.
    assert RecallGuard(detector, GUARD, 15.0, [120], 0.2).check(0.0, [band]) == []


def test_the_guard_reads_every_band_in_one_call(detector):
    top, bottom = np.full((100, 960), 60, np.uint8), np.full((100, 960), 60, np.uint8)
    cv2.putText(bottom, "Where are you going", (290, 70), cv2.FONT_HERSHEY_SIMPLEX, 1.2, 250, 3)
    guard = RecallGuard(detector, GUARD, 40.0, [100, 100], 0.2)
    lines = guard.check(0.0, [top, bottom])
    assert guard.calls == 1 and [line.band for line in lines] == [1]
    assert 40 < (lines[0].box[1] + lines[0].box[3]) / 2 < 70


# --------------------------------------------------------------------------------------------
# End to end: half-transparent white text over a bright moving picture, burned with libass
# --------------------------------------------------------------------------------------------

SKY = "gradients=c0=0x6fa0d8:c1=0xa8c4e0:c2=0xc0d4ec:c3=0x8fb8e0:speed=0.03:n=4:seed=3"
FAINT_CUES = [(0.80, 2.80, "今天天气很好我们出去走走"), (3.60, 5.60, "你说的这件事我不太明白")]


@pytest.fixture(scope="module")
def translucent_clip(media, tmp_path_factory, cjk_font):
    from conftest import burn_subtitles, write_ass, _font_dir

    ass = write_ass(media / "translucent.ass", FAINT_CUES, cjk_font.family)
    # Half-transparent white, no outline: the style line of write_ass, made see-through and bare.
    text = ass.read_text(encoding="utf-8").replace("&H00FFFFFF,&H00FFFFFF,&H00000000,&H00000000,0,0,0,0,100,100,0,0,1,2.5",
                                                  "&H80FFFFFF,&H80FFFFFF,&H00000000,&H00000000,0,0,0,0,100,100,0,0,1,0")
    ass.write_text(text, encoding="utf-8")
    return burn_subtitles(media / "translucent.mp4", ass, _font_dir(tmp_path_factory, cjk_font), SKY)


@pytest.mark.slow
def test_half_transparent_text_over_a_bright_picture_is_found_by_the_guard(translucent_clip):
    from subextract import extract

    without = load_settings(None, {"guard": {"enabled": False}})
    assert extract(str(translucent_clip), without).cues == []
    result = extract(str(translucent_clip))
    assert [c.text for c in result.cues] == [text for _, _, text in FAINT_CUES]
    # The guard looked at most once every interval, and only where no text was sure.
    assert 0 < result.stats.guard_calls <= 6.0 / GUARD.interval + 1


def test_words_the_detector_cut_apart_are_one_line():
    """A faint line comes back from the detector as words: the guard vouches for the whole line
    (a word alone is not centred, and the segmenter must find the line's strokes in its area)."""
    words = [(300, 40, 360, 56), (380, 43, 420, 56), (440, 41, 640, 57)]
    guard = RecallGuard(lambda picture: words, GUARD, GUARD.line_height, [120], 0.2)
    assert [line.box for line in guard.check(0.0, [np.zeros((120, 960), np.uint8)])] == [(300, 40, 640, 57)]


def test_lines_one_above_the_other_stay_two():
    lines = [(300, 10, 660, 26), (320, 40, 640, 56)]
    guard = RecallGuard(lambda picture: lines, GUARD, GUARD.line_height, [120], 0.2)
    assert [line.box for line in guard.check(0.0, [np.zeros((120, 960), np.uint8)])] == lines


def test_a_line_over_the_open_segments_strewn_strokes_vouches_for_it_from_its_start():
    """The mask saw specks where the line is from its first frame, strewn, no text line; the
    guard sees a line there long after (past the frames a new segment looks back over): it is
    the same text, one segment from the first frame, not cut where the guard looked."""
    ts = times(80)
    rng = np.random.default_rng(1)
    specks = background(0, "flat").copy()
    for x, y in zip(rng.integers(150, 490, 60), rng.integers(40, 60, 60)):
        specks[y:y + 2, x:x + 2] = 250
    frames = [(t, specks if 5 <= i < 75 else background(0, "flat")) for i, t in enumerate(ts)]
    assert run(frames) == []
    segments = run(frames, vouches={45: [(140, 38, 500, 62)]})
    assert [(s.start, s.end) for s in segments] == [(ts[5], ts[75])]


def test_a_thing_one_glyph_wide_at_the_middle_is_no_line():
    """A lamp at the band's middle looks like a letter to the detector every time it looks."""
    found = [(470, 40, 492, 57), (300, 80, 660, 96)]
    guard = RecallGuard(lambda picture: found, GUARD, GUARD.line_height, [120], 0.2)
    assert [line.box for line in guard.check(0.0, [np.zeros((120, 960), np.uint8)])] == [(300, 80, 660, 96)]


def test_a_small_line_vouched_inside_settling_text_keeps_the_texts_own_lines():
    """The guard's box beside a line the mask sees, on its rows, adds no line and cuts none: the
    segment's lines are still the whole text's (a word's box had replaced a two-line cue's)."""
    ts = times(60)
    frames = [(t, with_text(background(0, "flat"), "HELLO WORLD") if 10 <= i < 50 else background(0, "flat"))
              for i, t in enumerate(ts)]
    x0, y0, x1, y1 = text_box()
    alone = run(frames, settings=SETTINGS)
    vouched = run(frames, vouches={11: [(x1 + 10, y0, x1 + 60, y1)]}, settings=SETTINGS)
    assert len(alone) == len(vouched) == 1 and len(vouched[0].lines) == len(alone[0].lines) == 1
    (ax0, ay0, ax1, ay1), (vx0, vy0, vx1, vy1) = alone[0].lines[0], vouched[0].lines[0]
    assert (vy0, vy1) == (ay0, ay1) and vx0 <= ax0 and vx1 >= ax1
