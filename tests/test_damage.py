"""A damaged video: FFmpeg conceals its decode errors and exits 0, so the spans it complained
about are found from its log, the cues inside them flagged, a warning names them, exit 3."""

from __future__ import annotations

import io
import json
import queue
import random
import shutil
from collections import deque
from pathlib import Path

import pysrt
import pytest

from subextract.schema import DamagedSpan
from subextract.stages.damage import DamageTracker

from subextract.stages.sample import DecodeReport, _drain_stderr, glued_message, is_error_line
from test_cli import run_cli

SAMPLES = Path(__file__).resolve().parent.parent / "sample_videos"


def overwrite_middle(source: Path, target: Path, seed: int = 11, at: float = 0.4, share: float = 0.2) -> Path:
    """The issue's reproduction: ``share`` of the file overwritten with random bytes at ``at``."""
    data = bytearray(source.read_bytes())
    begin, length = int(len(data) * at), int(len(data) * share)
    data[begin:begin + length] = random.Random(seed).randbytes(length)
    target.write_bytes(bytes(data))
    return target


# --------------------------------------------------------------------------------------------
# The tracker
# --------------------------------------------------------------------------------------------

def test_errors_make_a_span_up_to_the_next_keyframe():
    tracker = DamageTracker(0.0, 0.04, latency_frames=1)
    for n in range(10):
        tracker.frame(n * 0.04, keyframe=n == 0)
    tracker.error()
    tracker.error()
    tracker.frame(0.40, False)
    tracker.frame(1.00, False)  # 14 frames never came
    tracker.frame(1.04, True)   # the picture is whole again from here
    tracker.frame(1.08, False)
    assert tracker.finish() == [DamagedSpan(0.36, 1.04, 2, 14, "")]


def test_overlapping_spans_merge():
    tracker = DamageTracker(0.0, 0.04, latency_frames=0)
    tracker.frame(0.0, True)
    tracker.error()
    tracker.frame(0.04, True)
    tracker.error()
    tracker.frame(0.08, True)
    assert tracker.finish() == [DamagedSpan(0.0, 0.08, 2, 0)]


def test_a_clean_decode_has_no_span_and_variable_frame_rate_is_not_loss():
    tracker = DamageTracker(0.0, 0.04, latency_frames=1)
    for n, t in enumerate([0.0, 0.043, 0.09, 0.15, 0.65, 0.7]):
        tracker.frame(t, keyframe=n == 0)
    assert tracker.finish() == []


def test_an_open_span_ends_with_the_decode():
    tracker = DamageTracker(5.0, 0.04, latency_frames=0)
    tracker.error()  # before the first frame: the span starts at the range's start
    tracker.frame(5.0, True)
    tracker.frame(5.04, False)
    tracker.error()
    tracker.frame(5.08, False)
    assert tracker.finish() == [DamagedSpan(5.04, 5.12, 1, 0)]  # the first error touched no frame shown


def test_a_keyframe_the_decoder_may_still_have_held_does_not_end_the_span():
    """The error line can come before frames decoded earlier are reported: a keyframe reported
    right after it may precede the damaged frame."""
    tracker = DamageTracker(0.0, 0.04, latency_frames=3)
    tracker.error()
    tracker.frame(0.0, True)  # decoded before the damaged frame, reported after its error line
    tracker.frame(0.04, False)
    tracker.frame(0.08, False)
    tracker.frame(0.12, True)  # the first keyframe past the latency
    assert tracker.finish() == [DamagedSpan(0.0, 0.12, 1, 0)]


@pytest.mark.parametrize("line, is_error", [
    ("[h264 @ 0x55b3f986b600] error while decoding MB 12 5, bytestream -5", True),
    ("[vist#0:0/h264 @ 0x55] [dec:h264 @ 0x55] Error submitting packet to decoder: Invalid data", True),
    ("[h264 @ 0x55b3f986b600] missing picture in access unit with size 859", True),
    ("    title           : Missing pieces (an error of judgement)", False),  # the input's metadata
    ("[Parsed_showinfo_0 @ 0x7f] n:   0 pts:      0 pts_time:0", False),
])
def test_what_counts_as_an_error_line(line, is_error):
    assert is_error_line(line) is is_error


# FFmpeg's own lines, captured from decodes of the fuzz test's cut Matroska file under load: its
# threads log independently, and another component's message lands inside showinfo's line.
SHOWINFO = "[Parsed_showinfo_0 @ 0x7fb39c001a40] "
FRAME_34 = (SHOWINFO + "n:  34 pts:   1360 pts_time:1.36    duration:     40 duration_time:0.04    fmt:yuv420p "
            "cl:left sar:427/428 s:428x240 i:P iskey:0 type:P ")
CHECKSUMS = "checksum:582CDB07 plane_checksum:[99C8E427 9F104992 DE13AD3F] mean:[98 126 129] stdev:[27.5 7.9 9.1]"


@pytest.mark.parametrize("line, glued", [
    (FRAME_34 + "File ended prematurely", "File ended prematurely"),
    (FRAME_34 + CHECKSUMS, ""),
    (SHOWINFO + "color_range:unknown color_space:unknown color_primaries:unknown color_trc:unknown", ""),
    (FRAME_34 + "checksum:582CDB07 plane_checksum:[99C8E427 9F104992 DE13AD3F] mean:[98 126Packet corrupt "
     "(stream = 0, dts = 306000).", "126Packet corrupt (stream = 0, dts = 306000)."),
])
def test_a_message_glued_into_a_showinfo_line_is_found(line, glued):
    assert glued_message(line) == glued


def test_a_cut_file_is_reported_when_its_end_lands_inside_a_frame_line():
    lines = [SHOWINFO + "config in time_base: 1/1000, frame_rate: 25/1",
             FRAME_34.replace("1360", "1320").replace(":  34", ":  33") + CHECKSUMS,
             FRAME_34 + "File ended prematurely",
             SHOWINFO + CHECKSUMS,
             FRAME_34.replace("1360", "1400").replace(":  34", ":  35") + "error while decoding MB 12 5, bytestream -5",
             # the progress line, ended by a carriage return, and the next frame's line after it
             "frame=  140 fps=0.0 q=-0.0 size=   55643KiB time=00:00:05.92 bitrate=76998.5kbits/s speed=11.8x    \r"
             + FRAME_34.replace("1360", "1440").replace(":  34", ":  36")]
    pts, report, errors = queue.Queue(), DecodeReport(), deque()
    damage = DamageTracker(0.0, 0.04, latency_frames=0)
    _drain_stderr(io.BytesIO("\n".join(lines).encode()), pts, errors, damage, 0.0, report)
    assert [pts.get_nowait() for _ in range(5)] == [1.32, 1.36, 1.40, 1.44, None]
    assert report.ended_early
    assert list(errors) == ["File ended prematurely", "error while decoding MB 12 5, bytestream -5"]
    assert len(damage.finish()) == 1


# --------------------------------------------------------------------------------------------
# End to end: the reproduction
# --------------------------------------------------------------------------------------------

def overlaps(item, span) -> bool:
    return item[0] < span["end"] and item[1] > span["start"]


@pytest.fixture(scope="module")
def damaged_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("damaged")
    video = overwrite_middle(SAMPLES / "en_two_line.mp4", folder / "g.mp4")
    out = folder / "g.json"
    code, stdout, stderr = run_cli(video, "-o", out, "--format", "json", "-q")
    return code, stdout, stderr, out


def test_damaged_video_warns_flags_its_cues_and_exits_3(damaged_run):
    code, stdout, stderr, out = damaged_run
    assert code == 3, stderr
    assert stdout == "" and "Traceback" not in stderr
    warnings = [line for line in stderr.splitlines() if line.startswith("subextract: warning: ")]
    assert len(warnings) == 1 and "damaged at" in warnings[0] and "decode errors" in warnings[0], stderr
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["complete"] is False
    spans = document["damaged"]
    assert spans and all(span["errors"] > 0 for span in spans)
    # 20 % of the bytes from 40 %: the damage lies within the middle of the 22 s clip, frames are lost.
    assert 6.0 < spans[0]["start"] < 9.0 and 12.0 < spans[0]["end"] < 20.0, spans
    assert sum(span["missing_frames"] for span in spans) > 20
    for span in spans:
        assert f"{span['start']:.2f}–{span['end']:.2f} s" in warnings[0]
    for cue in document["cues"]:
        assert cue["damaged"] is any(overlaps((cue["start"], cue["end"]), span) for span in spans)


def test_cues_outside_the_damage_are_unaffected(damaged_run):
    _, _, _, out = damaged_run
    document = json.loads(out.read_text(encoding="utf-8"))
    found = {(cue["start"], cue["end"], cue["text"]) for cue in document["cues"] if not cue["damaged"]}
    reference = [(i.start.ordinal / 1000, i.end.ordinal / 1000, i.text)
                 for i in pysrt.open(str(SAMPLES / "en_two_line.srt"))]
    clean = [cue for cue in reference if not any(overlaps(cue, span) for span in document["damaged"])]
    assert clean and found == set(clean)


def test_an_undamaged_copy_stays_clean(tmp_path):
    video = shutil.copy(SAMPLES / "en_two_line.mp4", tmp_path / "clean.mp4")
    code, _, stderr = run_cli(video, "-o", tmp_path / "c.json", "--format", "json", "-q", "--end", "6")
    assert code == 0, stderr
    document = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    assert document["damaged"] == [] and "damaged" not in document["cues"][0]


# --------------------------------------------------------------------------------------------
# --end T: what shows at T ends at T, with or without --fps
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("options", [["--end", "6"], ["--end", "6", "--fps", "5"], ["--end", "6.01"],
                                     ["--end", "6.01", "--fps", "3"]], ids=["native", "fps5", "native-off-grid",
                                                                            "fps3-off-grid"])
def test_the_last_cue_ends_at_the_range_end(tmp_path, options):
    out = tmp_path / "x.srt"
    code, _, err = run_cli(SAMPLES / "en_two_line.mp4", "-o", out, "-q", "--region", "bottom", *options)
    assert code == 0, err
    last = pysrt.open(str(out))[-1]  # "Don't tell any big lies today." shows from 4.64 s to 8.56 s
    assert last.start.ordinal == 4640 and last.end.ordinal == round(float(options[1]) * 1000), last
