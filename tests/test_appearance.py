"""learn_appearance / settings_for on synthetic pre-scan strips: which plane and which text test
a video's subtitles get, from how the lines are drawn."""

from __future__ import annotations

import cv2
import numpy as np

from subextract.config import load_settings
from subextract.stages.appearance import learn_appearance, settings_for

SETTINGS = load_settings().segment
H, W = 48, 640
X0, X1 = 200, 440  # the line's columns
_RNG = np.random.default_rng(7)


def texture(mean: int, spread: int) -> np.ndarray:
    noise = cv2.GaussianBlur(_RNG.normal(0, 1, (H, W)).astype(np.float32), (0, 0), 2)
    return np.clip(mean + spread * noise / noise.std(), 0, 255).astype(np.uint8)


def glyphs() -> np.ndarray:
    canvas = np.zeros((H, W), np.uint8)
    cv2.putText(canvas, "SUBTITLE LINE", (X0 + 6, 32), cv2.FONT_HERSHEY_SIMPLEX, 0.8, 255, 2, cv2.LINE_AA)
    return canvas > 100


def draw(picture: np.ndarray, text: int, outline: int | None = None) -> np.ndarray:
    strip = picture.copy()
    fill = glyphs()
    if outline is not None:
        strip[cv2.dilate(fill.view(np.uint8), np.ones((5, 5), np.uint8)).view(bool) & ~fill] = outline
    strip[fill] = text
    return strip


def strips(*pictures: np.ndarray) -> list[tuple[np.ndarray, int, int]]:
    return [(picture, X0, X1) for picture in pictures]


def test_outlined_white_text_keeps_the_outline_test():
    lines = strips(*(draw(texture(170, 30), 235, outline=16) for _ in range(3)))
    appearance = learn_appearance({"y": lines}, SETTINGS)
    assert appearance.plane == "y" and appearance.outlined
    assert settings_for(appearance, SETTINGS) == SETTINGS


def test_plain_white_text_drops_the_outline_test_and_asks_for_its_brightness():
    lines = strips(*(draw(texture(150, 25), 235) for _ in range(3)))
    appearance = learn_appearance({"y": lines}, SETTINGS)
    assert appearance.plane == "y" and not appearance.outlined
    assert appearance.level >= 225
    tuned = settings_for(appearance, SETTINGS)
    assert tuned.dark_max == 255
    assert tuned.bright_min == min(SETTINGS.plain_bright_high, appearance.level - SETTINGS.plain_bright_margin)


def test_a_dark_picture_is_no_evidence_of_an_outline():
    """Plain text on a night scene has dark pixels beside every stroke, as outlined text has."""
    lines = strips(*(draw(texture(25, 8), 235) for _ in range(3)))
    assert not learn_appearance({"y": lines}, SETTINGS).outlined


def test_one_line_without_an_outline_is_enough_to_drop_the_test():
    lines = strips(draw(texture(170, 30), 235, outline=16), draw(texture(170, 30), 235, outline=16),
                   draw(texture(170, 30), 235))
    assert not learn_appearance({"y": lines}, SETTINGS).outlined


def test_coloured_text_with_the_luma_of_the_picture_is_read_in_chroma():
    """Orange over white fur: in luma the text is lost in the fur's texture; in V (red chroma) it is
    bright over a flat plane, and in U it is dark (so U itself is no candidate, its negation is)."""
    luma = [draw(texture(160, 45), 160) for _ in range(3)]
    red = [draw(texture(128, 2), 190) for _ in range(3)]
    blue = [draw(texture(128, 2), 70) for _ in range(3)]
    candidates = {"y": strips(*luma), "v": strips(*red), "-v": strips(*(255 - s for s in red)),
                  "u": strips(*blue), "-u": strips(*(255 - s for s in blue))}
    appearance = learn_appearance(candidates, SETTINGS)
    assert appearance.plane in ("v", "-u") and not appearance.outlined
    tuned = settings_for(appearance, SETTINGS)
    assert tuned.dark_max == 255
    assert SETTINGS.hold_contrast <= tuned.contrast_min <= SETTINGS.contrast_min


def test_white_text_stays_in_luma_when_chroma_is_flat():
    lines = [draw(texture(150, 25), 235) for _ in range(3)]
    flat = [texture(128, 1) for _ in range(3)]
    candidates = {"y": strips(*lines), "u": strips(*flat), "-u": strips(*(255 - f for f in flat)),
                  "v": strips(*flat), "-v": strips(*(255 - f for f in flat))}
    assert learn_appearance(candidates, SETTINGS).plane == "y"


def test_nothing_seen_means_no_outline_test():
    assert learn_appearance({"y": []}, SETTINGS) is None
    assert learn_appearance({"y": strips(texture(128, 1))}, SETTINGS) is None
    assert settings_for(None, SETTINGS).dark_max == 255
