"""HunyuanOCR's vision tower as subextract runs it (``ocr.vision_tower: subextract``: a batch of
crops at once, the embeddings handed to vLLM) against the model's own per-crop path: its Hugging
Face image processor and transformers' tower called on one crop at a time. The tiny random-weight
HunYuanVL of vlm_fixtures, on the CPU in float32 (no vLLM needed, but torch and transformers live
in .venv-vllm: under the main virtualenv this module is skipped and test_vllm_suite.py runs it).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="runs in .venv-vllm, through test_vllm_suite.py")
pytest.importorskip("transformers", reason="runs in .venv-vllm, through test_vllm_suite.py")

from subextract.stages.ocr.vision_tower import HunYuanVisionTower, visual_tokens  # noqa: E402
from subextract.stages.ocr.vlm import to_pil  # noqa: E402
from vlm_fixtures import tiny_hunyuan_ocr  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return tiny_hunyuan_ocr(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="module")
def tower(model):
    return HunYuanVisionTower(str(model), device="cpu", dtype="float32")


def crops() -> list[np.ndarray]:
    """Grey band crops of one size (batched together), a smaller one the processor scales up to
    its pixel minimum, and a colour one in OpenCV's BGR order."""
    rng = np.random.default_rng(7)
    return ([rng.integers(0, 256, (72, 640), dtype=np.uint8) for _ in range(3)]
            + [rng.integers(0, 256, (20, 90), dtype=np.uint8), rng.integers(0, 256, (40, 300, 3), dtype=np.uint8)])


def reference(model, pictures):
    """The model's per-crop path: its processor's patches and transformers' tower, crop by crop."""
    from transformers import AutoProcessor, HunYuanVLForConditionalGeneration

    processor = AutoProcessor.from_pretrained(str(model))
    full = HunYuanVLForConditionalGeneration.from_pretrained(str(model)).eval()
    out = []
    for picture in pictures:
        batch = processor.image_processor(images=[to_pil(picture)], return_tensors="pt")
        with torch.inference_mode():
            features = full.model.get_image_features(batch["pixel_values"], batch["image_grid_thw"]).pooler_output
        out.append((batch["pixel_values"], batch["image_grid_thw"], features.reshape(-1, features.shape[-1])))
    return out


def test_patches_are_the_processors(model, tower):
    """Resized, normalised and cut as the processor does it: within one 8-bit level (PIL rounds its
    fixed-point filter; the scaling up and down both pass through here)."""
    one_level = 1 / 255 / min(tower.std.flatten().tolist())
    for picture, (pixels, grid, _) in zip(crops(), reference(model, crops())):
        patches, ours = tower.patches([picture])
        assert [1, *ours[1:]] == grid[0].tolist()
        assert patches[0].shape == pixels.shape
        assert float((patches[0] - pixels).abs().max()) <= one_level * 1.01


def test_batched_embeddings_are_the_per_crop_ones(model, tower):
    pictures = crops()
    embedded = tower.embed(pictures)
    assert len(embedded) == len(pictures)
    for (embeds, grid), (_, reference_grid, expected) in zip(embedded, reference(model, pictures)):
        assert grid.tolist() == reference_grid.tolist()
        assert embeds.shape == expected.shape == (visual_tokens(int(grid[0, 1]), int(grid[0, 2]), 2),
                                                  expected.shape[1])
        # float32 here: what differs is the processor's 8-bit rounding of a pixel or two, not the arithmetic
        assert float((embeds - expected).norm() / expected.norm()) < 2e-3


def test_bfloat16_stays_within_its_rounding(model):
    """In the GPU's dtype the batched tower's embeddings stay within bf16's rounding of float32's."""
    pictures = crops()[:3]
    exact = HunYuanVisionTower(str(model), device="cpu", dtype="float32").embed(pictures)
    rounded = HunYuanVisionTower(str(model), device="cpu", dtype="bfloat16").embed(pictures)
    for (low, _), (high, _) in zip(rounded, exact):
        assert low.dtype == torch.bfloat16
        assert float((low.float() - high).norm() / high.norm()) < 2e-2


def test_a_pass_holds_a_bounded_number_of_patches_whatever_the_picture_size(tower, monkeypatch):
    """Stacked strips make pictures of several thousand patches: a pass takes as many of one size as
    fit the patch bound (64 pictures of eight stacked strips ran the H200 out of memory), and the
    embeddings are the same as in one pass."""
    from subextract.stages.ocr import vision_tower

    rng = np.random.default_rng(3)
    pictures = [rng.integers(0, 256, (72, 640), dtype=np.uint8) for _ in range(5)]
    whole = tower.embed(pictures)
    patches = tower.patches(pictures[:1])[0].shape[1]
    passes: list[int] = []
    tower_batch = tower.tower_batch
    monkeypatch.setattr(vision_tower, "MAX_PATCHES_PER_PASS", 2 * patches + 1)
    monkeypatch.setattr(tower, "tower_batch", lambda p, grid: passes.append(len(p)) or tower_batch(p, grid))
    bounded = tower.embed(pictures)
    assert passes == [2, 2, 1]
    for (a, _), (b, _) in zip(bounded, whole):
        assert torch.allclose(a, b, atol=1e-5)
