"""Shared fixtures: tiny real videos built with FFmpeg (the binary subextract itself uses).

Every clip is made once per session in a temporary folder. Subtitles are burned in by libass
(the ``ass`` filter) from ASS files written here, with cue times on the 25 fps frame grid, so the
expected SRT times are exact: start = first frame showing the cue, end = first frame without it.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest

from subextract.stages.probe import ffmpeg_exe

FPS = 25
FRAME = 1.0 / FPS
WIDTH, HEIGHT = 640, 360

# (start s, end s, text): libass shows an event on frames with start <= t < end.
EN_CUES = [(0.40, 1.20, "Hello from the test"), (3.20, 5.00, "Second subtitle line")]
ZH_CUES = [(0.40, 1.20, "今天天气很好"), (3.20, 5.00, "我们明天再见")]
CLIP_SECONDS = 6


# --------------------------------------------------------------------------------------------
# FFmpeg helpers
# --------------------------------------------------------------------------------------------

def run_ffmpeg(*args: str) -> None:
    """Run subextract's FFmpeg; fail the calling fixture with FFmpeg's own words."""
    result = subprocess.run([ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y", *args],
                            capture_output=True, text=True, errors="replace", check=False)
    if result.returncode != 0:
        raise RuntimeError(f"ffmpeg {' '.join(args)} failed:\n{result.stderr[-2000:]}")


@lru_cache(maxsize=1)
def ffmpeg_filters() -> str:
    return subprocess.run([ffmpeg_exe(), "-hide_banner", "-filters"], capture_output=True, text=True,
                          check=False).stdout


def has_filter(name: str) -> bool:
    return re.search(rf"^\s*\S+\s+{re.escape(name)}\s", ffmpeg_filters(), re.M) is not None


# --------------------------------------------------------------------------------------------
# Fonts
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Font:
    path: Path
    family: str


_FONT_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts", os.path.expanduser("~/.fonts"),
              os.path.expanduser("~/.local/share/fonts"))
_LATIN_NAMES = ("DejaVuSans.ttf", "LiberationSans-Regular.ttf", "NotoSans-Regular.ttf", "FreeSans.ttf",
                "Arial.ttf", "Vera.ttf")
_CJK_NAMES = ("wqy-zenhei.ttc", "NotoSansCJK-Regular.ttc", "NotoSansCJKsc-Regular.otf",
              "wqy-microhei.ttc", "SourceHanSansSC-Regular.otf", "DroidSansFallbackFull.ttf")


def _family(path: str) -> str | None:
    try:
        from PIL import ImageFont

        return ImageFont.truetype(path, 12).getname()[0]
    except Exception:  # noqa: BLE001 - an unreadable font is simply not a candidate
        return None


def _fc_list(pattern: str) -> list[str]:
    if not shutil.which("fc-list"):
        return []
    out = subprocess.run(["fc-list", pattern, "file"], capture_output=True, text=True, check=False).stdout
    return [line.split(":")[0].strip() for line in out.splitlines() if line.strip()]


def find_font(names: tuple[str, ...], fc_pattern: str) -> Font | None:
    candidates = []
    for name in names:
        for root in _FONT_DIRS:
            candidates += glob.glob(f"{root}/**/{name}", recursive=True)
    candidates += [p for p in _fc_list(fc_pattern) if p.lower().endswith((".ttf", ".otf", ".ttc"))]
    for path in candidates:
        family = _family(path)
        if family:
            return Font(Path(path), family)
    return None


def _font_dir(tmp_path_factory, font: Font) -> Path:
    folder = tmp_path_factory.mktemp("fonts")
    shutil.copy(font.path, folder / font.path.name)
    return folder


# --------------------------------------------------------------------------------------------
# ASS subtitles
# --------------------------------------------------------------------------------------------

def _ass_time(seconds: float) -> str:
    cs = round(seconds * 100)
    return f"{cs // 360000}:{cs // 6000 % 60:02d}:{cs // 100 % 60:02d}.{cs % 100:02d}"


def write_ass(path: Path, cues, family: str, size: int = 30) -> Path:
    events = "\n".join(f"Dialogue: 0,{_ass_time(s)},{_ass_time(e)},Default,,0,0,0,,{text}" for s, e, text in cues)
    path.write_text(f"""[Script Info]
ScriptType: v4.00+
PlayResX: {WIDTH}
PlayResY: {HEIGHT}
WrapStyle: 2
ScaledBorderAndShadow: yes

[V4+ Styles]
Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding
Style: Default,{family},{size},&H00FFFFFF,&H00FFFFFF,&H00000000,&H00000000,0,0,0,0,100,100,0,0,1,2.5,0,2,10,10,20,1

[Events]
Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text
{events}
""", encoding="utf-8")
    return path


def _filter_path(path: Path) -> str:
    """A path inside an FFmpeg filter argument: escape the characters the filter parser treats specially."""
    return str(path).replace("\\", "\\\\").replace(":", "\\:").replace("'", "\\'")


def burn_subtitles(out: Path, ass: Path, fonts: Path, source: str, *extra: str) -> Path:
    """A 640x360 25 fps H.264 clip from a lavfi ``source`` with the ASS file burned in."""
    if not has_filter("ass"):
        # A fifth of the suite burns subtitles: without libass it must fail, not pass with those tests unrun.
        pytest.fail(f"{ffmpeg_exe()} has no ass filter (libass): install an FFmpeg built with libass "
                    "(apt-get install ffmpeg) or point SUBEXTRACT_FFMPEG at one", pytrace=False)
    options = f"size={WIDTH}x{HEIGHT}:rate={FPS}"
    run_ffmpeg("-f", "lavfi", "-i", f"{source}{':' if '=' in source else '='}{options}", "-t", str(CLIP_SECONDS),
               "-vf", f"ass=filename={_filter_path(ass)}:fontsdir={_filter_path(fonts)}",
               "-c:v", "libx264", "-preset", "veryfast", "-crf", "28", "-g", str(FPS), "-sc_threshold", "0",
               "-pix_fmt", "yuv420p", *extra, str(out))
    return out


# --------------------------------------------------------------------------------------------
# Session fixtures: clips
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def media(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("media")


def _font_or_fail(names: tuple[str, ...], fc_pattern: str, packages: str) -> Font:
    """A missing font fails the tests that burn subtitles with it: skipping them would let a machine
    without fonts pass with a fifth of the suite unrun."""
    font = find_font(names, fc_pattern)
    if font is None:
        pytest.fail(f"no {fc_pattern} font found: apt-get install -y {packages} (bash scripts/setup.sh --test "
                    "does this as root)", pytrace=False)
    return font


@pytest.fixture(scope="session")
def latin_font() -> Font:
    return _font_or_fail(_LATIN_NAMES, ":lang=en", "fonts-dejavu-core")


@pytest.fixture(scope="session")
def cjk_font() -> Font:
    return _font_or_fail(_CJK_NAMES, ":lang=zh", "fonts-wqy-zenhei")


# A moving colour gradient: the picture behind the subtitles changes on every frame. Every colour
# and the gradient's line are given (a colour left "random" once drew a clip near-white behind
# white text), and the seed too: without it the gradient moves differently on each run, the clip's
# size changes with it (21-60 kB), and a truncated copy cut at 40 % ended before or after a cue.
GRADIENT = "gradients=c0=0x1f4e79:c1=0x7f3f1f:c2=0x2f6f3f:c3=0x5a2a6a:x0=0:y0=0:x1=640:y1=360:speed=0.03:n=4:seed=1"


@pytest.fixture(scope="session")
def zh_clip(media, tmp_path_factory, cjk_font) -> Path:
    """6 s, 640x360, 25 fps, ZH_CUES burned in over a moving gradient; moov atom at the front."""
    ass = write_ass(media / "zh.ass", ZH_CUES, cjk_font.family)
    return burn_subtitles(media / "zh.mp4", ass, _font_dir(tmp_path_factory, cjk_font), GRADIENT,
                          "-movflags", "+faststart")


@pytest.fixture(scope="session")
def en_clip(media, tmp_path_factory, latin_font) -> Path:
    """Like ``zh_clip`` with EN_CUES."""
    ass = write_ass(media / "en.ass", EN_CUES, latin_font.family, size=28)
    return burn_subtitles(media / "en.mp4", ass, _font_dir(tmp_path_factory, latin_font), GRADIENT)


@pytest.fixture(scope="session")
def zh_mandelbrot_clip(media, tmp_path_factory, cjk_font) -> Path:
    """ZH_CUES over a zooming Mandelbrot set (fine, bright detail all over the picture)."""
    ass = write_ass(media / "zh_mandel.ass", ZH_CUES, cjk_font.family)
    return burn_subtitles(media / "zh_mandel.mp4", ass, _font_dir(tmp_path_factory, cjk_font), "mandelbrot")


def vfr_times() -> list[float]:
    """Irregular frame times (ms exact): gaps grow from 43 ms to 211 ms, plus a 0.5 s hold at frame 20."""
    return [(40 * n + 3 * n * n + (500 if n >= 20 else 0)) / 1000 for n in range(30)]


@pytest.fixture(scope="session", params=["mkv", "mp4"])
def vfr_clip(request, media) -> tuple[Path, list[float]]:
    """A variable-frame-rate clip (times from ``vfr_times``), H.264 with B-frames, in MKV and MP4."""
    out = media / f"vfr.{request.param}"
    if not out.exists():
        run_ffmpeg("-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25",
                   "-vf", r"trim=end_frame=30,settb=1/1000,setpts=N*40+3*N*N+if(gte(N\,20)\,500\,0)",
                   "-fps_mode", "vfr", "-enc_time_base:v", "1:1000",
                   "-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-pix_fmt", "yuv420p", str(out))
    return out, vfr_times()


@pytest.fixture(scope="session")
def late_clip(media) -> tuple[Path, list[float]]:
    """20 frames at 25 fps, then 10 frames past the 20-minute mark (1234.567 s + n x 41 ms)."""
    out = media / "late.mkv"
    run_ffmpeg("-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25",
               "-vf", r"trim=end_frame=30,settb=1/1000,setpts=if(gte(N\,20)\,1234567+(N-20)*41\,N*40)",
               "-fps_mode", "vfr", "-enc_time_base:v", "1:1000",
               "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", str(out))
    return out, [n * 0.04 for n in range(20)] + [(1234567 + 41 * n) / 1000 for n in range(10)]


@pytest.fixture(scope="session")
def rotated_clip(media) -> Path:
    """320x240 coded, flagged for 90 degree display rotation (a phone video held upright)."""
    plain = media / "plain_320x240.mp4"
    run_ffmpeg("-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "1",
               "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", str(plain))
    out = media / "rotated.mp4"
    try:  # FFmpeg >= 6: an input option; older: the muxer's legacy rotate tag
        run_ffmpeg("-display_rotation", "90", "-i", str(plain), "-c", "copy", str(out))
    except RuntimeError:
        run_ffmpeg("-i", str(plain), "-c", "copy", "-metadata:s:v:0", "rotate=90", str(out))
    return out


@pytest.fixture(scope="session")
def audio_only(media) -> Path:
    out = media / "silence.m4a"
    run_ffmpeg("-f", "lavfi", "-i", "anullsrc=r=44100:cl=stereo", "-t", "1", "-c:a", "aac", str(out))
    return out


@pytest.fixture(scope="session")
def audio_with_cover(media) -> Path:
    """An MP3 whose only video stream is its cover art (an attached picture)."""
    out = media / "song.mp3"
    run_ffmpeg("-f", "lavfi", "-i", "anullsrc=r=44100:cl=stereo", "-f", "lavfi", "-i", "color=c=red:s=300x300",
               "-map", "0:a", "-map", "1:v", "-frames:v", "1", "-t", "1", "-c:a", "libmp3lame", "-c:v", "mjpeg",
               "-disposition:v", "attached_pic", str(out))
    return out


@pytest.fixture(scope="session")
def zero_byte(media) -> Path:
    out = media / "empty.mp4"
    out.write_bytes(b"")
    return out


@pytest.fixture(scope="session")
def text_as_mp4(media) -> Path:
    out = media / "notes.mp4"
    out.write_text("This is a shopping list, not a video.\nmilk\neggs\n")
    return out


@pytest.fixture(scope="session")
def truncated_moov_last(media, zh_clip) -> Path:
    """The first 40% of an MP4 whose moov atom is at the end: the index is gone, nothing is decodable."""
    whole = media / "zh_moov_last.mp4"
    run_ffmpeg("-i", str(zh_clip), "-c", "copy", str(whole))
    data = whole.read_bytes()
    assert data.find(b"moov") > data.find(b"mdat"), "expected the moov atom after mdat"
    out = media / "zh_truncated_moov_last.mp4"
    out.write_bytes(data[: int(len(data) * 0.4)])
    return out


@pytest.fixture(scope="session")
def truncated_faststart(media, zh_clip) -> Path:
    """The first 40% of a faststart MP4: the index survives, so it decodes up to the cut (~1.8 s)."""
    data = zh_clip.read_bytes()
    assert data.find(b"moov") < data.find(b"mdat"), "expected the moov atom before mdat (faststart)"
    out = media / "zh_truncated_faststart.mp4"
    out.write_bytes(data[: int(len(data) * 0.4)])
    return out


# --------------------------------------------------------------------------------------------
# The bundled samples, each read once per session with the default preset
# --------------------------------------------------------------------------------------------

SAMPLES = Path(__file__).resolve().parent.parent / "sample_videos"


@dataclass(frozen=True)
class SampleRun:
    srt: Path
    stderr: str  # the run's summary line included (no --quiet)


@pytest.fixture(scope="session")
def sample_runs(tmp_path_factory) -> dict[str, SampleRun]:
    """Every bundled sample with ground truth extracted by the real CLI, default preset, every
    line kept: shared by the end-to-end scores, the OCR-call count and the exact-timing checks,
    which would otherwise each read the same samples again."""
    import sys

    folder = tmp_path_factory.mktemp("samples")
    runs = {}
    for video in sorted(p for p in SAMPLES.glob("*.mp4") if p.with_suffix(".srt").exists()):
        out = folder / f"{video.stem}.srt"
        result = subprocess.run([sys.executable, "-m", "subextract", str(video), "-o", str(out)], capture_output=True,
                                text=True, timeout=600, check=False)
        assert result.returncode == 0, result.stderr
        assert "traceback" not in result.stderr.lower()
        runs[video.stem] = SampleRun(out, result.stderr)
    return runs


# --------------------------------------------------------------------------------------------
# The vLLM modules' run in their own virtualenv starts as soon as the session knows it is wanted
# --------------------------------------------------------------------------------------------

def pytest_collection_finish(session: pytest.Session) -> None:
    from test_vllm_suite import start_in_background

    start_in_background(session.items)


def pytest_sessionfinish(session: pytest.Session) -> None:
    from test_vllm_suite import stop_background

    stop_background()
