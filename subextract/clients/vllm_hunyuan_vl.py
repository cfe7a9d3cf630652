"""HunyuanOCR on vLLM's native HunYuanVL module (vLLM 0.26 to 0.28), as subextract runs it.

Registered by subextract's vLLM plugin (``subextract.clients.vllm_plugin``) in place of vLLM's own
``HunYuanVLForConditionalGeneration``; importing this module needs that native module. It differs
from vLLM's class in four ways, each found on the lent H200 (docs/gpu.md):

- ``forward`` takes ``intermediate_tensors`` and ``inputs_embeds`` as optional. vLLM 0.26's V2
  model runner, its default for dense models, captures CUDA graphs calling ``forward`` without
  them, and the native class stops the engine's start ("forward() missing 1 required positional
  argument: 'intermediate_tensors'").
- The vision tower runs once per engine step for all the step's crops of one grid size. The
  native tower runs each of its 27 layers once per crop (a loop over the crops inside each layer),
  interpolates the position embedding and merges the patches once per crop: a GPU kept waiting
  on kernel launches. A band's crops all scale to the same size, so a step's crops go through
  each layer as one batch; what each crop gets is the native per-crop computation, batched
  (``vision_tower`` against ``visual(...)``: equal within bf16 rounding, checked on the H200).
- A prompt rendered by the model's chat template (image start, image, end: what ``vllm serve``
  sends) gets the model's processor's tokens; the native prompt update wrapped it again
  (``_Processor._get_prompt_updates``).
- Precomputed ``image_embeds`` (with ``image_grid_thw``) are accepted: the native class reads
  ``pixel_values.shape`` when only embeddings are given, returns them as one tensor where vLLM
  wants one per crop, and splits a request's embeddings by patch count instead of token count.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F
from vllm.model_executor.models import hunyuan_vision as native
from vllm.multimodal import MULTIMODAL_REGISTRY
from vllm.multimodal.inputs import MultiModalFieldConfig
from vllm.multimodal.parse import DictEmbeddingItems
from vllm.multimodal.processing import PromptReplacement


def visual_tokens(grid: Sequence[int], merge_size: int) -> int:
    """The embeddings one crop of patch grid (t, h, w) becomes: a row of merged patches per
    merged row plus its newline, then the begin and end embeddings."""
    _, height, width = (int(v) for v in grid)
    return (height // merge_size) * (width // merge_size + 1) + 2


def position_embedding(embeddings: native.HunYuanVisionPatchEmbed, height: int, width: int) -> torch.Tensor:
    """The position embedding of a (height x width)-patch crop, (height * width, hidden), float32:
    the native per-crop interpolation (HunYuanVisionPatchEmbed.forward, which adds 0.1 to the grid
    against rounding in the interpolation), once per grid size instead of once per crop."""
    if embeddings.patch_pos_embed is None:
        edge = embeddings.position_edge
        embeddings.patch_pos_embed = (embeddings.position_embedding.weight[1:, :]
                                      .reshape(1, edge, edge, embeddings.embed_dim).permute(0, 3, 1, 2).float())
    edge = embeddings.position_edge
    grid = F.interpolate(embeddings.patch_pos_embed, scale_factor=((height + 0.1) / edge, (width + 0.1) / edge),
                         mode=embeddings.interpolate_mode, align_corners=False)
    return grid.reshape(embeddings.embed_dim, -1).transpose(0, 1)


def vision_tower(visual: native.HunYuanVisionTransformer, pixel_values: torch.Tensor,
                 grids: Sequence[Sequence[int]]) -> list[torch.Tensor]:
    """The native tower's per-crop embeddings of every crop of ``pixel_values`` (flat patches in
    grid order), with each layer and the patch merger run once per grid size."""
    embeddings = visual.embeddings
    pixels = pixel_values.to(device=visual.device, dtype=visual.dtype)
    patches = embeddings.patch_embedding(
        pixels.reshape(-1, embeddings.num_channels, embeddings.patch_size, embeddings.patch_size)).flatten(1)
    sizes = [int(t) * int(h) * int(w) for t, h, w in grids]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    by_grid: dict[tuple[int, int, int], list[int]] = defaultdict(list)
    for index, grid in enumerate(grids):
        by_grid[tuple(int(v) for v in grid)].append(index)
    out: list[torch.Tensor | None] = [None] * len(grids)
    for (frames, height, width), members in by_grid.items():
        if frames != 1:
            raise ValueError(f"a picture of {frames} frames: HunYuanVL's tower reads still pictures only")
        length = height * width
        rows = torch.stack([patches[starts[i]:starts[i] + length] for i in members])
        hidden = rows + position_embedding(embeddings, height, width).to(rows.dtype)
        for layer in visual.layers:
            hidden = layer(hidden)
        merged = visual.perceive(hidden, size=(height, width))
        for position, index in enumerate(members):
            out[index] = merged[position]
    return out  # type: ignore[return-value]


def _fields(hf_inputs: Mapping[str, torch.Tensor], merge_size: int) -> Mapping[str, MultiModalFieldConfig]:
    """The native fields, with a request's embeddings split by each crop's token count."""
    fields = dict(native._hunyuan_vl_field_config(hf_inputs))
    grids = hf_inputs.get("image_grid_thw", torch.empty((0, 3)))
    tokens = torch.tensor([visual_tokens(grid, merge_size) for grid in grids.tolist()], dtype=torch.long)
    fields["image_embeds"] = MultiModalFieldConfig.flat_from_sizes("image", tokens)
    return fields


class _DataParser(native.HunYuanVLMultiModalDataParser):
    def __init__(self, merge_size: int, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self._merge_size = merge_size

    def _parse_image_data(self, data):  # noqa: ANN001, ANN202 - vLLM's signature
        if isinstance(data, dict):
            return DictEmbeddingItems(data, modality="image", required_fields={"image_embeds", "image_grid_thw"},
                                      fields_factory=functools.partial(_fields, merge_size=self._merge_size))
        return super()._parse_image_data(data)


class _ProcessingInfo(native.HunYuanVLProcessingInfo):
    def get_data_parser(self):  # noqa: ANN201 - vLLM's signature
        return _DataParser(self.get_hf_config().vision_config.spatial_merge_size,
                           expected_hidden_size=self._get_expected_hidden_size())


class _Processor(native.HunYuanVLMultiModalProcessor):
    def _get_mm_fields_config(self, hf_inputs, hf_processor_mm_kwargs):  # noqa: ANN001, ANN202 - vLLM's signature
        return _fields(hf_inputs, self.info.get_hf_config().vision_config.spatial_merge_size)

    def _get_prompt_updates(self, mm_items, hf_processor_mm_kwargs, out_mm_kwargs):  # noqa: ANN001, ANN202
        """The native update replaces the image token with start, the visual tokens and end. A prompt
        rendered by the model's chat template (what ``vllm serve`` sends) already holds start, image,
        end; vLLM 0.26 tokenizes a prompt before this update, so the native one made it start,
        start, ..., end, end (315 tokens for the processor's 313) and the engine died on the first
        read. The wrapped placeholder is replaced whole when it is there, the bare one otherwise."""
        bare = list(super()._get_prompt_updates(mm_items, hf_processor_mm_kwargs, out_mm_kwargs))
        processor = self.info.get_hf_processor(**hf_processor_mm_kwargs)
        wrapped = [processor.image_start_token_id, processor.image_token_id, processor.image_end_token_id]
        return [PromptReplacement(modality=update.modality, target=wrapped, replacement=update.replacement)
                for update in bare] + bare


@MULTIMODAL_REGISTRY.register_processor(_Processor, info=_ProcessingInfo,
                                        dummy_inputs=native.HunYuanVLDummyInputsBuilder)
class BatchedHunYuanVLForConditionalGeneration(native.HunYuanVLForConditionalGeneration):

    def __init__(self, *, vllm_config, prefix: str = "") -> None:  # noqa: ANN001 - vLLM's signature
        super().__init__(vllm_config=vllm_config, prefix=prefix)
        self._embeds_dtype = vllm_config.model_config.dtype  # the tower may be left out (image_embeds only)

    def forward(self, input_ids: torch.Tensor | None, positions: torch.Tensor,
                intermediate_tensors: native.IntermediateTensors | None = None,
                inputs_embeds: torch.Tensor | None = None, **kwargs: object):  # noqa: ANN201
        return super().forward(input_ids, positions, intermediate_tensors, inputs_embeds, **kwargs)

    def _parse_and_validate_image_input(self, **kwargs: object):  # noqa: ANN201
        image_embeds = kwargs.get("image_embeds")
        if image_embeds is None:
            return super()._parse_and_validate_image_input(**kwargs)
        if isinstance(image_embeds, (list, tuple)):
            image_embeds = torch.cat(list(image_embeds))
        grids = kwargs["image_grid_thw"]
        if isinstance(grids, (list, tuple)):
            grids = torch.stack(list(grids))
        return native.HunYuanVLImageEmbeddingInputs(type="image_embeds", image_embeds=image_embeds,
                                                    image_grid_thw=grids.reshape(-1, 3))

    def _process_image_input(self, image_input) -> list[torch.Tensor]:  # noqa: ANN001
        grids = image_input["image_grid_thw"].tolist()
        if image_input["type"] == "image_embeds":
            merge_size = self.config.vision_config.spatial_merge_size
            embeds = image_input["image_embeds"].to(self._embeds_dtype)
            return list(embeds.split([visual_tokens(grid, merge_size) for grid in grids]))
        return vision_tower(self.visual, image_input["pixel_values"], grids)
