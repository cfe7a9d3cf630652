#!/usr/bin/env python3
"""Development videos for reading: the scripts set's machinery (make_samples.py) with other text
and other fonts than both the benchmark (fortunes, GLib/GTK catalogues, Noto Sans) and the
held-out set (docs/heldout.md: FileZilla, Pidgin, Audacity, VLC, Remmina, licences; KacstBook,
Loma, NanumGothic, WenQuanYi Micro Hei, Droid Sans Fallback, AR PL): the catalogues of apt,
dpkg, PackageKit, coreutils, git, GnuPG and others, in Amiri, Noto Naskh Arabic, Garuda,
Norasi, Waree, Nanum Myeongjo, Nanum Barun Gothic and Noto Serif CJK.

Measure a reading change here, never on the held-out set.

    python bench/dev_videos.py --out bench/videos/dev
    python bench/run.py --set dev            # (bench/run.py reads bench/videos/dev with each sidecar's --lang)
"""

from __future__ import annotations

import argparse
import functools
import gettext
import re
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "sample_videos"))

import make_samples as ms  # noqa: E402

LOCALE = "/usr/share/locale/"
# Catalogues (gettext domains) by locale: none of them the benchmark's or the held-out set's.
DEV_CATALOGUES = {
    "ar": ("apt", "libapt-pkg6.0", "PackageKit", "system-config-printer", "software-properties", "Linux-PAM",
           "appstream", "avahi", "libsecret", "xdg-user-dirs", "notification-daemon", "at-spi2-core"),
    "th": ("apt", "libapt-pkg6.0", "dpkg", "PackageKit", "system-config-printer", "software-properties",
           "Linux-PAM", "grep", "popt", "xdg-user-dirs", "notification-daemon", "at-spi2-core"),
    "ko": ("apt", "libapt-pkg6.0", "dpkg", "coreutils", "git", "systemd", "bash", "findutils", "tar", "wget",
           "sed", "shadow", "PackageKit", "system-config-printer", "procps-ng", "make"),
    "zh": ("apt", "libapt-pkg6.0", "dpkg", "coreutils", "git", "systemd", "gnupg2", "PackageKit", "tar",
           "wget", "shadow", "findutils", "sed", "bash", "system-config-printer", "gnutls30", "make"),
}
LOCALE_DIRS = {"zh": "zh_CN"}
SCRIPTS = {"ar": "ARABIC", "th": "THAI", "ko": "HANGUL"}
# Marks, markup, format strings, paths, options: no subtitle line.
NOT_A_LINE = re.compile(r"[%{}<>_&\\/|=@#*\[\]()\"'`;“”«»„$~^]|--|\.\.|^\W|\s-\w|[:：]\s*$")
FONTS = {
    "Amiri": ("fonts-hosny-amiri", ("/usr/share/fonts/opentype/fonts-hosny-amiri/Amiri-Regular.ttf",
                                    "/usr/share/fonts/opentype/fonts-hosny-amiri/Amiri-Bold.ttf")),
    "Noto Naskh Arabic": ("fonts-noto-core", ("/usr/share/fonts/truetype/noto/NotoNaskhArabic-Regular.ttf",
                                              "/usr/share/fonts/truetype/noto/NotoNaskhArabic-Bold.ttf")),
    "Garuda": ("fonts-tlwg-garuda-ttf", ("/usr/share/fonts/truetype/tlwg/Garuda.ttf",
                                         "/usr/share/fonts/truetype/tlwg/Garuda-Bold.ttf")),
    "Norasi": ("fonts-tlwg-norasi-ttf", ("/usr/share/fonts/truetype/tlwg/Norasi.ttf",
                                         "/usr/share/fonts/truetype/tlwg/Norasi-Bold.ttf")),
    "Waree": ("fonts-tlwg-waree-ttf", ("/usr/share/fonts/truetype/tlwg/Waree.ttf",
                                       "/usr/share/fonts/truetype/tlwg/Waree-Bold.ttf")),
    "NanumMyeongjo": ("fonts-nanum", ("/usr/share/fonts/truetype/nanum/NanumMyeongjo.ttf",
                                      "/usr/share/fonts/truetype/nanum/NanumMyeongjoBold.ttf")),
    "NanumBarunGothic": ("fonts-nanum", ("/usr/share/fonts/truetype/nanum/NanumBarunGothic.ttf",
                                         "/usr/share/fonts/truetype/nanum/NanumBarunGothicBold.ttf")),
}
FOOTAGE = dict(clips=("bikes", "bigbuckbunny", "carphone"), mode="cuts")


@functools.lru_cache(maxsize=None)
def dev_sentences(code: str) -> list[str]:
    """Messages of the dev catalogues that read as a subtitle line. Chinese lines keep their Latin
    words and numbers (code-switched, as tech videos are); the other scripts' lines hold their
    script's letters only (as the scripts set's)."""
    lines = []
    for domain in DEV_CATALOGUES[code]:
        path = Path(LOCALE, LOCALE_DIRS.get(code, code), "LC_MESSAGES", f"{domain}.mo")
        if not path.exists():
            continue
        with path.open("rb") as handle:
            catalogue = gettext.GNUTranslations(handle)._catalog
        for msgid, text in catalogue.items():
            if not isinstance(msgid, str) or not msgid or not isinstance(text, str) or "\n" in text.strip():
                continue
            text = ms.OPTIONAL_MARKS.sub("", " ".join(text.split())).rstrip(".。")
            if not text or NOT_A_LINE.search(text) or any(c.isdigit() for c in text):
                continue
            letters = [c for c in text if c.isalpha()]
            if code == "zh":
                han = sum("\u4e00" <= c <= "\u9fff" for c in letters)
                if han < 4 or len(letters) - han > han or any(len(w) == 1 and w.isascii() and w.isalpha()
                                                              for w in text.split()):
                    continue
                if not all("\u4e00" <= c <= "\u9fff" or c.isascii() or c in "，、？！：" for c in text):
                    continue
                try:
                    text.encode("gb2312")
                except UnicodeEncodeError:
                    continue
            else:
                # Thai writes no spaces between words: a message of one phrase is a line too.
                if (" " not in text and code != "th") or not all(SCRIPTS[code] in unicodedata.name(c, "")
                                                                 for c in letters):
                    continue
                if not all(c.isalpha() or c in " ,!?-" or unicodedata.category(c).startswith("M") for c in text):
                    continue
            lines.append(text)
    return list(dict.fromkeys(lines))


def video(name: str, lang: str, font: str, size=(1280, 720), seconds: int = 45, **style) -> dict:
    return dict(name=name, size=size, seconds=seconds, footage=FOOTAGE,
                zones=[dict(lang=lang, two_line=0.0 if lang == "zh" else 0.25, style=dict(style, font=font))])


VIDEOS = [
    video("dev_ar_amiri_outline", "ar", "Amiri", outline=2.5, scale=0.14),
    video("dev_ar_naskh_plain", "ar", "Noto Naskh Arabic", outline=0, shadow=0, scale=0.066),
    video("dev_th_garuda_outline", "th", "Garuda", outline=2.5),
    video("dev_th_norasi_outline", "th", "Norasi", outline=2.5, scale=0.062),
    video("dev_ko_myeongjo_outline", "ko", "NanumMyeongjo", outline=2.5),
    video("dev_ko_barun_plain", "ko", "NanumBarunGothic", outline=0, shadow=1),
    video("dev_zh_serif_outline_720p", "zh", "Noto Serif CJK SC", seconds=60, outline=3),
]
LINE_CHARS = {"zh": (6, 18), "ar": (12, 34), "ko": (8, 24), "th": (15, 45)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="+", metavar="NAME")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache/subextract-samples")
    args = parser.parse_args()
    # The scripts set's machinery, its text and fonts swapped for these.
    ms.FONTS.update(FONTS)
    ms.load_sentences = dev_sentences
    ms.SCRIPT_LINE_CHARS = LINE_CHARS
    ms.CATALOGUES = {}
    ms.LANGUAGES["zh"] = ms.Language(None, (), "gb2312", True)
    specs = [ms.resolve_spec(spec, "scripts") for spec in VIDEOS if not args.only or spec["name"] in args.only]
    args.out.mkdir(parents=True, exist_ok=True)
    dirs = ms.source_dirs(specs, args.cache, Path("/nonexistent"))
    ffmpeg = ms.find_ffmpeg()
    for spec in specs:
        ms.report(ms.make_video(spec, args.out, dirs, ffmpeg))


if __name__ == "__main__":
    main()
