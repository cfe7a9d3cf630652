"""The ``--engine openai`` client's own ceiling, with no GPU: how many crops a second the
product's HTTP read path can send, and how much of the client process's CPU each costs.

A local OpenAI-compatible server (a small Starlette app under uvicorn, in processes of its own)
answers ``/v1/models`` and ``/v1/chat/completions`` at once with a fixed 24-token reply and its
log-probabilities in vLLM's reply shape, after reading the whole request body. The product's
real engine (``create_engine`` with the preset's picture settings and ``--engine openai``) reads
synthetic 1280x144 band crops (``bench/gpu.py``'s) through it in one ``read_batch`` per level of
concurrency; the client's CPU time is this process's (every thread), the servers' is not in it.

It also times lossless picture formats a vLLM server accepts in a data URL (vLLM decodes the
base64 and hands the bytes to PIL, whatever the media type says), on the synthetic band and on a
real one from a sample video: the client's encode, the size and the server's decode (PIL open,
load, RGB, as vLLM does).

Usage:
  python bench/client_ceiling.py [--n 512] [--levels 16,64,256] [--servers 1] [--profile FILE]
  python bench/client_ceiling.py --formats          # the picture formats alone
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pybase64

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

SAMPLE = REPO / "sample_videos" / "zh_bottom.mp4"
MODEL = "ceiling-model"
REPLY_TOKENS = ("the", " quick", " brown", " fox", " jumps", " over", " a", " lazy", " dog", " where",
                " are", " you", " going", " tonight", " thank", " you", " for", " your", " help", " see",
                " you", " tomorrow", " it", " is")


def reply_body() -> bytes:
    """A chat completion as vLLM writes one with ``logprobs: true`` (every field it sends)."""
    content = [{"token": token, "logprob": -0.01 * (i + 1), "bytes": list(token.encode()), "top_logprobs": []}
               for i, token in enumerate(REPLY_TOKENS)]
    return json.dumps({
        "id": "chatcmpl-ceiling", "object": "chat.completion", "created": 0, "model": MODEL,
        "choices": [{"index": 0,
                     "message": {"role": "assistant", "content": "".join(REPLY_TOKENS), "refusal": None,
                                 "annotations": None, "audio": None, "function_call": None, "tool_calls": [],
                                 "reasoning_content": None},
                     "logprobs": {"content": content}, "finish_reason": "length", "stop_reason": None,
                     "token_ids": None}],
        "service_tier": None, "system_fingerprint": None,
        "usage": {"prompt_tokens": 313, "total_tokens": 337, "completion_tokens": 24, "prompt_tokens_details": None},
        "prompt_logprobs": None, "prompt_token_ids": None, "kv_transfer_params": None,
    }).encode()


def make_app():
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    reply = reply_body()

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

    async def completions(request: Request) -> Response:
        await request.body()  # the whole request read, as a server must before it answers
        return Response(reply, media_type="application/json")

    return Starlette(routes=[Route("/v1/models", models), Route("/v1/chat/completions", completions,
                                                                 methods=["POST"])])


def serve(port: int) -> None:
    import uvicorn

    uvicorn.run(make_app(), host="127.0.0.1", port=port, log_level="warning", access_log=False,
                backlog=4096)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def servers(count: int) -> Iterator[tuple[list[str], list[int]]]:
    ports = [free_port() for _ in range(count)]
    processes = [subprocess.Popen([sys.executable, __file__, "--serve", str(port)]) for port in ports]
    try:
        for port in ports:
            deadline = time.monotonic() + 30
            while True:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the ceiling server on port {port} did not start")
                time.sleep(0.1)
        yield [f"http://127.0.0.1:{port}/v1" for port in ports], [process.pid for process in processes]
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=10)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (every thread) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(urls: list[str], server_pids: list[int], preset: str, crops: list[np.ndarray], concurrency: int,
            profile: str | None) -> dict[str, float]:
    from subextract.config import load_settings
    from subextract.stages.ocr import create_engine

    settings = load_settings(preset, overrides={"ocr": {"engine": "openai", "server": " ".join(urls), "model": "",
                                                        "concurrency": concurrency, "max_tokens": 24}})
    engine = create_engine(settings.ocr)
    engine.read_batch(crops[:concurrency])  # connections opened, threads started
    profiler = cProfile.Profile() if profile else None
    served = sum(cpu_seconds(pid) for pid in server_pids)
    wall, cpu = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    readings = engine.read_batch(crops)
    if profiler:
        profiler.disable()
        profiler.dump_stats(profile)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    served = sum(cpu_seconds(pid) for pid in server_pids) - served
    engine._client.close()
    assert all(r.lines and r.lines[0].text == "".join(REPLY_TOKENS).strip() for r in readings)
    return {"concurrency": concurrency, "crops": len(crops), "crops_per_s": len(crops) / wall,
            "client_cpu_ms_per_crop": 1000 * cpu / len(crops), "server_cpu_ms_per_crop": 1000 * served / len(crops)}


def video_band() -> np.ndarray:
    """A real subtitle band: the bottom fifth of a sample video's frame with a subtitle, grey, 1280x144."""
    import cv2

    video = cv2.VideoCapture(str(SAMPLE))
    video.set(cv2.CAP_PROP_POS_FRAMES, 200)
    _, frame = video.read()
    video.release()
    grey = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
    height = grey.shape[0]
    return cv2.resize(grey[height * 78 // 100:height * 98 // 100], (1280, 144), interpolation=cv2.INTER_AREA)


def picture_formats(crop: np.ndarray, repeats: int = 20) -> list[dict[str, float | str]]:
    """Each lossless way to put the crop in a data URL: encode, size, and vLLM's decode."""
    import cv2
    from PIL import Image

    from subextract.stages.ocr.vlm import to_png

    def pil(fmt: str, **options):
        def encode() -> bytes:
            buffer = io.BytesIO()
            Image.fromarray(crop).save(buffer, format=fmt, **options)
            return buffer.getvalue()
        return encode

    def opencv(ext: str, *params: int):
        return lambda: cv2.imencode(ext, crop, list(params))[1].tobytes()

    ways = {"PNG, PIL, zlib level 6": pil("PNG"),
            "PNG, PIL, zlib level 1": pil("PNG", compress_level=1),
            "PNG, OpenCV, zlib level 1": opencv(".png", cv2.IMWRITE_PNG_COMPRESSION, 1),
            "PNG, OpenCV, RLE, up filter": opencv(".png", cv2.IMWRITE_PNG_COMPRESSION, 1, cv2.IMWRITE_PNG_STRATEGY,
                                                  cv2.IMWRITE_PNG_STRATEGY_RLE, cv2.IMWRITE_PNG_FILTER,
                                                  cv2.IMWRITE_PNG_FILTER_UP),
            "PNG, stored (to_png)": lambda: to_png(crop),
            "BMP, OpenCV": opencv(".bmp")}
    rows = []
    for name, encode in ways.items():
        data = encode()
        began = time.perf_counter()
        for _ in range(repeats):
            data = encode()
            pybase64.b64encode(data)
        encode_ms = 1000 * (time.perf_counter() - began) / repeats
        began = time.perf_counter()
        for _ in range(repeats):
            with Image.open(io.BytesIO(data)) as image:
                image.load()
                decoded = image.convert("RGB")
        decode_ms = 1000 * (time.perf_counter() - began) / repeats
        assert np.array_equal(np.asarray(decoded)[..., 0], crop), name
        rows.append({"format": name, "bytes": len(data), "encode_ms": encode_ms, "decode_ms": decode_ms})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, default=512, help="crops per level (default 512)")
    parser.add_argument("--levels", default="16,64,256", help="concurrency levels (default 16,64,256)")
    parser.add_argument("--servers", type=int, default=1,
                        help="server processes (default 1; more: the balancer, one --server each)")
    parser.add_argument("--preset", default="hunyuanocr")
    parser.add_argument("--profile", help="cProfile the read at the last level into this file and print its top")
    parser.add_argument("--formats", action="store_true", help="time the picture formats alone")
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    from gpu import band_crops

    crops = band_crops(args.n)
    if args.formats:
        for name, crop in (("synthetic band", crops[0]), (f"{SAMPLE.name}'s band", video_band())):
            for row in picture_formats(crop):
                print(f"{name:22s} {row['format']:28s} {row['bytes']:7d} bytes  encode+base64 "
                      f"{row['encode_ms']:6.2f} ms  decode {row['decode_ms']:6.2f} ms")
        return
    levels = [int(level) for level in args.levels.split(",")]
    with servers(args.servers) as (urls, pids):
        for level in levels:
            profile = args.profile if args.profile and level == levels[-1] else None
            row = measure(urls, pids, args.preset, crops, level, profile)
            print(f"concurrency {level:4d}: {row['crops_per_s']:7.1f} crops/s, "
                  f"client CPU {row['client_cpu_ms_per_crop']:6.2f} ms a crop "
                  f"(servers' {row['server_cpu_ms_per_crop']:.2f})", flush=True)
    if args.profile:
        pstats.Stats(args.profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
