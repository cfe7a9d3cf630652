"""The Python API takes what the command line takes: a path object, ``region=``, ``fps=``,
``config=``; and ``--region`` as shares of the picture, so one box serves videos of every size."""

from __future__ import annotations

from pathlib import Path

import pytest

import subextract
from conftest import ZH_CUES
from subextract.errors import SubextractError
from subextract.serve.options import parse_options
from subextract.stages.region import user_box
from test_cli import assert_cues, cue_tuples, run_cli

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_videos" / "zh_bottom.mp4"  # 1280x720; the test clips are 640x360


def test_extract_takes_a_path_and_the_cli_keywords(zh_clip, tmp_path):
    result = subextract.extract(Path(zh_clip), config="fast", region="0,0.5,1,0.5", fps=5, lang="zh", end=2,
                                save_crops=tmp_path / "crops")
    assert_cues([(c.start, c.end, c.text) for c in result.cues], ZH_CUES[:1])
    assert result.bands[0].y == 180 and result.bands[0].height == 180
    assert (tmp_path / "crops" / "crops.json").exists()
    result.save(tmp_path / "out.srt")
    assert_cues(cue_tuples((tmp_path / "out.srt").read_text(encoding="utf-8")), ZH_CUES[:1])


def test_extract_region_and_fps_override_loaded_settings(zh_clip):
    from subextract.config import load_settings

    result = subextract.extract(zh_clip, load_settings("fast"), region="bottom", end=2)
    assert result.bands[0].label == "bottom"
    with pytest.raises(SubextractError, match="not both"):
        subextract.extract(zh_clip, load_settings("fast"), config="fast")


@pytest.mark.parametrize("region", ["0,0.6,1,0.4", "0%,60%,100%,40%", " 0 , .6 , 1 , .4 "])
def test_one_relative_box_serves_every_size(zh_clip, region, tmp_path):
    small = run_cli(zh_clip, "--region", region, "-o", "-", "-q", "--end", "2")
    large = run_cli(SAMPLE, "--region", region, "-o", "-", "-q", "--end", "6")
    assert small[0] == 0 and large[0] == 0, (small[2], large[2])
    assert_cues(cue_tuples(small[1]), ZH_CUES[:1])
    assert [item[2] for item in cue_tuples(large[1])] == ["知其雄，守其雌，为天下溪"]


@pytest.mark.parametrize("region, words", [("0,0.8,1,0.3", "must lie inside it"),
                                           ("0%,80,100%,20%", "percentages or none"),
                                           ("0,1.5,1,0.2", "must lie inside it"), ("0,80%%,1,2", "expected auto")])
def test_a_relative_box_outside_the_picture_is_refused(region, words):
    with pytest.raises(SubextractError, match=words):
        user_box(region)
    with pytest.raises(SubextractError, match=words):
        parse_options({"region": region}, [], can_translate=False)


def test_the_pixels_form_is_unchanged():
    box = user_box("0,300,640,60")
    assert box is not None and box.in_pixels(640, 360) == (0, 300, 640, 60)
    assert user_box("0,0.8,1,0.2").in_pixels(1280, 720) == (0, 576, 1280, 144)
    assert user_box("0%,80%,100%,20%").in_pixels(640, 360) == (0, 288, 640, 72)
