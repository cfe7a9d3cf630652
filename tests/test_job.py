"""subextract.job: one video's job as the CLI, the batch runner, the service and Ray run it —
real FFmpeg and the embedded engine on a bundled sample, the files read back by real parsers."""

from __future__ import annotations

import json
from pathlib import Path

import pysrt
import pytest

from subextract.config import load_settings
from subextract.feeds import FeedSink, Watchlist
from subextract.job import (JobEvents, JobOptions, JobOutputs, language_output, output_name, outputs_beside_video,
                            outputs_in_tree, run_job, translation_tag)

SAMPLE = Path(__file__).resolve().parent.parent / "sample_videos" / "zh_bottom.mp4"
END = 6.0  # the first two cues: 知其雄，守其雌，为天下溪 (1.88-5.72) and the start of the second


def test_naming_beside_the_video():
    assert output_name("/v/movie.mp4", "zh", "srt") == "/v/movie.zh.srt"
    assert output_name("/v/movie.mp4", "all", "vtt") == "/v/movie.vtt"
    assert language_output("/v/movie.zh.srt", "zh", "en") == "/v/movie.en.srt"
    assert language_output("/v/movie.srt", "all", "en") == "/v/movie.en.srt"
    assert translation_tag("all", "en", bilingual=True) == "orig+en"
    plain = outputs_beside_video("/v/movie.mp4", JobOptions(lang="zh"))
    assert plain == JobOutputs(cues="/v/movie.zh.srt")
    translated = outputs_beside_video("/v/movie.mp4", JobOptions(lang="zh", translate="en"), "/o/m.zh.srt")
    assert (translated.cues, translated.translation) == ("/o/m.zh.srt", "/o/m.en.srt")
    bilingual = outputs_beside_video("/v/movie.mp4", JobOptions(lang="zh", translate="en", bilingual=True))
    assert (bilingual.cues, bilingual.translation, bilingual.fallback) == (None, "/v/movie.zh+en.srt",
                                                                          "/v/movie.zh.srt")
    assert outputs_beside_video("/v/m.mp4", JobOptions(fmt="jsonl")).streamed


def test_naming_in_a_batch_tree_keeps_the_original_beside_a_bilingual_file():
    tree = outputs_in_tree(Path("/out/a/m.zh.srt"), JobOptions(lang="zh", translate="en", bilingual=True))
    assert (tree.cues, tree.translation) == ("/out/a/m.zh.srt", "/out/a/m.zh+en.srt")


@pytest.fixture(scope="module")
def settings():
    return load_settings()


def test_run_job_writes_the_cues_through_place_and_reports_progress(tmp_path, settings):
    placed, stages, progress = [], [], []

    def place(path: str, text: str) -> str:
        target = tmp_path / Path(path).name
        target.write_text(text, encoding="utf-8")
        placed.append(path)
        return str(target)

    job = run_job(str(SAMPLE), settings, JobOptions(lang="zh", end=END), JobOutputs(cues="where/the/user/said.srt"),
                  place=place, events=JobEvents(progress=lambda done, total, segments: progress.append(done),
                                                stage=stages.append))
    assert placed == ["where/the/user/said.srt"]
    assert job.written == [str(tmp_path / "said.srt")]
    items = pysrt.open(str(tmp_path / "said.srt"))
    assert items[0].text == "知其雄，守其雌，为天下溪"
    assert (items[0].start.ordinal, items[0].end.ordinal) == (1880, 5720)
    assert job.complete and job.cues[0].text == items[0].text
    assert job.metadata["video"] == str(SAMPLE) and job.metadata["height"] == 720
    assert stages[0] == "probing" and "reading" in stages
    assert progress and max(progress) <= END + 0.1


def test_jsonl_streams_to_the_file_and_to_listeners_with_watchlist_flags(tmp_path, settings):
    out, feed_file = tmp_path / "cues.jsonl", tmp_path / "feed.jsonl"
    heard: list[dict] = []
    feed = FeedSink(str(feed_file))
    options = JobOptions(lang="zh", fmt="jsonl", end=END, watchlist=Watchlist.parse("为天下溪\n"))
    job = run_job(str(SAMPLE), settings, options, JobOutputs(cues=str(out), streamed=True),
                  events=JobEvents(cue=heard.append, feeds=[feed]))
    feed.close()
    streamed = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert streamed == [json.loads(line) for line in feed_file.read_text(encoding="utf-8").splitlines()] == heard
    assert streamed[0]["text"] == "知其雄，守其雌，为天下溪" and streamed[0]["flags"] == ["为天下溪"]
    assert job.flagged == 1 and job.written == [str(out)]


def test_only_flagged_keeps_the_matching_cues(tmp_path, settings):
    options = JobOptions(lang="zh", end=END, watchlist=Watchlist.parse("no such words\n"), only_flagged=True)
    job = run_job(str(SAMPLE), settings, options, JobOutputs(cues=str(tmp_path / "none.srt")))
    assert job.extraction.cues and job.cues == []
    assert (tmp_path / "none.srt").read_text() == ""
