"""``subextract serve`` over real HTTP on 127.0.0.1: the API, its refusals and its outputs."""

from __future__ import annotations

import json
import select
import socket
import time

import httpx
import pysubs2
import pytest
import webvtt

from serve_fixtures import (API_KEY, EN_SAMPLE, ZH_SAMPLE, client, module_server, upload, wait_for,  # noqa: F401
                            zh_cli_srt)

MAX_UPLOAD_MB = 2


server = module_server("serve", "--max-upload-mb", str(MAX_UPLOAD_MB), "--max-queue", "2")


def sse_events(response: httpx.Response):
    """(event, data, time received) for each Server-Sent Event of a streaming response."""
    event, data = "message", []
    for line in response.iter_lines():
        if line == "":
            if data:
                yield event, json.loads("\n".join(data)), time.time()
            event, data = "message", []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


@pytest.fixture(scope="module")
def zh_job(client):
    """The Chinese sample with a watchlist term of its first cue, its SSE stream read to the end."""
    response = upload(client, ZH_SAMPLE, watchlist="雄\nnot-in-the-video")
    assert response.status_code == 202, response.text
    job_id = response.json()["id"]
    assert response.headers["location"] == f"/v1/jobs/{job_id}"
    with client.stream("GET", f"/v1/jobs/{job_id}/cues", headers={"Accept": "text/event-stream"}) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        events = list(sse_events(stream))
    return job_id, events


def test_probes_need_no_key_and_metrics_count_jobs(server):
    assert httpx.get(f"{server.url}/health").json() == {"status": "ok"}
    ready = httpx.get(f"{server.url}/ready").json()
    assert ready["ready"] is True and ready["workers"] == 1
    metrics = httpx.get(f"{server.url}/metrics")
    assert metrics.status_code == 200
    assert 'subextract_jobs{state="queued"}' in metrics.text and "subextract_queue_depth" in metrics.text


def test_each_request_is_logged_once_with_its_id(server):
    response = httpx.get(f"{server.url}/health", headers={"X-Request-Id": "trace-42"})
    assert response.headers["x-request-id"] == "trace-42"
    assert len(httpx.get(f"{server.url}/health").headers["x-request-id"]) == 12  # made up when not given
    time.sleep(0.2)
    assert server.logged("request id=trace-42 client=127.0.0.1:")
    line = next(line for line in server.log_text(100_000).splitlines() if "request id=trace-42" in line)
    assert "method=GET path=/health status=200 duration_ms=" in line


def test_api_refuses_a_missing_or_wrong_key(server):
    assert httpx.get(f"{server.url}/v1/jobs").status_code == 401
    wrong = httpx.get(f"{server.url}/v1/jobs", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    assert wrong.json() == {"error": "missing or wrong API key (Authorization: Bearer KEY)"}
    with open(ZH_SAMPLE, "rb") as handle:
        refused = httpx.post(f"{server.url}/v1/jobs", files={"file": ("a.mp4", handle)})
    assert refused.status_code == 401
    assert httpx.get(f"{server.url}/v1/jobs", headers={"Authorization": f"Bearer {API_KEY}"}).status_code == 200


def test_sse_delivers_a_flagged_cue_before_the_job_ends(client, zh_job):
    job_id, events = zh_job
    job = client.get(f"/v1/jobs/{job_id}").json()
    assert job["status"] == "done", job
    cues = [data for event, data, _ in events if event == "cue"]
    assert [event for event, _, _ in events][-1] == "end" and events[-1][1]["status"] == "done"
    flagged = [(data, at) for event, data, at in events if event == "cue" and data["flags"]]
    assert flagged and flagged[0][0]["flags"] == ["雄"] and "雄" in flagged[0][0]["text"]
    # Received while the job was still running: before the worker recorded its end.
    assert flagged[0][1] < job["finished"], (flagged[0][1], job["finished"])
    assert [cue["seq"] for cue in cues] == list(range(len(cues)))
    assert all(cue["flags"] == [] for cue in cues if "雄" not in cue["text"])


def test_srt_download_is_the_clis_output(client, zh_job, zh_cli_srt):
    job_id, events = zh_job
    response = client.get(f"/v1/jobs/{job_id}/subtitles.srt")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-subrip")
    assert 'filename="zh_bottom.srt"' in response.headers["content-disposition"]
    assert response.text == zh_cli_srt
    assert response.text.count(" --> ") == sum(event == "cue" for event, _, _ in events)


def test_jsonl_stream_replays_the_cues(client, zh_job):
    job_id, events = zh_job
    streamed = [data for event, data, _ in events if event == "cue"]
    response = client.get(f"/v1/jobs/{job_id}/cues")  # JSONL unless SSE is asked for
    assert response.headers["content-type"].startswith("application/x-ndjson")
    assert [json.loads(line) for line in response.text.splitlines()] == streamed
    resumed = client.get(f"/v1/jobs/{job_id}/cues", params={"after": 1}).text.splitlines()
    assert [json.loads(line)["seq"] for line in resumed] == [cue["seq"] for cue in streamed[2:]]


def test_sse_resumes_after_the_last_event_id(client, zh_job):
    job_id, events = zh_job
    with client.stream("GET", f"/v1/jobs/{job_id}/cues",
                       headers={"Accept": "text/event-stream", "Last-Event-ID": "2"}) as stream:
        resumed = list(sse_events(stream))
    assert [data["seq"] for event, data, _ in resumed if event == "cue"] == \
        [data["seq"] for event, data, _ in events if event == "cue"][3:]
    assert resumed[-1][0] == "end"


def test_metrics_count_the_finished_job(server, zh_job):
    from prometheus_client.parser import text_string_to_metric_families

    families = {family.name: family for family in text_string_to_metric_families(
        httpx.get(f"{server.url}/metrics").text)}
    value = {family: {tuple(sorted(sample.labels.items())) + (sample.name,): sample.value
                      for sample in families[family].samples} for family in families}
    assert value["subextract_ocr_calls"][("subextract_ocr_calls_total",)] >= 4
    assert value["subextract_jobs"][(("state", "done"), "subextract_jobs")] >= 1
    assert value["subextract_seconds_per_video_second"][("subextract_seconds_per_video_second_count",)] >= 1
    latency = value["subextract_http_request_duration_seconds"]
    assert latency[(("method", "POST"), ("route", "/v1/jobs"), ("status", "202"),
                    "subextract_http_request_duration_seconds_count")] >= 1


def test_other_formats_parse_back(client, zh_job):
    job_id, events = zh_job
    texts = [data["text"] for event, data, _ in events if event == "cue"]
    vtt = webvtt.from_string(client.get(f"/v1/jobs/{job_id}/subtitles.vtt").text)
    assert [caption.text for caption in vtt] == texts
    ass = pysubs2.SSAFile.from_string(client.get(f"/v1/jobs/{job_id}/subtitles.ass").text)
    assert [event.plaintext for event in ass] == texts
    document = client.get(f"/v1/jobs/{job_id}/subtitles.json").json()
    assert [cue["text"] for cue in document["cues"]] == texts and document["video"] == "zh_bottom.mp4"
    assert client.get(f"/v1/jobs/{job_id}/subtitles.exe").status_code == 404


def test_each_cue_has_the_picture_its_text_was_read_from(client, zh_job):
    from io import BytesIO

    from PIL import Image

    job_id, events = zh_job
    band = client.get(f"/v1/jobs/{job_id}/subtitles.json").json()["bands"][0]
    pictures = []
    for seq in range(sum(event == "cue" for event, _, _ in events)):
        response = client.get(f"/v1/jobs/{job_id}/cues/{seq}/crop.png")
        assert response.status_code == 200 and response.headers["content-type"] == "image/png"
        width, height = Image.open(BytesIO(response.content)).size
        assert 0 < width <= band["width"] and 0 < height <= band["height"]
        pictures.append(response.content)
    assert len(set(pictures[:4])) == 4  # four different lines, four different pictures
    assert client.get(f"/v1/jobs/{job_id}/cues/999/crop.png").status_code == 404


def test_an_edit_is_stored_and_downloaded(client, zh_job):
    job_id, _ = zh_job
    edited = client.patch(f"/v1/jobs/{job_id}/cues/1", json={"text": "校对后的字幕", "start": 6.5})
    assert edited.status_code == 200, edited.text
    assert edited.json()["edited"] is True and edited.json()["start"] == 6.5
    srt = client.get(f"/v1/jobs/{job_id}/subtitles.srt").text
    assert "00:00:06,500 --> 00:00:08,080\n校对后的字幕" in srt
    for bad in ({"start": 9, "end": 8}, {"text": "  "}, {"start": "soon"}, {"colour": "red"}):
        assert client.patch(f"/v1/jobs/{job_id}/cues/1", json=bad).status_code == 400, bad
    assert client.patch(f"/v1/jobs/{job_id}/cues/99", json={"text": "x"}).status_code == 404


def _raw_request(server: Server, head: str, body_chunks, pause: float = 0.0) -> tuple[int, bytes, int]:
    """Send ``head`` then the chunks until the server answers; (status, answer, body bytes sent)."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sent = 0
    try:
        sock.sendall(head.encode())
        for chunk in body_chunks:
            if select.select([sock], [], [], pause)[0]:
                break  # answered: stop sending, as a real client would
            sock.sendall(chunk)
            sent += len(chunk)
        answer = b""
        while True:  # the head, then the body its Content-Length announces
            head, _, body = answer.partition(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.lower().split(b"\r\n")
                           if line.startswith(b"content-length:")), None)
            if length is not None and len(body) >= length:
                break
            part = sock.recv(65536)
            if not part:
                break
            answer += part
        return int(answer.split(b" ", 2)[1]), answer, sent
    finally:
        sock.close()


def _multipart_head(server: Server, length_header: str) -> str:
    return (f"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {API_KEY}\r\n"
            f"Content-Type: multipart/form-data; boundary=XyZ\r\n{length_header}\r\n")


def test_413_from_the_declared_length_before_the_body(server):
    status, answer, sent = _raw_request(server, _multipart_head(server, "Content-Length: 500000000\r\n"),
                                        [b"--XyZ\r\n"] * 3, pause=0.2)
    assert status == 413 and b"larger than the limit" in answer
    assert sent < 100


def test_413_while_a_chunked_upload_streams(server):
    chunk = b"x" * 65536
    framed = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    preamble = (b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="big.mp4"\r\n'
                b"Content-Type: video/mp4\r\n\r\n")
    first = f"{len(preamble):x}\r\n".encode() + preamble + b"\r\n"
    total = 200 * 1024 * 1024

    def chunks():
        yield first
        for _ in range(total // len(chunk)):
            yield framed

    status, answer, sent = _raw_request(server, _multipart_head(server, "Transfer-Encoding: chunked\r\n"), chunks(),
                                        pause=0.001)
    assert status == 413, answer
    limit = MAX_UPLOAD_MB * 1024 * 1024
    assert limit < sent < total / 10, sent  # refused once past the limit, long before the end
    assert not any(path.stat().st_size > limit for path in (server.data / "jobs").glob("*/input"))


def test_415_for_what_is_not_a_video(client, server, tmp_path):
    from PIL import Image

    png = tmp_path / "picture.mp4"
    Image.new("RGB", (64, 64), "white").save(png, format="PNG")
    text = tmp_path / "notes.mp4"
    text.write_text("this is not a video\n" * 50)
    playlist = tmp_path / "playlist.mp4"
    playlist.write_text(f"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n{ZH_SAMPLE}\n#EXT-X-ENDLIST\n")
    before = set((server.data / "jobs").iterdir())
    for path, words in ((png, "not a video file"), (text, "not a video file"), (playlist, "HLS playlist")):
        response = upload(client, path)
        assert response.status_code == 415, (path.name, response.text)
        assert words in response.json()["error"] and path.name in response.json()["error"]
        assert str(server.data) not in response.text  # the server's paths stay private
    assert set((server.data / "jobs").iterdir()) == before  # nothing refused is kept
    plain = client.post("/v1/jobs", content=b"raw bytes", headers={"Content-Type": "video/mp4"})
    assert plain.status_code == 415


def test_a_malformed_body_is_one_line_not_a_traceback(client):
    for body, content_type in ((b"--XyZ\r\nno headers at all", "multipart/form-data; boundary=XyZ"),
                               (b"no boundary", "multipart/form-data"), (b"{not json", "application/json")):
        response = client.post("/v1/jobs", content=body, headers={"Content-Type": content_type})
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert "\n" not in error and "Traceback" not in response.text


def test_url_jobs_follow_the_network_policy(client):
    for url, words in (("http://127.0.0.1:9/video.mp4", "loopback"), ("http://10.1.2.3/live.m3u8", "private"),
                       ("file:///etc/passwd", "not allowed"), ("concat:/a.mp4|/b.mp4", "not allowed")):
        response = client.post("/v1/jobs", json={"url": url})
        assert response.status_code == 400, (url, response.text)
        assert words in response.json()["error"]


def test_bad_options_are_refused_at_submission(client):
    for options, words in (({"lang": "not a language"}, "lang"), ({"config": "/etc/passwd"}, "not a preset"),
                           ({"region": "middle"}, "region"), ({"start": "5", "end": "2"}, "after start"),
                           ({"colour": "red"}, "unknown option"), ({"watchlist": "re:.*"}, "empty"),
                           ({"translate": "en"}, "no translator")):
        response = upload(client, EN_SAMPLE, **options)
        assert response.status_code == 400, (options, response.text)
        assert words in response.json()["error"], (options, response.text)
    assert client.post("/v1/jobs", json={"nourl": 1}).status_code == 400


def test_a_job_that_fails_says_why_in_one_line(client, server):
    job_id = upload(client, ZH_SAMPLE, start="100").json()["id"]
    job = wait_for(client, job_id)
    assert job["status"] == "failed" and "past the end of the video" in job["error"], job
    assert "\n" not in job["error"] and str(server.data) not in job["error"]
    assert client.get(f"/v1/jobs/{job_id}/subtitles.srt").status_code == 409


def test_unknown_jobs_are_404(client):
    assert client.get("/v1/jobs/nope").status_code == 404
    assert client.delete("/v1/jobs/nope").status_code == 404
    assert client.get("/v1/jobs/nope/subtitles.srt").status_code == 404


def test_full_queue_is_429_and_delete_cancels_and_removes_files(client, server):
    accepted, refused = [], None
    for _ in range(8):
        response = upload(client, ZH_SAMPLE)
        if response.status_code == 429:
            refused = response
            break
        assert response.status_code == 202, response.text
        accepted.append(response.json()["id"])
    assert refused is not None, "the queue of 2 never filled"
    assert int(refused.headers["retry-after"]) > 0 and "queue is full" in refused.json()["error"]
    ready = httpx.get(f"{server.url}/ready")
    assert ready.status_code == 503 and ready.json()["reasons"] == ["the queue is full"]
    assert len(accepted) >= 2
    for n, job_id in enumerate(accepted):
        answer = client.delete(f"/v1/jobs/{job_id}").json()
        # The first may have finished meanwhile (then it is deleted); the others were still queued.
        assert answer["status"] == "cancelled" or (n == 0 and answer["status"] == "deleted"), answer
        assert not (server.data / "jobs" / job_id).exists()
    for job_id in accepted[1:]:
        assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"
        assert client.get(f"/v1/jobs/{job_id}/subtitles.srt").status_code == 409
        assert client.get(f"/v1/jobs/{job_id}/cues").text == ""
    time.sleep(1.5)  # a cancelled running job stops at its next frame; nothing of it may come back
    for job_id in accepted:
        job = client.get(f"/v1/jobs/{job_id}")
        assert job.status_code == 404 or job.json()["status"] == "cancelled"
    assert client.get("/ready").json()["running"] == 0
    assert not any((server.data / "jobs" / job_id).exists() for job_id in accepted)
    # A finished job is deleted outright.
    done = wait_for(client, upload(client, ZH_SAMPLE).json()["id"])
    assert done["status"] == "done" and client.delete(f"/v1/jobs/{done['id']}").json()["status"] == "deleted"
    assert client.get(f"/v1/jobs/{done['id']}").status_code == 404
