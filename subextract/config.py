"""Settings: presets in ``configs/*.yaml`` (data), merged over ``default.yaml``, then CLI overrides."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from subextract.errors import SubextractError


@dataclass(frozen=True)
class RegionSettings:
    mode: str
    prescan_frames: int
    prescan_interval: float
    prescan_det_side: int
    static_share: float
    centre_tolerance: float
    line_padding: float
    extra_lines: float
    fallback_share: float
    max_width: int


@dataclass(frozen=True)
class SampleSettings:
    fps: float | None
    reference_frames_only: bool


@dataclass(frozen=True)
class SegmentSettings:
    analysis_width: int
    bright_min: int
    stroke_kernel: int
    contrast_min: int
    dark_max: int
    min_text_share: float
    text_hold: float
    change_threshold: float
    exact_change_threshold: float
    replacement_new_share: float
    confirm_frames: int
    min_line_density: float
    keep_frames: int
    fade_frames: int
    fade_min_ratio: float
    fade_min_step: float
    hold_contrast: int
    hold_share: float
    look_back_frames: int
    outline_share: float
    outline_evidence: int
    chroma_advantage: float
    plane_noise_floor: int
    repeat_difference: float
    repeat_glyph_change: float
    plain_bright_margin: int
    plain_bright_low: int
    plain_bright_high: int


@dataclass(frozen=True)
class OcrSettings:
    engine: str
    det_side: int
    threads: int
    min_confidence: float
    min_line_height: float
    trust_line_boxes: float
    # Vision-language engines (vllm, openai): see default.yaml and docs/gpu.md.
    model: str
    server: str
    prompt: str
    prompt_template: str
    tagged_lines: bool
    max_side: int
    max_pixels: int
    stack: int
    temperature: float
    max_tokens: int
    repetition_penalty: float
    tail_repeats: int
    sampling_extra: dict[str, Any]
    skip_special_tokens: bool
    concurrency: int
    timeout: float
    retries: int
    engine_options: dict[str, Any]


@dataclass(frozen=True)
class AlignSettings:
    merge_similarity: float
    merge_gap: float
    min_duration: float


@dataclass(frozen=True)
class TranslateSettings:
    engine: str
    model: str
    server: str
    batch_size: int
    context_cues: int
    retries: int
    retry_temperature: float
    temperature: float
    top_p: float
    top_k: int
    repetition_penalty: float
    max_tokens: int
    concurrency: int
    timeout: float
    request_retries: int
    engine_options: dict[str, Any]
    prompts: dict[str, dict[str, str]]


@dataclass(frozen=True)
class Settings:
    region: RegionSettings
    sample: SampleSettings
    segment: SegmentSettings
    ocr: OcrSettings
    align: AlignSettings
    translate: TranslateSettings


_SECTION_TYPES = {"region": RegionSettings, "sample": SampleSettings, "segment": SegmentSettings,
                  "ocr": OcrSettings, "align": AlignSettings, "translate": TranslateSettings}


def preset_names() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files("subextract.configs").iterdir()
                  if p.name.endswith(".yaml"))


def _read_yaml(source: str | Path) -> dict[str, Any]:
    try:
        text = Path(source).read_text() if isinstance(source, Path) else \
            resources.files("subextract.configs").joinpath(f"{source}.yaml").read_text()
    except FileNotFoundError:
        raise SubextractError(f"config {source!s}: not found (presets: {', '.join(preset_names())})") from None
    except OSError as exc:
        raise SubextractError(f"config {source!s}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise SubextractError(f"config {source!s}: invalid YAML ({exc.__class__.__name__})") from None
    if not isinstance(data, dict):
        raise SubextractError(f"config {source!s}: expected a mapping of sections")
    return data


def _merge(base: dict[str, Any], override: dict[str, Any], origin: str) -> dict[str, Any]:
    merged = {name: dict(values) for name, values in base.items()}
    for section, values in override.items():
        values = {} if values is None else values  # a section whose keys are all commented out
        if section not in merged or not isinstance(values, dict):
            raise SubextractError(f"config {origin}: unknown section {section!r}")
        for key, value in values.items():
            if key not in merged[section]:
                raise SubextractError(f"config {origin}: unknown setting {section}.{key}")
            if isinstance(value, dict) and isinstance(merged[section][key], dict):
                value = _merged_mapping(merged[section][key], value)
            merged[section][key] = value
    return merged


def _merged_mapping(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Mappings merge key by key at every depth: a preset changes one of ocr.engine_options, or
    one prompt of translate.prompts.zh, and keeps the rest."""
    merged = dict(base)
    for key, value in override.items():
        both = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = _merged_mapping(merged[key], value) if both else value
    return merged


def load_settings(config: str | Sequence[str] | None = None,
                  overrides: dict[str, dict[str, Any]] | None = None) -> Settings:
    """``config`` is a preset name (``fast``) or a path to a YAML file, or several of them applied
    in order (an OCR preset and a translator preset); ``overrides`` win over all."""
    data = _read_yaml("default")
    for name in [config] if isinstance(config, str) else config or []:
        is_path = name.endswith((".yaml", ".yml")) or "/" in name
        data = _merge(data, _read_yaml(Path(name) if is_path else name), name)
    if overrides:
        given = {section: {k: v for k, v in values.items() if v is not None} for section, values in overrides.items()}
        data = _merge(data, given, "command line")
    return Settings(**{name: cls(**data[name]) for name, cls in _SECTION_TYPES.items()})
