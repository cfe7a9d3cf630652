"""Moderation feeds: cue streaming while the video runs, watchlists, JSONL records, URL inputs.

The streaming rule is checked against ``align`` itself on random cue layouts and OCR arrival
orders; the end-to-end checks run the real CLI (real FFmpeg, the embedded engine) on the bundled
samples, read its stdout through a pipe while it runs, and serve a sample over HTTP from a local
server, as a file and as a live stream of unknown length.
"""

from __future__ import annotations

import http.server
import json
import os
import random
import re
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pysrt
import pytest

from subextract.config import load_settings
from subextract.errors import SubextractError
from subextract.feeds import CueFeed, FeedSink, Watchlist, watchlist_option
from subextract.pipeline.stream import CueStream
from subextract.schema import Cue, Reading, TextLine
from subextract.stages.align import align
from subextract.stages.source import check_url, input_args, is_url
from subextract.stages.write import render

from conftest import run_ffmpeg
from test_align import segment  # a Segment as the Segmenter makes it

SETTINGS = load_settings().align
SAMPLES = Path(__file__).resolve().parent.parent / "sample_videos"


def reading(text: str) -> Reading:
    return Reading(lines=tuple(TextLine(text=line, confidence=0.9, box=(0, 0, 10, 10), language="en")
                               for line in text.split("\n") if line))


def cue(text: str, start: float = 1.0, end: float = 2.0) -> Cue:
    return Cue(start=start, end=end, lines=tuple(text.split("\n")), languages=("en",) * len(text.split("\n")),
               confidence=0.9)


# --------------------------------------------------------------------------------------------
# CueStream: what is streamed is the final cue list, in order, and it comes early
# --------------------------------------------------------------------------------------------

TEXTS = ["Hello there", "Hello thera", "Goodbye now", "Goodbye n0w", "Something else", ""]


def random_timeline(rng: random.Random, band: int) -> list[tuple[float, float, str]]:
    """Segments of one band: back-to-back, jitter-sized and wide gaps, flicker, similar texts, blanks."""
    items, t = [], rng.choice([0.0, 0.3])
    for _ in range(rng.randint(5, 25)):
        t += rng.choice([0.0, 0.0, 0.04, 0.08, 0.12, 0.3, 1.0])
        length = rng.choice([0.04, 0.08, 0.16, 0.4, 1.2, 2.0])
        items.append((round(t, 2), round(t + length, 2), rng.choice(TEXTS)))
        t += length
    return items


def final_cues(timelines: list[list[tuple[float, float, str]]]) -> list[Cue]:
    """What run.py returns: each band aligned whole, then ordered by (start, band)."""
    cues = []
    for band, items in enumerate(timelines):
        cues += align([(segment(s, e, band), reading(text)) for s, e, text in items], SETTINGS)
    return sorted(cues, key=lambda c: (c.start, c.band))


def simulate(timelines: list[list[tuple[float, float, str]]], rng: random.Random) -> tuple[list[Cue], int]:
    """Drive a CueStream as the decode loop does: frames every 40 ms, segments accepted when they
    close, OCR readings arriving late and out of order. Returns (streamed cues, how many came
    before the end of the video)."""
    streamed: list[Cue] = []
    stream = CueStream(SETTINGS, len(timelines), lambda _band, r: r, streamed.append)
    closing = sorted((e, band, s, text) for band, items in enumerate(timelines) for s, e, text in items)
    segments, readings, waiting = [], {}, []
    end = max(e for e, *_ in closing)
    for step in range(int(end / 0.04) + 2):
        now = step * 0.04
        while closing and closing[0][0] <= now + 1e-9:
            e, band, s, text = closing.pop(0)
            segments.append((segment(s, e, band), len(segments)))
            waiting.append((len(segments) - 1, reading(text)))
        rng.shuffle(waiting)
        for _ in range(rng.randint(0, 2)):  # the OCR worker finishes a few, in any order, and says so
            if waiting:
                key, value = waiting.pop()
                readings[key] = value
                stream.refresh()
        horizons = [next((s for s, e, _ in items if s <= now < e), now) for items in timelines]
        stream.update(segments, readings, horizons)
    early = len(streamed)
    stream.finish(final_cues(timelines))
    return streamed, early


@pytest.mark.parametrize("seed", range(40))
def test_streamed_cues_are_the_final_list_in_order(seed):
    rng = random.Random(seed)
    timelines = [random_timeline(rng, band) for band in range(rng.choice([1, 1, 2]))]
    streamed, _ = simulate(timelines, rng)
    assert streamed == final_cues(timelines)


def test_cues_are_streamed_once_a_pause_follows():
    timeline = [(1.0, 2.0, "First line"), (3.0, 4.0, "Second line"), (5.0, 6.0, "Third line")]
    streamed, early = simulate([timeline], random.Random(0))
    assert [c.text for c in streamed] == ["First line", "Second line", "Third line"]
    assert early == 2  # the last cue can only be final at the end of the video


def test_back_to_back_cues_wait_for_the_next_pause():
    # "Two" follows "One" with no gap: whether they merge depends on "Two", which may still grow;
    # both are final once "Two" is followed by more than merge_gap without text.
    log: list[tuple[float, str]] = []
    stream = CueStream(SETTINGS, 1, lambda _band, r: r, lambda c: log.append((now, c.text)))
    items = [(segment(1.0, 2.0), 0), (segment(2.0, 3.0), 1)]
    readings = {0: reading("One"), 1: reading("Two")}
    for now, known, horizon in [(2.5, 1, 2.0), (3.04, 2, 3.04), (3.2, 2, 3.2)]:
        stream.update(items[:known], readings, [horizon])
    assert log == [(3.2, "One"), (3.2, "Two")]


def test_a_band_waits_for_the_other_bands_frontier():
    emitted: list[Cue] = []
    stream = CueStream(SETTINGS, 2, lambda _band, r: r, emitted.append)
    top = (segment(1.0, 2.0, band=1), 0)
    stream.update([top], {0: reading("Top")}, [0.5, 3.0])  # the bottom band may still start a cue at 0.5
    assert emitted == []
    stream.update([top], {0: reading("Top")}, [3.0, 3.0])
    assert [c.text for c in emitted] == ["Top"]


def test_readings_coming_in_while_the_input_stalls_still_go_out():
    emitted: list[Cue] = []
    stream = CueStream(SETTINGS, 1, lambda _band, r: r, emitted.append)
    readings: dict[int, Reading] = {}
    stream.update([(segment(1.0, 2.0), 0)], readings, [3.0])  # no frame comes after this one
    assert emitted == []
    readings[0] = reading("Late reading")
    stream.refresh()  # what the OCR worker calls
    assert [c.text for c in emitted] == ["Late reading"]


def test_an_error_in_the_callback_on_the_worker_thread_reaches_the_decode_loop():
    def broken_pipe(cue: Cue) -> None:
        raise SubextractError("stdout: the reader closed the pipe")

    stream = CueStream(SETTINGS, 1, lambda _band, r: r, broken_pipe)
    readings: dict[int, Reading] = {}
    stream.update([(segment(1.0, 2.0), 0)], readings, [3.0])
    readings[0] = reading("One")
    stream.refresh()  # must not raise on the worker's thread
    with pytest.raises(SubextractError, match="closed the pipe"):
        stream.update([(segment(1.0, 2.0), 0)], readings, [3.1])


def test_a_final_list_that_contradicts_the_stream_is_an_error():
    stream = CueStream(SETTINGS, 1, lambda _band, r: r, lambda c: None)
    stream.update([(segment(1.0, 2.0), 0)], {0: reading("One")}, [3.0])
    with pytest.raises(RuntimeError):
        stream.finish([cue("Other", 1.0, 2.0)])


# --------------------------------------------------------------------------------------------
# Watchlists and records
# --------------------------------------------------------------------------------------------

WATCHLIST = """# words, phrases and regexes
ass
Free Money
炸弹
re:\\bkill(s|ed|ing)?\\b
"""


@pytest.mark.parametrize("text, flags", [
    ("You kiss like a donkey's ass", ["ass"]),
    ("Welcome to the class", []),  # whole words only in spaced scripts
    ("FREE   money for all", ["Free Money"]),
    ("Get your free\nmoney here", ["Free Money"]),  # a phrase across the cue's two lines
    ("Ｆｒｅｅ Ｍｏｎｅｙ", ["Free Money"]),  # full-width letters (NFKC)
    ("他说这里有炸弹", ["炸弹"]),  # no word boundaries in Chinese
    ("He killed it", ["re:\\bkill(s|ed|ing)?\\b"]),
    ("Skillful", []),
    ("ass and KILLS", ["ass", "re:\\bkill(s|ed|ing)?\\b"]),
])
def test_watchlist_matches(text, flags):
    assert Watchlist.parse(WATCHLIST).matches(text) == flags


@pytest.mark.parametrize("text, fragment", [
    ("re:(unclosed", "invalid regular expression"),
    ("re:x*", "matches empty text"),
    ("# only a comment\n\n", "no terms"),
])
def test_bad_watchlists_are_refused_with_the_line(text, fragment):
    with pytest.raises(SubextractError, match=fragment):
        Watchlist.parse(text, "words.txt")


def test_only_flagged_needs_a_watchlist(tmp_path):
    with pytest.raises(SubextractError, match="--only-flagged needs --watchlist"):
        watchlist_option(None, True)
    with pytest.raises(SubextractError, match="cannot read the watchlist"):
        watchlist_option(str(tmp_path / "missing.txt"), False)


def test_feed_records_carry_video_language_and_flags():
    feed = CueFeed("talk.mp4", Watchlist.parse("money"), only_flagged=True)
    cues = [cue("Free money", 1.0, 2.0), cue("Nothing here", 3.0, 4.0)]
    lines = [json.loads(line) for line in feed.render(cues).splitlines()]
    assert lines == [{"video": "talk.mp4", "start": 1.0, "end": 2.0, "text": "Free money", "lines": ["Free money"],
                      "languages": ["en"], "confidence": 0.9, "band": 0, "language": "en", "flags": ["money"]}]


def test_plain_feed_is_the_jsonl_format():
    cues = [cue("One", 1.0, 2.0), cue("Two\nlines", 3.0, 4.0)]
    assert CueFeed("v.mp4").render(cues) == render(cues, "jsonl", {"video": "v.mp4"})


def test_feed_file_is_created_with_its_first_line(tmp_path):
    target = tmp_path / "feed.jsonl"
    sink = FeedSink(str(target))
    assert not target.exists()
    sink.write_line('{"a": 1}\n')
    assert target.read_text() == '{"a": 1}\n'  # flushed: readable while the run goes on
    sink.close()
    appending = FeedSink(str(target), mode="a")
    appending.write_line('{"b": 2}\n')
    appending.close()
    assert target.read_text().splitlines() == ['{"a": 1}', '{"b": 2}']


# --------------------------------------------------------------------------------------------
# Which inputs FFmpeg may open
# --------------------------------------------------------------------------------------------

# Public addresses as literals: the test needs no DNS (names are vetted by what they resolve to).
@pytest.mark.parametrize("url, whitelist", [
    ("http://93.184.215.14/a.mp4", "http,https,tcp,tls,crypto,httpproxy"),
    ("https://[2606:4700::6810:85e5]/live/index.m3u8", "http,https,tcp,tls,crypto,httpproxy"),
    ("rtmp://8.8.8.8/app/key", "rtmp,rtmps,tcp,tls"), ("rtmps://1.1.1.1:8443/app/key", "rtmp,rtmps,tcp,tls")])
def test_allowed_urls(url, whitelist):
    assert is_url(url)
    check_url(url)
    args = input_args(url, proxy="http://127.0.0.1:9")
    assert args[args.index("-protocol_whitelist") + 1] == whitelist
    assert int(args[args.index("-rw_timeout") + 1]) > 0
    if url.startswith("http"):  # every request it causes goes through the vetting proxy
        assert args[args.index("-http_proxy") + 1] == "http://127.0.0.1:9"


@pytest.mark.parametrize("url, fragment", [
    ("file:///etc/passwd", "protocol 'file' is not allowed"),
    ("concat:a.mp4|b.mp4", "protocol 'concat' is not allowed"),
    ("subfile:,start,0,end,100,:/etc/passwd", "protocol 'subfile' is not allowed"),
    ("udp://0.0.0.0:1234", "protocol 'udp' is not allowed"),
    ("hls+http://example.com/a.m3u8", "protocol 'hls+http' is not allowed"),
    ("http:///no-host", "no host"),
])
def test_refused_urls(url, fragment):
    assert is_url(url)
    with pytest.raises(SubextractError, match=re.escape(fragment)):
        check_url(url)


def test_local_files_may_not_reach_the_network(tmp_path):
    local = tmp_path / "odd:name.mp4"
    local.write_bytes(b"x")
    assert not is_url(str(local))  # an existing file is a file, whatever its name
    args = input_args(str(local))
    assert args[:2] == ["-protocol_whitelist", "file,crypto,data"]
    assert "hls" not in args[args.index("-format_whitelist") + 1].split(",")  # real containers only


# --------------------------------------------------------------------------------------------
# End to end: the real CLI, read through a pipe while it runs
# --------------------------------------------------------------------------------------------

def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "subextract", *args]


def read_lines_while_running(command: list[str], timeout: float = 300) -> tuple[list[tuple[float, bool, str]], int, str]:
    """(arrival time, process still running?, line) for each stdout line; exit code; stderr."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    arrivals = []
    deadline = time.monotonic() + timeout
    for line in process.stdout:
        arrivals.append((time.monotonic(), process.poll() is None, line))
        assert time.monotonic() < deadline, "the feed took too long"
    code = process.wait(timeout=60)
    return arrivals, code, process.stderr.read()


def records(arrivals) -> list[dict]:
    return [json.loads(line) for _, _, line in arrivals]


def expected_first_cue(name: str) -> pysrt.SubRipItem:
    return pysrt.open(str(SAMPLES / f"{name}.srt"))[0]


def test_jsonl_cues_arrive_while_the_video_is_still_running(tmp_path):
    watchlist = tmp_path / "words.txt"
    watchlist.write_text("re:天下\n")
    video = SAMPLES / "zh_bottom.mp4"
    arrivals, code, err = read_lines_while_running(
        cli(str(video), "--end", "10", "--format", "jsonl", "-o", "-", "--watchlist", str(watchlist), "--quiet"))
    assert code == 0, err
    assert len(arrivals) >= 2
    assert arrivals[0][1], "the first cue came only after the process ended"
    found = records(arrivals)
    assert [r["start"] for r in found] == sorted(r["start"] for r in found)
    first = expected_first_cue("zh_bottom")
    assert found[0]["text"] == first.text and found[0]["video"] == str(video)
    assert found[0]["flags"] == ["re:天下"] and found[0]["language"] == "zh"
    assert {"start", "end", "text", "lines", "language", "confidence", "video"} <= set(found[0])


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep the test output clean
        pass


class _LiveHandler(_QuietHandler):
    """Sends a file as a live stream of unknown length: the first ``hold_at`` share at once, then
    nothing until ``release`` is set (a broadcast that has not happened yet), then the rest."""

    hold_at = 0.85
    release = threading.Event()

    def do_GET(self) -> None:
        data = Path(self.translate_path(self.path)).read_bytes()
        split = int(len(data) * self.hold_at) // 188 * 188  # on an MPEG-TS packet boundary
        self.send_response(200)
        self.send_header("Content-Type", "video/mp2t")
        self.end_headers()
        try:
            self.wfile.write(data[:split])
            self.wfile.flush()
            self.release.wait(timeout=120)
            self.wfile.write(data[split:])
        except (BrokenPipeError, ConnectionResetError):
            pass  # the probe reads only the start


@pytest.fixture
def serve(tmp_path) -> Iterator:
    """``serve(folder, handler)`` → base URL of a 127.0.0.1 server for the test's duration."""
    servers = []

    def start(folder: Path, handler=_QuietHandler) -> str:
        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), partial(handler, directory=str(folder)))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def hls(tmp_path) -> Path:
    """The first 8 s of a sample as an HLS playlist with MPEG-TS segments."""
    folder = tmp_path / "hls"
    folder.mkdir()
    run_ffmpeg("-i", str(SAMPLES / "en_two_line.mp4"), "-t", "8", "-c", "copy", "-f", "hls", "-hls_time", "2",
               "-hls_list_size", "0", "-hls_segment_filename", str(folder / "seg%d.ts"), str(folder / "index.m3u8"))
    return folder


def test_an_hls_stream_served_over_http(serve, hls):
    url = serve(hls) + "/index.m3u8"
    arrivals, code, err = read_lines_while_running(cli(url, "--end", "5", "--format", "jsonl", "-o", "-", "--quiet",
                                                       "--allow-private-network"))
    assert code == 0, err
    found = records(arrivals)
    first = expected_first_cue("en_two_line")
    assert found and found[0]["video"] == url
    assert found[0]["text"] == first.text
    assert abs(found[0]["start"] - first.start.ordinal / 1000) <= 0.08


def test_a_live_stream_is_read_as_it_arrives(serve, tmp_path):
    """MPEG-TS over http with no length; the server holds back the last seconds until the first cue
    has come out, so that cue can only have been found from what had arrived."""
    live = tmp_path / "live"
    live.mkdir()
    run_ffmpeg("-i", str(SAMPLES / "zh_bottom.mp4"), "-t", "9", "-c", "copy", "-f", "mpegts", str(live / "tv.ts"))
    _LiveHandler.release = threading.Event()
    url = serve(live, _LiveHandler) + "/tv.ts"
    process = subprocess.Popen(cli(url, "--region", "bottom", "--format", "jsonl", "-o", "-", "--allow-private-network"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               # The pre-scan's own read of the held stream gives up after 20 s (a
                               # broadcast not yet sent) and the band is found from the main read;
                               # the first cue comes a few seconds into that read's stall, well within 20 s.
                               env={**os.environ, "SUBEXTRACT_READ_TIMEOUT": "20"})
    try:
        first = json.loads(process.stdout.readline())  # comes while the stream is held back
        _LiveHandler.release.set()
        rest = [json.loads(line) for line in process.stdout]
        code, err = process.wait(timeout=120), process.stderr.read()
    finally:
        _LiveHandler.release.set()
        process.kill()
    assert code == 0, err
    assert "warning" not in err  # a stream of unknown length cannot have "stopped early"
    expected = pysrt.open(str(SAMPLES / "zh_bottom.srt"))
    assert first["text"] == expected[0].text and first["video"] == url
    assert [r["text"] for r in rest][:1] == [expected[1].text]


@pytest.mark.parametrize("source, fragment", [
    ("file:///etc/passwd", "protocol 'file' is not allowed"),
    ("concat:/etc/passwd|/etc/hostname", "protocol 'concat' is not allowed"),
    ("ftp://127.0.0.1/video.mp4", "protocol 'ftp' is not allowed"),
])
def test_a_disallowed_protocol_is_refused(source, fragment, tmp_path):
    result = subprocess.run(cli(source, "-o", "-", "--format", "jsonl"), capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [f"subextract: error: {source}: {fragment} "
                                                  "(inputs are local files or http, https, rtmp, rtmps URLs)"]


def test_a_playlist_may_not_open_local_files(serve, hls):
    """An HLS playlist over http whose segments are file: URLs: FFmpeg may not open them."""
    playlist = (hls / "index.m3u8").read_text()
    (hls / "evil.m3u8").write_text(re.sub(r"^(seg\d+\.ts)$", lambda m: f"file://{hls / m.group(1)}", playlist,
                                          flags=re.M))
    url = serve(hls) + "/evil.m3u8"
    result = subprocess.run(cli(url, "-o", "-", "--format", "jsonl", "--allow-private-network"), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"subextract: error: {url}: the stream names a source it may not open "
        "(Protocol 'file' not on whitelist 'http,https,tcp,tls,crypto,httpproxy'!)"]
