"""Language arguments as people type them, through every entry point, and never a silent empty
result: a run that read lines but kept none for ``--lang`` says so (stderr, JSON, the batch
manifest, the service's job) and ``--fail-on-empty`` makes it exit 3."""

from __future__ import annotations

import json

import pytest

import subextract
from conftest import EN_CUES, ZH_CUES
from serve_fixtures import EN_SAMPLE, Server, upload, wait_for
from subextract.cli import batch as batch_cli
from subextract.cli import extract as extract_cli
from subextract.cli import translate as translate_cli
from subextract.errors import SubextractError
from subextract.serve.options import parse_options
from test_cli import FAST, assert_cues, cue_tuples, run_cli

ENGLISH = ["en", "en-US", "EN", "eng", "English", "english", "en_GB"]
CHINESE = ["zh", "zh-Hans", "zh-CN", "zh_CN", "zh-Hant", "zh-TW", "zh-HK", "cmn", "chinese", "Chinese", "chi", "zho",
           "yue"]
FORMS = [(form, "en") for form in ENGLISH] + [(form, "zh") for form in CHINESE] + \
    [("ALL", "all"), ("auto", "auto"), ("ru-RU", "ru"), ("Russian", "ru"), ("iw", "he"), ("nb", "no"), ("ara", "ar")]


@pytest.mark.parametrize("form, code", FORMS)
def test_every_entry_point_reads_the_same_forms(form, code):
    assert extract_cli.build_parser().parse_args(["v.mp4", "--lang", form]).lang == code
    assert batch_cli.build_parser().parse_args(["v.mp4", "--out", "o", "--lang", form]).lang == code
    assert parse_options({"lang": form}, [], can_translate=False).lang == code


@pytest.mark.parametrize("form, tag", [("en-US", "en-US"), ("eng", "en"), ("English", "en"), ("pt_br", "pt-BR"),
                                       ("zh-Hant", "zh-Hant"), ("cmn", "zh"), ("Swahili", "sw")])
def test_translation_languages_keep_their_variant(form, tag):
    args = translate_cli.build_parser().parse_args(["a.srt", "--to", form, "--from", form])
    assert (args.to, args.source) == (tag, tag)
    assert extract_cli.build_parser().parse_args(["v.mp4", "--translate", form]).translate == tag


@pytest.mark.parametrize("value, words", [
    ("xx", ["--lang xx: not a language tag or name", "closest: ", "--list-languages"]),
    ("englsh", ["closest: en (English)", "--list-languages"]),
    ("sw", ["Swahili is not among the languages", "--lang all keeps every line", "--list-languages"]),
    ("../../../escaped", ["not a language tag or name"]),
])
def test_an_unknown_language_is_one_line_naming_the_closest(tmp_path, en_clip, value, words):
    video = tmp_path / "in" / "clip.mp4"
    video.parent.mkdir()
    video.symlink_to(en_clip)
    code, out, err = run_cli(video, "--lang", value, *FAST)
    assert code == 2 and out == "", err
    assert len(err.splitlines()) == 1 and err.startswith("subextract: error: "), err
    for word in words:
        assert word in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["clip.mp4", "in"]  # nothing written, anywhere


def test_the_service_refuses_an_unknown_language_with_the_same_line():
    with pytest.raises(SubextractError, match=r"^lang xx: not a language tag or name \(closest: .*--list-languages"):
        parse_options({"lang": "xx"}, [], can_translate=False)


def test_a_region_tag_reads_english_and_names_the_file_by_language(en_clip, tmp_path):
    video = tmp_path / "talk.mp4"
    video.symlink_to(en_clip)
    code, _, err = run_cli(video, "--lang", "en-US", "--end", "2", *FAST)
    assert code == 0, err
    assert_cues(cue_tuples((tmp_path / "talk.en.srt").read_text(encoding="utf-8")), EN_CUES[:1])


def test_traditional_chinese_tags_read_chinese(zh_clip):
    code, out, err = run_cli(zh_clip, "--lang", "zh-TW", "-o", "-", "--end", "2", *FAST)
    assert code == 0, err
    assert_cues(cue_tuples(out), ZH_CUES[:1])


def test_the_python_api_takes_a_language_name(en_clip):
    result = subextract.extract(str(en_clip), "fast", lang="English", end=2)
    assert result.lang == "en" and [cue.text for cue in result.cues] == [EN_CUES[0][2]]


# --------------------------------------------------------------------------------------------
# Never a silent empty result
# --------------------------------------------------------------------------------------------

WARNING = "lines read, all tagged en; --lang zh kept none"


def test_a_run_whose_language_kept_nothing_says_so(en_clip, tmp_path):
    out = tmp_path / "x.json"
    code, _, err = run_cli(en_clip, "--lang", "zh", "--format", "json", "-o", out, *FAST)
    assert code == 0, err
    assert [line for line in err.splitlines() if WARNING in line] == [f"subextract: warning: 2 {WARNING} "
                                                                     "(--lang all keeps every line)"]
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["cues"] == [] and document["languages_seen"] == ["en"]
    assert any(WARNING in warning for warning in document["warnings"])
    assert document["stats"]["lines_read"] == 2 and document["stats"]["lines_kept"] == 0


def test_fail_on_empty_exits_3(en_clip, tmp_path):
    code, _, err = run_cli(en_clip, "--lang", "zh", "-o", tmp_path / "x.srt", "--fail-on-empty", *FAST)
    assert code == 3 and WARNING in err and "no cue was written (--fail-on-empty)" in err
    code, _, err = run_cli(en_clip, "--lang", "en", "-o", tmp_path / "y.srt", "--fail-on-empty", "--end", "2", *FAST)
    assert code == 0, err


def test_batch_marks_a_video_whose_language_kept_nothing(en_clip, tmp_path):
    videos = tmp_path / "videos"
    videos.mkdir()
    (videos / "talk.mp4").symlink_to(en_clip)
    out = tmp_path / "out"
    code, _, err = run_cli("batch", videos, "--out", out, "--lang", "zh", "--region", "bottom", "--fail-on-empty")
    assert code == 3, err
    assert WARNING in err
    record = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()][-1]
    assert record["status"] == "done" and record["cues"] == 0 and record["languages_seen"] == ["en"]
    assert any(WARNING in warning for warning in record["warnings"])


def test_the_service_marks_a_job_whose_language_kept_nothing(tmp_path):
    server = Server(tmp_path / "data").start()
    try:
        with server.client() as client:
            response = upload(client, EN_SAMPLE, lang="Chinese", region="bottom", end="6")
            assert response.status_code == 202, response.text
            job = wait_for(client, response.json()["id"])
            assert job["status"] == "done" and job["options"]["lang"] == "zh"
            assert job["cues"] == 0 and job["languages_seen"] == ["en"]
            assert any("all tagged en; --lang zh kept none" in warning for warning in job["warnings"]), job
            refused = upload(client, EN_SAMPLE, lang="xx")
            assert refused.status_code == 400 and "--list-languages" in refused.json()["error"]
    finally:
        server.stop()


def test_no_warning_when_every_language_is_kept(en_clip):
    result = subextract.extract(str(en_clip), "fast", end=2)
    assert result.warnings == [] and result.stats.languages_seen == ["en"]
    assert result.metadata()["languages_seen"] == ["en"]
