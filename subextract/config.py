"""Settings: presets in ``configs/*.yaml`` (data), merged over ``default.yaml``, then CLI overrides.

Every layer is validated as it is merged (msgspec against the dataclasses' types and the ranges in
their annotations), so a wrong value fails at once with one line naming the file, the key, the
value and what is allowed, not as a traceback after minutes of work.
"""

from __future__ import annotations

import math
import re
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import yaml
from msgspec import Meta

from subextract.errors import SubextractError

# Ranges of the settings, as msgspec constraints.
Count = Annotated[int, Meta(ge=1)]
NonNegativeInt = Annotated[int, Meta(ge=0)]
Pixels = Annotated[int, Meta(ge=16)]
Level = Annotated[int, Meta(ge=0, le=255)]  # an 8-bit grey level
Share = Annotated[float, Meta(ge=0, le=1)]
Positive = Annotated[float, Meta(gt=0)]
NonNegative = Annotated[float, Meta(ge=0)]


@dataclass(frozen=True)
class RegionSettings:
    mode: str
    prescan_frames: Count
    prescan_interval: Positive
    prescan_det_side: Pixels
    prescan_retry_side: Pixels
    prescan_retry_share: Share
    static_share: Share
    centre_tolerance: Share
    line_padding: NonNegative
    extra_lines: NonNegative
    fallback_share: Annotated[float, Meta(gt=0, le=1)]
    max_width: Pixels
    max_line_height: Share
    edge_zone: Share
    same_edges: Share
    same_glyphs: Share
    glyph_drop: Share
    static_strokes: Share


@dataclass(frozen=True)
class GuardSettings:
    enabled: bool
    interval: Positive
    line_height: Annotated[int, Meta(ge=8)]
    line_height_range: Annotated[float, Meta(ge=1)]


@dataclass(frozen=True)
class SampleSettings:
    fps: Positive | None
    reference_frames_only: bool


@dataclass(frozen=True)
class SegmentSettings:
    analysis_width: Pixels
    max_analysis_downscale: Positive
    fine_analysis_factor: Positive
    thin_line_density: Share
    bright_min: Level
    stroke_kernel: Annotated[int, Meta(ge=1, le=63)]
    contrast_min: Level
    dark_max: Level
    min_text_share: Share
    text_hold: Share
    change_threshold: Share
    exact_change_threshold: Share
    replacement_new_share: Share
    replacement_carried_share: Share
    confirm_frames: Count
    held_moved_share: Share
    held_noise: Level
    min_line_density: Share
    keep_frames: Count
    second_look_frames: Count
    fade_frames: NonNegativeInt
    fade_min_ratio: Share
    fade_min_step: Share
    hold_contrast: Level
    hold_share: Share
    hold_line_height: Share
    look_back_frames: NonNegativeInt
    outline_share: Share
    outline_evidence: Level
    outline_floor: Level
    chroma_advantage: Positive
    colour_chroma: NonNegative
    chroma_text_share: Share
    plane_noise_floor: Level
    repeat_difference: Share
    repeat_glyph_change: Share
    repeat_hash_bits: NonNegativeInt
    repeat_stroke_count_share: Share
    fade_new_share: Share
    fade_line_share: Share
    refine_join_gap: NonNegative
    centred_lines: Share
    plain_bright_margin: Level
    plain_bright_low: Level
    plain_bright_high: Level
    line_text_share: Share
    min_line_strokes: NonNegativeInt
    line_kept_share: Share
    # The stroke pixels of the smallest subtitle line the pre-scan found, in this video's text mask at
    # analysis size (set by the pipeline, not by a preset; 0: none found; stages/mask.py min_text_pixels).
    line_strokes: NonNegativeInt = 0


@dataclass(frozen=True)
class OcrSettings:
    engine: Literal["rapidocr", "vllm", "openai", "transformers"]
    det_side: Pixels
    fine_det_side: NonNegativeInt
    threads: Count
    min_confidence: Share
    second_look_below: Share
    min_line_height: Share
    trust_line_boxes: Share
    # Vision-language engines (vllm, openai): see default.yaml and docs/gpu.md.
    model: str
    server: str
    prompt: str
    prompt_template: str
    tagged_lines: bool
    max_side: Pixels
    max_pixels: Annotated[int, Meta(ge=256)]
    vision_tower: Literal["vllm", "subextract"]
    stack: Count
    temperature: NonNegative
    max_tokens: Count
    line_tokens: NonNegative
    repetition_penalty: Positive
    tail_repeats: NonNegativeInt
    sampling_extra: dict[str, Any]
    skip_special_tokens: bool
    concurrency: Count
    timeout: Positive
    retries: NonNegativeInt
    engine_options: dict[str, Any]
    replicas: Count = 1  # vllm, transformers: copies of the engine, each in a process of its own
    # The --lang of the run (set by the pipeline, not by a preset): rapidocr routes lines of
    # other scripts to Tesseract's models by it (stages/ocr/routed.py).
    lang: str = "all"


@dataclass(frozen=True)
class AlignSettings:
    merge_similarity: NonNegative  # 0-100; above 100 nothing merges
    merge_similarity_unchanged: NonNegative  # ... back to back, where the segmenter saw the text unchanged
    merge_gap: NonNegative
    min_duration: NonNegative


@dataclass(frozen=True)
class TranslateSettings:
    engine: Literal["", "vllm", "openai"]
    model: str
    server: str
    batch_size: Count
    context_cues: NonNegativeInt
    retries: NonNegativeInt
    retry_temperature: NonNegative
    temperature: NonNegative
    top_p: Annotated[float, Meta(gt=0, le=1)]
    top_k: Annotated[int, Meta(ge=-1)]
    repetition_penalty: Positive
    max_tokens: Count
    concurrency: Count
    timeout: Positive
    request_retries: NonNegativeInt
    engine_options: dict[str, Any]
    prompts: dict[str, dict[str, str]]


@dataclass(frozen=True)
class Settings:
    region: RegionSettings
    sample: SampleSettings
    segment: SegmentSettings
    guard: GuardSettings
    ocr: OcrSettings
    align: AlignSettings
    translate: TranslateSettings


_SECTION_TYPES = {"region": RegionSettings, "sample": SampleSettings, "segment": SegmentSettings,
                  "guard": GuardSettings, "ocr": OcrSettings, "align": AlignSettings, "translate": TranslateSettings}


def preset_names() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files("subextract.configs").iterdir()
                  if p.name.endswith(".yaml"))


def _read_yaml(source: str | Path) -> dict[str, Any]:
    try:
        text = _read_capped(source) if isinstance(source, Path) else \
            resources.files("subextract.configs").joinpath(f"{source}.yaml").read_text()
    except FileNotFoundError:
        raise SubextractError(f"config {source!s}: not found (presets: {', '.join(preset_names())})") from None
    except OSError as exc:
        raise SubextractError(f"config {source!s}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise SubextractError(f"config {source!s}: not UTF-8 text") from None
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise SubextractError(f"config {source!s}: invalid YAML ({exc.__class__.__name__})") from None
    if not isinstance(data, dict):
        raise SubextractError(f"config {source!s}: expected a mapping of sections")
    return data


MAX_CONFIG_BYTES = 1024 * 1024  # a config is a page of settings: --config /dev/zero must not read forever


def _read_capped(path: Path) -> str:
    with open(path, "rb") as handle:
        data = handle.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise SubextractError(f"config {path}: larger than {MAX_CONFIG_BYTES // 1024} KiB, not a config file")
    return data.decode("utf-8-sig")


def _merge(base: dict[str, Any], override: dict[str, Any], origin: str) -> dict[str, Any]:
    merged = {name: dict(values) for name, values in base.items()}
    for section, values in override.items():
        values = {} if values is None else values  # a section whose keys are all commented out
        if section not in merged:
            raise SubextractError(f"config {origin}: unknown section {section!r} "
                                  f"(sections: {', '.join(_SECTION_TYPES)})")
        if not isinstance(values, dict):
            raise SubextractError(f"config {origin}: section {section!r} must be a mapping of settings "
                                  f"(KEY: VALUE lines below it), not {values!r}")
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
        _validated(data, name)
    if overrides:
        given = {section: {k: v for k, v in values.items() if v is not None} for section, values in overrides.items()}
        data = _merge(data, given, "command line")
    return Settings(**_validated(data, "command line" if overrides else "default"))


def _describe(annotation: Any) -> str:
    """What a setting's annotation allows, in words: ``int >= 16``, ``one of 'a', 'b'``, ``float > 0 or null``."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        meta = args[1]
        bounds = [f"{symbol} {getattr(meta, name)}" for name, symbol in
                  (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")) if getattr(meta, name) is not None]
        return " ".join([_describe(args[0]), ", ".join(bounds)]).strip()
    if origin is Literal:
        return "one of " + ", ".join(repr(choice) for choice in args)
    if args and type(None) in args:
        return " or ".join(_describe(arg) for arg in args if arg is not type(None)) + " or null"
    if origin is dict or annotation is dict:
        return "a mapping"
    return getattr(annotation, "__name__", str(annotation))


_ERROR_PATH = re.compile(r"^(?P<expected>.*?) - at `\$\.(?P<key>[A-Za-z0-9_]+)")


def _validated(data: dict[str, Any], origin: str) -> dict[str, Any]:
    """Each section as its dataclass, its types and ranges checked; one line for the first wrong value."""
    sections = {}
    for name, cls in _SECTION_TYPES.items():
        _check_finite(data[name], f"config {origin}: {name}")
        try:
            sections[name] = msgspec.convert(data[name], cls)
        except msgspec.ValidationError as exc:
            match = _ERROR_PATH.match(str(exc))
            if match is None:
                raise SubextractError(f"config {origin}: section {name}: {exc}") from None
            key = match.group("key")
            allowed = _describe(typing.get_type_hints(cls, include_extras=True)[key])
            raise SubextractError(f"config {origin}: {name}.{key} = {data[name].get(key)!r} is not allowed "
                                  f"(expected {allowed})") from None
    return sections


def _check_finite(values: Any, where: str) -> None:
    """No infinity or NaN at any depth (YAML reads ``.inf`` and ``.nan``): msgspec's ranges let
    infinity through (``.inf > 0``), and a time or limit of infinity poisons every sum it is in."""
    if isinstance(values, float) and not math.isfinite(values):
        raise SubextractError(f"{where} = {values!r} is not allowed (expected a finite number)")
    if isinstance(values, dict):
        for key, value in values.items():
            _check_finite(value, f"{where}.{key}")
    elif isinstance(values, list):
        for value in values:
            _check_finite(value, where)
