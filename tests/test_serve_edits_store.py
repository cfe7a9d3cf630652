"""Proofreading changes in the store, without a server: an edit changes only the fields it
names, a stale version is refused and stores nothing, a save of several cues is all or nothing,
and every change (edit, delete, insert, merge, split) is undone exactly."""

from __future__ import annotations

import math

import pytest

from subextract.schema import Cue
from subextract.serve.cue_edits import CueEdit, CueRefused, merged, parse_edit, split
from subextract.serve.store import ORIGINAL, EditsRefused, Store, StoredCue

CUES = [Cue(1.0, 2.0, ("知其雄",), ("zh",), 0.9), Cue(2.0, 3.5, ("守其雌",), ("zh",), 0.6),
        Cue(4.0, 6.0, ("Hello there", "second line"), ("en", "en"), 0.8)]


@pytest.fixture()
def store(tmp_path) -> Store:
    store = Store(tmp_path / "jobs.sqlite3")
    store.add("j", "upload", "/x/j", "j.mp4", {})
    store.claim()
    store.finish("j", "done", metadata={}, tracks={ORIGINAL: [StoredCue(i, cue, ["雄"] if i == 0 else [])
                                                             for i, cue in enumerate(CUES)]})
    return store


def _snapshot(store: Store) -> list[tuple]:
    return [(c.seq, c.cue, c.flags, c.edited) for c in store.cues("j")]


def test_two_edits_of_one_cue_naming_different_fields_both_stay(store):
    # The lost edit of #24 class 6: one client fixes the text, another the end, at the same time.
    store.edit_cues("j", ORIGINAL, [CueEdit(1, text="守其雌，为天下溪")])
    store.edit_cues("j", ORIGINAL, [CueEdit(1, end=3.25)])
    cue = store.cue("j", ORIGINAL, 1).cue
    assert cue.lines == ("守其雌，为天下溪",) and cue.end == 3.25 and cue.start == 2.0


def test_a_stale_version_is_refused_and_stores_nothing(store):
    seen = store.cue("j", ORIGINAL, 1).version
    first = store.edit_cues("j", ORIGINAL, [CueEdit(1, version=seen, text="first")])
    assert first.cues[0].version == first.id > seen
    before = _snapshot(store)
    with pytest.raises(EditsRefused) as refused:
        store.edit_cues("j", ORIGINAL, [CueEdit(1, version=seen, text="second")])
    assert refused.value.status == 409 and refused.value.refusals[0].seq == 1
    assert "changed since you loaded it" in refused.value.refusals[0].message
    assert _snapshot(store) == before


def test_a_save_of_several_cues_is_all_or_nothing_with_each_refusal_named(store):
    before = _snapshot(store)
    with pytest.raises(EditsRefused) as refused:
        store.edit_cues("j", ORIGINAL, [CueEdit(0, text="fixed"), CueEdit(1, start=9.0), CueEdit(7, text="x")])
    assert [(r.seq, r.status) for r in refused.value.refusals] == [(1, 400), (7, 404)]  # each one named
    with pytest.raises(EditsRefused) as refused:
        store.edit_cues("j", ORIGINAL, [CueEdit(0, text="fixed"), CueEdit(1, start=9.0)])
    assert [(r.seq, r.status) for r in refused.value.refusals] == [(1, 400)]
    assert "must end after it starts" in refused.value.refusals[0].message
    assert _snapshot(store) == before
    change = store.edit_cues("j", ORIGINAL, [CueEdit(0, text="fixed"), CueEdit(1, start=2.5)])
    assert [c.seq for c in change.cues] == [0, 1]


def test_flags_follow_the_edited_text(store):
    flag = lambda text: ["雄"] if "雄" in text else []  # noqa: E731 - the job's watchlist, in short
    store.edit_cues("j", ORIGINAL, [CueEdit(0, text="知其雌")], flag)
    store.edit_cues("j", ORIGINAL, [CueEdit(1, text="守其雄")], flag)
    assert [c.flags for c in store.cues("j")][:2] == [[], ["雄"]]


@pytest.mark.parametrize("change", ["edit", "delete", "insert", "merge", "split"])
def test_each_change_is_undone_exactly(store, change):
    before = _snapshot(store)
    made = {"edit": lambda: store.edit_cues("j", ORIGINAL, [CueEdit(2, text="changed", end=7.0)]),
            "delete": lambda: store.delete_cue("j", ORIGINAL, 1, None),
            "insert": lambda: store.insert_cue("j", ORIGINAL, Cue(3.6, 3.9, ("new",), ("en",), 1.0)),
            "merge": lambda: store.merge_cues("j", ORIGINAL, [(1, None), (0, None)]),
            "split": lambda: store.split_cue("j", ORIGINAL, 2, None, 5.0, None)}[change]()
    assert _snapshot(store) != before
    assert store.last_change("j") == (made.id, change)
    undone = store.undo("j", expected=made.id)
    assert undone.kind == change
    assert _snapshot(store) == before
    assert all(c.version == undone.id for c in store.cues("j") if c.seq in {u.seq for u in undone.cues})
    assert store.last_change("j") is None
    with pytest.raises(CueRefused) as nothing:
        store.undo("j")
    assert nothing.value.status == 404


def test_undo_goes_back_one_change_at_a_time_and_refuses_a_change_made_since(store):
    first = store.delete_cue("j", ORIGINAL, 0, None)
    second = store.edit_cues("j", ORIGINAL, [CueEdit(1, text="later")])
    with pytest.raises(CueRefused) as stale:
        store.undo("j", expected=first.id)
    assert stale.value.status == 409
    store.undo("j", expected=second.id)
    assert store.cue("j", ORIGINAL, 1).cue.lines == ("守其雌",) and store.cue("j", ORIGINAL, 0) is None
    store.undo("j", expected=first.id)
    assert store.cue("j", ORIGINAL, 0).cue == CUES[0]


def test_merge_keeps_one_copy_of_a_subtitle_cut_in_two_and_the_weakest_confidence():
    one = merged([Cue(2.0, 3.0, ("同一句",), ("zh",), 0.9), Cue(1.0, 2.0, ("同一句",), ("zh",), 0.7)])
    assert one == Cue(1.0, 3.0, ("同一句",), ("zh",), 0.7)
    two = merged([Cue(1.0, 2.0, ("a",), ("en",), 0.9), Cue(2.5, 3.0, ("b",), ("en",), 0.95)])
    assert two.lines == ("a", "b") and two.start == 1.0 and two.end == 3.0 and two.confidence == 0.9


def test_split_shares_lines_or_cuts_a_line_at_the_nearest_space():
    first, second = split(CUES[2], 2, 5.0, None)
    assert (first.lines, second.lines, first.end, second.start) == (("Hello there",), ("second line",), 5.0, 5.0)
    first, second = split(Cue(0.0, 4.0, ("one two three four",), ("en",), 0.8), 0, 1.0, None)
    assert (first.lines, second.lines) == (("one",), ("two three four",))
    first, second = split(Cue(0.0, 2.0, ("知其雄守其雌",), ("zh",), 0.8), 0, 1.0, None)
    assert (first.lines, second.lines) == (("知其雄",), ("守其雌",))
    first, second = split(CUES[0], 0, 1.5, ("知", "其雄"))
    assert (first.lines, second.lines, first.languages) == (("知",), ("其雄",), ("zh",))
    for at in (1.0, 2.0, 7.0):
        with pytest.raises(CueRefused):
            split(CUES[0], 0, at, None)


@pytest.mark.parametrize("values", [{"start": math.inf}, {"end": 1e308}, {"start": -1}, {"start": True},
                                    {"text": ""}, {"text": 5}, {"colour": "red"}, {}, {"text": "x", "version": -1},
                                    {"text": "x", "version": "3"}])
def test_bad_edits_are_refused_with_400(values):
    with pytest.raises(CueRefused) as refused:
        parse_edit(values, 0)
    assert refused.value.status == 400


def test_a_cues_picture_is_there_while_the_job_runs_and_cut_to_its_lines(tmp_path):
    """CropSaver lists each picture as it saves it (crops.jsonl), before crops.json is written at
    the end: a cue streamed mid-run has its picture, and its lines picture is the padded line box."""
    import cv2
    import imagehash
    import numpy as np
    from PIL import Image

    from subextract.schema import Segment
    from subextract.serve.crops import cue_picture, lines_picture
    from subextract.stages.crops import CropSaver

    image = np.zeros((60, 300, 3), np.uint8)
    image[20:40, 50:250] = 255
    segment = Segment(band=0, start=1.0, end=2.0, frame_count=3, settled=True, before_start=None, last_shown=1.9,
                      image=image, mask_hash=imagehash.average_hash(Image.fromarray(image)), mask=image[:, :, 0],
                      lines=((50, 20, 250, 40),))
    saver = CropSaver(str(tmp_path))
    cue = Cue(1.0, 2.0, ("x",), ("en",), 0.9)
    assert cue_picture(tmp_path, cue) is None
    saver.save(segment, key=0)
    assert not (tmp_path / "crops.json").exists()
    assert cue_picture(tmp_path, cue) == tmp_path / "00-00-01.000_00-00-02.000_band0.png"
    lines = cv2.imdecode(np.frombuffer(lines_picture(tmp_path, cue), np.uint8), cv2.IMREAD_UNCHANGED)
    assert lines.shape[:2] == (20 + 2 * 7, 200 + 2 * 7)  # padded by 0.35 of the line's height
