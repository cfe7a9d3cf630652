"""The fewest strokes that make text follow this video's own lines (issue 13): a thin-stroke line in
a tall band fills fewer mask pixels than the band's share asks for, and is kept once the pre-scan
has measured what its lines fill; the few stable specks a static picture leaves at the band's
edge, as many but strewn over several rows, are refused."""

from __future__ import annotations

from dataclasses import replace

import cv2
import numpy as np
import pytest

from subextract.config import load_settings
from subextract.errors import SubextractError
from subextract.stages.appearance import Appearance, settings_for, smallest_line_strokes
from subextract.stages.mask import min_text_pixels, text_mask
from subextract.stages.segment import Segmenter

DEFAULT = load_settings().segment
# Plain white subtitles (no outline), as settings_for makes the text test for them.
PLAIN = settings_for(Appearance(plane="y", outlined=False, level=250, lift=120, lines=4), DEFAULT)
H, W = 120, 640  # a tall band at analysis size: 1280x240 pixels of a 720p frame
_RNG = np.random.default_rng(13)
_TEXTURE = cv2.GaussianBlur(_RNG.integers(0, 256, (H, W * 3)).astype(np.float32), (0, 0), 5)
_TEXTURE = ((_TEXTURE - _TEXTURE.min()) / np.ptp(_TEXTURE) * 120 + 20).astype(np.uint8)


# Rows and columns of glyph-sized specks strewn over the band's height, one a row.
STREWN = ([5, 22, 40, 58, 76, 94, 112], [300, 340, 320, 290, 350, 310, 330])


def picture(i: int) -> np.ndarray:
    """Frame ``i`` of a dim panning picture."""
    return _TEXTURE[:, 6 * i: 6 * i + W].copy()


def _band_with(img: np.ndarray, parts: list[tuple[str, int]], y: int = 70) -> np.ndarray:
    """Plain white thin-stroke text pieces, each at its own fixed column."""
    img = img.copy()
    for text, x in parts:
        cv2.putText(img, text, (x, y), cv2.FONT_HERSHEY_SIMPLEX, 0.5, 250, 1, cv2.LINE_AA)
    return img


def thin_line(img: np.ndarray, text: str = "a thin line", y: int = 70) -> np.ndarray:
    """Plain white text with one-pixel strokes, centred: what thin scripts leave in the mask."""
    (width, _), _ = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, 0.5, 1)
    return _band_with(img, [(text, (W - width) // 2)], y)


def specks(img: np.ndarray, rows: list[int], columns: list[int]) -> np.ndarray:
    """Small bright crosses, glyph-sized (leaves against the sky), one at each (row, column)."""
    img = img.copy()
    for y, x in zip(rows, columns):
        cv2.line(img, (x - 4, y - 4), (x + 4, y + 4), 250, 1)
        cv2.line(img, (x - 4, y + 4), (x + 4, y - 4), 250, 1)
    return img


def segments_of(bands: list[np.ndarray], settings) -> list:
    segmenter = Segmenter(0, settings)
    out = []
    for i, band in enumerate(bands):
        out.extend(segmenter.push(i / 25, band))
    out.extend(segmenter.finish(len(bands) / 25))
    return out


def measured(settings, line: np.ndarray):
    """``settings`` with the line's strokes measured as the pipeline measures the pre-scan's lines."""
    columns = np.flatnonzero(text_mask(line, settings).any(axis=0))
    return replace(settings, line_strokes=smallest_line_strokes([(line, int(columns[0]), int(columns[-1]) + 1)],
                                                                settings))


def test_a_thin_stroke_line_in_a_tall_band_is_kept_by_the_videos_own_minimum():
    frames = [thin_line(picture(i)) for i in range(30)]
    strokes = np.count_nonzero(text_mask(frames[0], PLAIN))
    assert strokes < PLAIN.text_hold * PLAIN.min_text_share * H * W  # the band's share alone loses it
    assert segments_of(frames, PLAIN) == []
    settings = measured(PLAIN, thin_line(picture(40)))
    assert settings.line_strokes >= 0.8 * strokes
    segments = segments_of([picture(i) for i in range(31, 36)] + frames + [picture(i) for i in range(36, 46)], settings)
    assert [(round(s.start * 25), round(s.end * 25)) for s in segments] == [(5, 35)]
    assert len(segments[0].lines) == 1


def test_static_specks_strewn_at_the_band_edge_are_refused():
    """As many stable strokes as the video's minimum, but in several rows, none holding it."""
    settings = measured(PLAIN, thin_line(picture(40)))
    rows, columns = STREWN
    frames = [specks(picture(i), rows, columns) for i in range(40)]
    strokes = np.count_nonzero(text_mask(frames[0], settings))
    assert strokes >= min_text_pixels(H * W, settings)
    assert segments_of(frames, settings) == []
    # The same specks gathered in one row, as glyphs of a line are, make text.
    in_a_row = [specks(picture(i), [60] * len(rows), list(range(240, 240 + 25 * len(rows), 25))) for i in range(40)]
    assert len(segments_of(in_a_row, settings)) == 1


def test_the_videos_minimum_is_bounded():
    band = H * W
    assert min_text_pixels(band, DEFAULT) == DEFAULT.min_text_share * band  # no line measured
    assert min_text_pixels(band, replace(DEFAULT, line_strokes=10_000)) == DEFAULT.min_text_share * band
    assert min_text_pixels(band, replace(DEFAULT, line_strokes=20)) == DEFAULT.min_line_strokes
    assert min_text_pixels(band, replace(DEFAULT, line_strokes=200)) == DEFAULT.line_text_share * 200
    # the band's share keeps a line this large: it stays
    assert min_text_pixels(band, replace(DEFAULT, line_strokes=int(DEFAULT.min_text_share * band) + 1)) == \
        DEFAULT.min_text_share * band


def test_lines_the_mask_lost_are_not_measured():
    line = thin_line(picture(0))
    bright = np.full_like(line, 250)  # plain text over a white picture: no strokes stand out
    assert smallest_line_strokes([(bright, 200, 440), (line, 200, 440)], PLAIN) == \
        smallest_line_strokes([(line, 200, 440)], PLAIN) > 0
    assert smallest_line_strokes([(bright, 200, 440)], PLAIN) == 0


@pytest.mark.parametrize("key, value", [("line_text_share", 1.5), ("min_line_strokes", -1)])
def test_line_minimum_settings_are_validated(key, value):
    with pytest.raises(SubextractError, match=f"segment.{key}"):
        load_settings(overrides={"segment": {key: value}})


def test_a_short_word_in_a_video_of_long_lines_is_still_text():
    """Where the video's lines fill more than the band's share asks, that share stays the minimum,
    and a short word that text holding keeps is kept (no one-line test for it)."""
    from test_segment import H as SH, W as SW, background, with_text

    long_line = with_text(background(0, "flat"), "A LONG SUBTITLE LINE")
    columns = np.flatnonzero(text_mask(long_line, DEFAULT).any(axis=0))
    settings = replace(DEFAULT, line_strokes=smallest_line_strokes(
        [(long_line, int(columns[0]), int(columns[-1]) + 1)], DEFAULT))
    word = with_text(background(0, "flat"), "IT")
    columns = np.flatnonzero(text_mask(word, DEFAULT).any(axis=0))
    word[:, columns.max() - (columns.max() - columns.min()) // 5:] = 90
    strokes = np.count_nonzero(text_mask(word, settings))
    assert min_text_pixels(SH * SW, settings) == DEFAULT.min_text_share * SH * SW
    assert settings.text_hold * DEFAULT.min_text_share * SH * SW <= strokes < min_text_pixels(SH * SW, settings)
    segmenter = Segmenter(0, settings)
    segments = [s for i in range(30) for s in segmenter.push(i / 25, word)] + list(segmenter.finish(1.2))
    assert [(s.start, s.end) for s in segments] == [(0.0, 1.2)]


def test_a_line_added_among_changing_background_strokes_starts_a_new_segment():
    """Static specks make an open segment; a subtitle appears while other specks come and go all
    over the band: its line is found among them and starts a segment at its first frame."""
    rng = np.random.default_rng(5)
    rows, columns = STREWN

    def frame(i: int, text: bool) -> np.ndarray:
        img = specks(picture(0), rows + list(rng.integers(6, H - 6, 16)), columns + list(rng.integers(6, W - 6, 16)))
        if text:
            (width, _), _ = cv2.getTextSize("a thin subtitle line", cv2.FONT_HERSHEY_SIMPLEX, 0.8, 1)
            cv2.putText(img, "a thin subtitle line", ((W - width) // 2, 70), cv2.FONT_HERSHEY_SIMPLEX, 0.8, 250, 1,
                        cv2.LINE_AA)
        return img

    settings = measured(PLAIN, thin_line(picture(40)))
    segments = segments_of([frame(i, text=i >= 20) for i in range(50)], settings)
    assert [round(s.start * 25) for s in segments][-1:] == [20]


def test_a_thin_line_over_static_specks_starts_its_own_segment():
    """Static specks strewn over the band's rows hold a segment open (as many strokes as the video's
    own minimum, no text line among them); a thin subtitle line, fewer strokes than the band's share,
    then appears: it starts a segment at its first frame instead of joining the specks' (whose cue
    would begin in the gap before the subtitle)."""
    settings = measured(PLAIN, thin_line(picture(40)))
    rows, columns = STREWN
    frames = [specks(picture(0), rows, columns) for _ in range(20)]
    frames += [thin_line(specks(picture(0), rows, columns), "a thin subtitle line", y=64) for _ in range(30)]
    line_strokes = np.count_nonzero(text_mask(frames[-1], settings) & ~text_mask(frames[0], settings))
    assert min_text_pixels(H * W, settings) <= line_strokes < settings.min_text_share * H * W
    segments = segments_of(frames, settings)
    assert [(round(s.start * 25), round(s.end * 25)) for s in segments] == [(20, 50)]


def test_specks_beside_a_line_that_a_cut_takes_away_do_not_end_its_text():
    """A few stable picture strokes in a short row beside the line are part of the core; a cut
    to another picture takes them away while the line stays: the same text goes on."""
    settings = measured(PLAIN, thin_line(picture(40)))

    def blob(img: np.ndarray) -> np.ndarray:
        img = img.copy()
        cv2.rectangle(img, (20, 100), (44, 103), 250, -1)
        return img

    before = [blob(thin_line(picture(0))) for _ in range(30)]
    after = [thin_line(picture(60)) for _ in range(30)]
    core = text_mask(before[0], settings)
    speck_strokes = np.count_nonzero(core[95:110, :80])
    assert speck_strokes > settings.change_threshold * np.count_nonzero(core)  # the cut loses that share
    segments = segments_of(before + after, settings)
    assert [(round(s.start * 25), round(s.end * 25)) for s in segments] == [(0, 60)]


def test_a_thin_line_added_to_a_few_stable_strokes_in_a_row_starts_its_own_segment():
    """A few stable picture strokes gathered in one row hold a segment open as a line of text would;
    a thin subtitle line with fewer strokes than the band's share, but more than those, then appears
    elsewhere in the band: it starts a segment at its first frame (its cue would otherwise begin
    with the picture's strokes, in the gap before it)."""
    settings = measured(PLAIN, thin_line(picture(40)))
    row = ([20] * 5, list(range(270, 395, 25)))
    frames = [specks(picture(0), *row) for _ in range(20)]
    frames += [thin_line(specks(picture(0), *row), "a thin subtitle line", y=80) for _ in range(30)]
    before, after = text_mask(frames[0], settings), text_mask(frames[-1], settings)
    assert np.count_nonzero(before) < np.count_nonzero(after & ~before) < settings.min_text_share * H * W
    segments = segments_of(frames, settings)
    assert [(round(s.start * 25), round(s.end * 25)) for s in segments][-1:] == [(20, 50)]


def test_a_thin_line_replaced_in_place_among_static_specks_starts_a_new_segment():
    """Static specks strewn over the band's rows spoil the one box of the text test; a thin line is
    replaced by another at the very same place: the new text starts a segment at its first frame."""
    settings = measured(PLAIN, thin_line(picture(40)))
    rows, columns = [5, 22, 40, 94, 112], [300, 340, 320, 310, 330]
    frames = [_band_with(specks(picture(0), rows, columns), [("abcd efgh ijkl", 200), ("same", 350)])
              for _ in range(25)]
    frames += [_band_with(specks(picture(0), rows, columns), [("mnop uvwk rstz", 200), ("WXYZ", 350)]) for _ in range(25)]
    segments = segments_of(frames, settings)
    assert [(round(s.start * 25), round(s.end * 25)) for s in segments] == [(0, 25), (25, 50)]


def test_a_line_added_among_more_changing_strokes_than_its_own_starts_at_its_first_frame():
    """As the test above, with more strokes coming and going each frame than the line has: the
    line alone is what was added, so it is seen to persist from its first frame on."""
    rng = np.random.default_rng(8)
    rows, columns = STREWN

    def frame(i: int, text: bool) -> np.ndarray:
        # the picture changes above and below the line's rows
        changing = [int(y) if y < 50 else int(y) + 45 for y in rng.integers(6, H - 51, 40)]
        img = specks(picture(0), rows + changing, columns + list(rng.integers(6, W - 6, 40)))
        return _band_with(img, [("a thin subtitle line", 240)]) if text else img

    settings = measured(PLAIN, thin_line(picture(40)))
    line = text_mask(_band_with(picture(0), [("a thin subtitle line", 240)]), settings)
    assert np.count_nonzero(text_mask(frame(0, False), settings)) > 2 * np.count_nonzero(line)
    segments = segments_of([frame(i, text=i >= 20) for i in range(50)], settings)
    assert [round(s.start * 25) for s in segments][-1:] == [20]
