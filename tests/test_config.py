"""Settings: presets, user YAML files, command-line overrides, and clear errors for mistakes."""

from __future__ import annotations

import dataclasses

import pytest

from subextract.config import Settings, load_settings, preset_names
from subextract.errors import SubextractError


def test_presets_are_listed():
    assert {"default", "fast", "accurate"} <= set(preset_names())


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_loads_completely(name):
    settings = load_settings(name)
    assert isinstance(settings, Settings)
    for section in dataclasses.fields(settings):
        values = dataclasses.asdict(getattr(settings, section.name))
        # every setting has a value of a plain YAML type (sample.fps may be null: every frame)
        assert all(v is not None or (section.name, k) == ("sample", "fps") for k, v in values.items())


def test_presets_override_the_default():
    default, fast, accurate = load_settings(), load_settings("fast"), load_settings("accurate")
    assert default.sample.fps is None and not default.sample.reference_frames_only
    assert fast.sample.reference_frames_only and fast.region.prescan_frames < default.region.prescan_frames
    assert accurate.ocr.det_side > default.ocr.det_side
    # what a preset does not mention comes from default.yaml
    assert fast.align == default.align


def test_unknown_preset():
    with pytest.raises(SubextractError, match=r"config turbo: not found \(presets: .*fast"):
        load_settings("turbo")


def test_user_yaml_file(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("ocr:\n  min_confidence: 0.7\nalign:\n  min_duration: 0.5\n")
    settings = load_settings(str(path))
    assert settings.ocr.min_confidence == 0.7 and settings.align.min_duration == 0.5
    assert settings.ocr.det_side == load_settings().ocr.det_side


def test_user_yml_file_in_current_folder(tmp_path, monkeypatch):
    (tmp_path / "mine.yml").write_text("sample:\n  fps: 2\n")
    monkeypatch.chdir(tmp_path)
    assert load_settings("mine.yml").sample.fps == 2


def test_missing_user_file(tmp_path):
    with pytest.raises(SubextractError, match="not found"):
        load_settings(str(tmp_path / "nope.yaml"))


def test_user_file_that_is_a_directory(tmp_path):
    folder = tmp_path / "conf.yaml"
    folder.mkdir()
    with pytest.raises(SubextractError, match=r"^config .*conf\.yaml: "):
        load_settings(str(folder))


@pytest.mark.parametrize("text, message", [
    ("colour:\n  red: 1\n", r"unknown section 'colour'"),
    ("ocr:\n  det_sidee: 960\n", r"unknown setting ocr\.det_sidee"),
    ("ocr: 5\n", r"section 'ocr'"),
    ("- a\n- b\n", r"expected a mapping of sections"),
    ("ocr: [unclosed\n", r"invalid YAML"),
])
def test_bad_user_files(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(SubextractError, match=message) as caught:
        load_settings(str(path))
    assert "\n" not in str(caught.value)


def test_empty_user_file_is_the_default(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing yet\n")
    assert load_settings(str(path)) == load_settings()


def test_section_with_everything_commented_out(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("ocr:\n  # det_side: 960\nalign:\n  min_duration: 0.3\n")
    assert load_settings(str(path)).align.min_duration == 0.3


def test_overrides_win_and_none_is_ignored():
    settings = load_settings("fast", {"region": {"mode": "bottom"}, "sample": {"reference_frames_only": None}})
    assert settings.region.mode == "bottom"
    assert settings.sample.reference_frames_only  # None means "not given on the command line"
    assert load_settings(None, {"region": {"mode": None}, "sample": {"fps": None}}) == load_settings()


def test_override_of_unknown_key_is_rejected():
    with pytest.raises(SubextractError, match=r"config command line: unknown setting sample\.rate"):
        load_settings(None, {"sample": {"rate": 3}})


@pytest.mark.parametrize("text, fragments", [
    ("segment: {analysis_width: wide}\n", ["segment.analysis_width = 'wide' is not allowed", "expected int"]),
    ("segment:\n  confirm_frames: -5\n", ["segment.confirm_frames = -5 is not allowed", "int >= 1"]),
    ("segment:\n  bright_min: 300\n", ["segment.bright_min = 300", "int >= 0, <= 255"]),
    ("region:\n  static_share: 1.5\n", ["region.static_share = 1.5", "float >= 0, <= 1"]),
    ("sample:\n  fps: 0\n", ["sample.fps = 0", "float > 0"]),
    ("sample:\n  reference_frames_only: maybe\n", ["sample.reference_frames_only = 'maybe'", "expected bool"]),
    ("ocr:\n  engine: tesseract\n", ["ocr.engine = 'tesseract'", "'rapidocr', 'vllm', 'openai'"]),
    ("ocr:\n  engine_options: 3\n", ["ocr.engine_options = 3", "expected a mapping"]),
    ("translate:\n  top_p: 0\n", ["translate.top_p = 0"]),
    ("segment: 5\n", ["section 'segment' must be a mapping of settings", "not 5"]),
])
def test_values_are_checked_when_the_config_is_loaded(tmp_path, text, fragments):
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    with pytest.raises(SubextractError) as caught:
        load_settings(str(path))
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"config {path}: ")
    for fragment in fragments:
        assert fragment in message, message


def test_the_layer_with_the_wrong_value_is_named(tmp_path):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text("align:\n  min_duration: 0.3\n")
    bad.write_text("align:\n  merge_gap: soon\n")
    with pytest.raises(SubextractError, match=rf"^config {bad}: align\.merge_gap = 'soon'"):
        load_settings([str(good), str(bad)])


def test_a_bad_config_fails_the_batch_before_any_video(tmp_path):
    from test_batch import run_batch

    (tmp_path / "v.mp4").write_bytes(b"x")
    bad = tmp_path / "bad.yaml"
    bad.write_text("segment: {analysis_width: wide}\n")
    result = run_batch(str(tmp_path / "v.mp4"), "--out", str(tmp_path / "out"), "--config", str(bad))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [f"subextract: error: config {bad}: segment.analysis_width = 'wide' is "
                                          "not allowed (expected int >= 16)"]
