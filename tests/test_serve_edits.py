"""Proofreading over real HTTP: concurrent PATCHes lose nothing (#24 class 6), a stale version is
a 409, a save of several cues is all or nothing, delete/insert/merge/split/undo are in the API
and in the downloads, and the page's pictures and video are served as a player needs them."""

from __future__ import annotations

import threading
from io import BytesIO

import httpx
import pysrt
import pytest
from PIL import Image

from serve_fixtures import ZH_SAMPLE, client, module_server, upload, wait_for  # noqa: F401 (client: a fixture)
from test_serve_openapi import conforms


server = module_server("edits")


@pytest.fixture()
def job(client) -> str:
    """A fresh finished job of the Chinese sample (five cues) for each test."""
    job_id = upload(client, ZH_SAMPLE, watchlist="雄").json()["id"]
    assert wait_for(client, job_id)["status"] == "done"
    return job_id


@pytest.fixture(scope="module")
def shared_job(client) -> str:
    """One finished job for the tests that change nothing that stays."""
    job_id = upload(client, ZH_SAMPLE).json()["id"]
    assert wait_for(client, job_id)["status"] == "done"
    return job_id


def cues(client, job_id: str) -> list[dict]:
    text = client.get(f"/v1/jobs/{job_id}/cues?format=jsonl&follow=false").text
    import json

    return [json.loads(line) for line in text.splitlines()]


def srt(client, job_id: str) -> list[tuple[int, int, str]]:
    body = client.get(f"/v1/jobs/{job_id}/subtitles.srt").text
    return [(c.start.ordinal, c.end.ordinal, c.text) for c in pysrt.from_string(body)]


def test_concurrent_patches_of_one_cue_keep_both_edits(server, job):
    """Two clients at once, one fixing the text, the other the end: both edits stay."""
    for round_ in range(5):
        barrier = threading.Barrier(2)
        answers = []

        def patch(body):
            with server.client() as own:
                barrier.wait()
                answers.append(own.patch(f"/v1/jobs/{job}/cues/1", json=body))

        text, end = f"第{round_}次校对", 7.5 + round_ / 10
        threads = [threading.Thread(target=patch, args=(body,)) for body in ({"text": text}, {"end": end})]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [a.status_code for a in answers] == [200, 200]
        with server.client() as own:
            stored = next(c for c in cues(own, job) if c["seq"] == 1)
        assert stored["text"] == text and stored["end"] == end


def test_a_stale_version_is_409_and_changes_nothing(client, job):
    seen = cues(client, job)[2]
    fresh = client.patch(f"/v1/jobs/{job}/cues/2", json={"text": "他人的修改", "version": seen["version"]})
    assert fresh.status_code == 200 and fresh.json()["version"] > seen["version"]
    stale = client.patch(f"/v1/jobs/{job}/cues/2", json={"text": "我的修改", "version": seen["version"]})
    assert stale.status_code == 409 and "changed since you loaded it" in stale.json()["error"]
    assert cues(client, job)[2]["text"] == "他人的修改"


def test_a_save_of_several_cues_is_all_or_nothing(client, job):
    before = srt(client, job)
    listed = cues(client, job)
    edits = [{"seq": 0, "version": listed[0]["version"], "text": "改好的一行"},
             {"seq": 1, "version": listed[1]["version"], "start": 99.0},
             {"seq": 3, "version": listed[3]["version"] + 1000, "text": "x"}]
    refused = client.patch(f"/v1/jobs/{job}/cues", json={"edits": edits})
    assert refused.status_code == 409
    assert [(r["seq"], r["status"]) for r in refused.json()["refused"]] == [(1, 400), (3, 409)]
    assert "nothing saved" in refused.json()["error"]
    assert srt(client, job) == before
    saved = client.patch(f"/v1/jobs/{job}/cues", json={"edits": edits[:1]})
    assert saved.status_code == 200 and saved.json()["kind"] == "edit"
    assert srt(client, job)[0][2] == "改好的一行"


def test_delete_insert_merge_split_and_undo_reach_the_downloads(client, job):
    original = srt(client, job)
    listed = cues(client, job)
    assert client.delete(f"/v1/jobs/{job}/cues/4?version={listed[4]['version'] + 1}").status_code == 409
    deleted = client.delete(f"/v1/jobs/{job}/cues/4")
    assert deleted.status_code == 200 and deleted.json()["removed"] == [4]
    assert srt(client, job) == original[:4]

    inserted = client.post(f"/v1/jobs/{job}/cues", json={"start": 0.2, "end": 1.1, "text": "片头"})
    assert inserted.status_code == 201
    assert srt(client, job)[0] == (200, 1100, "片头")  # in time order, though numbered last

    merged = client.post(f"/v1/jobs/{job}/cues/merge", json={"cues": [{"seq": 0, "version": listed[0]["version"]},
                                                                      {"seq": 1}]})
    assert merged.status_code == 200, merged.text
    assert merged.json()["removed"] == [1]
    (merged_cue,) = merged.json()["cues"]
    assert merged_cue["start"] == listed[0]["start"] and merged_cue["end"] == listed[1]["end"]
    assert merged_cue["lines"] == listed[0]["lines"] + listed[1]["lines"] and merged_cue["flags"] == ["雄"]

    split = client.post(f"/v1/jobs/{job}/cues/0/split",
                        json={"at": listed[1]["start"], "version": merged_cue["version"],
                              "texts": [listed[0]["text"], listed[1]["text"]]})
    assert split.status_code == 200, split.text
    assert [c["text"] for c in split.json()["cues"]] == [listed[0]["text"], listed[1]["text"]]
    assert [c[2] for c in srt(client, job)[1:3]] == [listed[0]["text"], listed[1]["text"]]

    for answer, schema in ((deleted, "Change"), (inserted, "Change"), (merged, "Change"), (split, "Change")):
        conforms(answer.json(), schema)  # as the OpenAPI document says
    conforms(client.get(f"/v1/jobs/{job}").json(), "Job")
    for cue in cues(client, job):
        conforms(cue, "Cue")
    for kind in ("split", "merge", "insert", "delete"):
        assert client.get(f"/v1/jobs/{job}").json()["last_change"]["kind"] == kind
        assert client.post(f"/v1/jobs/{job}/undo").json()["kind"] == kind
    assert srt(client, job) == original
    assert client.post(f"/v1/jobs/{job}/undo").status_code == 404


@pytest.mark.parametrize("path, body", [("cues/merge", {"cues": [{"seq": 0}]}),
                                        ("cues/0/split", {"at": 1e999}),
                                        ("cues/0/split", {"at": 0.0}),
                                        ("cues", {"start": 5, "end": 4, "text": "x"}),
                                        ("cues", {"start": float("nan"), "end": 4, "text": "x"}),
                                        ("undo", {"change": "last"})])
def test_changes_are_validated_like_an_edit(client, shared_job, path, body):
    import json

    answer = client.post(f"/v1/jobs/{shared_job}/{path}", content=json.dumps(body, allow_nan=True),
                         headers={"Content-Type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert "error" in answer.json()


def test_a_running_job_cannot_be_edited(client, server):
    with server.client() as own:
        busy = upload(own, ZH_SAMPLE).json()["id"]
        answer = own.patch(f"/v1/jobs/{busy}/cues/0", json={"text": "x"})
        assert answer.status_code in (404, 409)  # 404: the first cue has not come yet
        wait_for(own, busy)


def test_the_lines_picture_is_the_text_at_the_videos_own_size(client, shared_job):
    job = shared_job
    band = client.get(f"/v1/jobs/{job}/subtitles.json").json()["bands"][0]
    lines = Image.open(BytesIO(client.get(f"/v1/jobs/{job}/cues/0/lines.png").content))
    whole = Image.open(BytesIO(client.get(f"/v1/jobs/{job}/cues/0/crop.png").content))
    assert whole.size == (band["width"], band["height"])
    # The sample's line is 55 px high in a 1280x200 band: cut to it (padded), never scaled down.
    assert 55 <= lines.height < band["height"] / 2 and lines.width < band["width"]


def test_the_video_answers_ranges_and_its_signed_link_needs_no_key(client, server, shared_job):
    job = shared_job
    size = ZH_SAMPLE.stat().st_size
    part = client.get(f"/v1/jobs/{job}/video", headers={"Range": "bytes=100-199"})
    assert part.status_code == 206 and part.headers["content-range"] == f"bytes 100-199/{size}"
    assert part.content == ZH_SAMPLE.read_bytes()[100:200]
    link = client.get(f"/v1/jobs/{job}").json()["video"]
    assert httpx.get(server.url + link, headers={"Range": "bytes=0-9"}).status_code == 206  # no key sent
    assert httpx.get(f"{server.url}/v1/jobs/{job}/video").status_code == 401
    forged = link.replace("signature=", "signature=0")
    assert httpx.get(server.url + forged).status_code == 403
    other = upload(client, ZH_SAMPLE).json()["id"]
    assert httpx.get(server.url + link.replace(job, other)).status_code == 403  # one job's link only
    wait_for(client, other)
