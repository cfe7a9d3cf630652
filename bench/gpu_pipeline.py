"""The whole pipeline on the GPU machine: a batch of videos through ``subextract batch --jobs N``
with a vision-language engine, the decode floor beside it, and the start-up overlap of one video.

Sets (``--sets``, comma-separated, run in the order given):
  server     one ``vllm serve`` (the preset's options, eager) shared by P ``subextract batch --jobs N
             --engine openai`` processes at once, for each PxN of ``--layouts`` (the jobs of one
             process are threads: its Python work shares one interpreter); the server's start is
             not in the batch's time
  inprocess  ``subextract batch --jobs N --engine vllm``: one in-process engine shared by the jobs,
             its start inside the batch's time (the jobs decode meanwhile)
  service    ``subextract serve --engine openai`` against one ``vllm serve``, R replicas (each its own process,
             port and ``--data``) x W ``--workers`` for each RxW of ``--service-layouts``: every video uploaded
             to ``POST /v1/jobs`` at once (round robin over the replicas) and polled to its end, as a client
             of the HTTP API would; the time from the first upload to the last job's end (docs/service.md)
  ray        ``subextract batch --ray --ray-split`` on a local Ray cluster (this machine's cores) against one
             ``vllm serve``: segments on Ray's CPU workers, crops read by ``--ray-readers`` openai-engine actors
             (needs ``ray[data]`` importable); the server's start is not in the batch's time
  floor      FFmpeg decoding each video's band (as the pipeline found it) to a null sink, N at once
             and one at a time: the floor no pipeline beats
  overlap    one video with ``--engine vllm`` in this process: when decoding began and ended, when
             the engine was ready, when the first read began and ended

Videos: ``--videos`` files, each copied ``--copies`` times under its own name (every copy is a
stream of its own: the batch reads each, and a reading is reused only within one video). All use
``--region bottom`` (the region search's detector, rapidocr, is not carried to the GPU machine).

Replies: random weights never emit an end of sequence, so every reply runs to the product's own
bound, ``ocr.line_tokens`` per unit of width/height of the segmenter's line boxes (docs/gpu.md).

Usage (on the GPU machine; ``subextract`` and ``vllm`` importable, ffmpeg as $SUBEXTRACT_FFMPEG):
  python bench/gpu_pipeline.py MODEL_DIR --videos A.mp4 B.mp4 --copies 6 --out DIR [--layouts 1x16,16x1]
Writes DIR/pipeline.json (every number) and prints a summary table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from gpu import GpuMemory, wait_ready  # noqa: E402

DUMMY = {"load_format": "dummy", "trust_remote_code": False, "enforce_eager": True}


def engine_option_args(options: dict[str, Any]) -> list[str]:
    return [arg for key, value in options.items() for arg in ("--engine-option", f"{key}={json.dumps(value)}")]


def copied_videos(videos: list[Path], copies: int, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    made = []
    for video in videos:
        for k in range(copies):
            target = folder / f"{video.stem}_c{k}{video.suffix}"
            if not target.exists():
                shutil.copyfile(video, target)
            made.append(target)
    return made


def client_environment() -> dict[str, str]:
    """The batch processes' environment: PYTHONPATH without the folders that hold a sitecustomize.py.
    The device kit's shim (there for vLLM and its processors) imports transformers and torch in every Python
    process that finds it; a batch process, a client of the server, needs neither. On the H200
    (2026-12-02) each of 16 batch processes spent ~13 s starting, most likely because of it."""
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
             if p and not (Path(p) / "sitecustomize.py").exists()]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths))


def run_batch(videos: list[Path], out: Path, jobs: int | None, engine_args: list[str], log: Path,
              timeout: float = 200, processes: int = 1, env: dict[str, str] | None = None) -> dict[str, Any]:
    """``processes`` ``subextract batch`` runs at once, each with ``jobs`` threads (None: the batch
    options in ``engine_args`` decide, e.g. ``--ray``) and its share of the videos (out/p0, out/p1, ...);
    their wall time, the GPU's load meanwhile, and the manifests' per-video lines."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    commands = []
    for p in range(processes):
        listing = out / f"p{p}.txt"
        listing.write_text("".join(f"{v}\n" for v in videos[p::processes]))
        commands.append([sys.executable, "-m", "subextract", "batch", str(listing), "--out", str(out / f"p{p}"),
                         *(["--jobs", str(jobs)] if jobs else []), "--config", "paddleocr-vl", "--region", "bottom",
                         "--format", "json", *engine_args])
    gpu = GpuMemory()
    began = time.perf_counter()
    with log.open("w") as sink:
        running = [subprocess.Popen(c, stdout=sink, stderr=subprocess.STDOUT, env=env) for c in commands]
        codes = []
        for process in running:
            try:
                codes.append(process.wait(timeout=max(1.0, timeout - (time.perf_counter() - began))))
            except subprocess.TimeoutExpired:
                process.kill()
                codes.append("timed out")
    wall = time.perf_counter() - began
    load = gpu.stop_load()
    records = {}
    for manifest in out.glob("p*/manifest.jsonl"):
        for line in manifest.read_text().splitlines():
            record = json.loads(line)
            records[record.get("video")] = dict(record, folder=manifest.parent)
    done = [r for r in records.values() if r.get("status") == "done"]
    video_s = sum(r.get("duration", 0) for r in done)
    calls = segments = 0
    ocr_seconds = 0.0
    for record in done:
        for output in record.get("outputs", []):
            path = record["folder"] / output
            if path.suffix == ".json" and path.exists():
                stats = json.loads(path.read_text())["stats"]
                calls += stats["ocr_calls"]
                segments += stats["segments"]
                ocr_seconds += stats["ocr_seconds"]
    per_video = [r["realtime_factor"] for r in done if r.get("realtime_factor")]
    code = next((c for c in codes if c != 0), 0)
    return {"processes": processes, "jobs": jobs, "rc": code, "videos": len(videos), "done": len(done),
            **throughput(video_s, wall, calls),
            "per_video_realtime_median": sorted(per_video)[len(per_video) // 2] if per_video else None,
            "segments": segments, "gpu": load,
            "failed": [r.get("error") for r in records.values() if r.get("status") != "done"][:3]}


def throughput(video_s: float, wall: float, calls: int) -> dict[str, Any]:
    """A row's rates: the video seconds done per wall second, and the OCR calls per wall second."""
    return {"video_s": round(video_s, 1), "wall_s": round(wall, 2),
            "aggregate_realtime": round(video_s / wall, 1) if wall else None, "ocr_calls": calls,
            "crops_per_s_wall": round(calls / wall, 1) if wall else None}


def start_server(model: str, port: int, api_servers: int, log: Path) -> subprocess.Popen:
    entry = ["vllm.entrypoints.cli.main", "serve", model] if api_servers > 1 else \
        ["vllm.entrypoints.openai.api_server", "--model", model]
    command = [sys.executable, "-m", *entry, "--load-format", "dummy", "--host", "127.0.0.1", "--port", str(port),
               "--max-model-len", "4096", "--max-num-seqs", "256", "--max-num-batched-tokens", "16384",
               "--no-enable-prefix-caching", "--mm-processor-cache-gb", "0", "--limit-mm-per-prompt",
               '{"image": 1}', "--enforce-eager", "--gpu-memory-utilization", "0.85"]
    if api_servers > 1:
        command += ["--api-server-count", str(api_servers)]
    return subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def openai_engine(args: argparse.Namespace, concurrency: int) -> list[str]:
    return ["--engine", "openai", "--server", f"http://127.0.0.1:{args.port}/v1", "--model", args.model,
            "--concurrency", str(concurrency)]


@contextmanager
def served(args: argparse.Namespace, log: Path) -> Iterator[float]:
    """One ``vllm serve`` for the body, ready when it begins (its start in seconds is yielded), stopped after."""
    began = time.perf_counter()
    server = start_server(args.model, args.port, args.api_servers, log)
    try:
        wait_ready([server], [f"http://127.0.0.1:{args.port}"], args.ready_timeout)
        start_s = round(time.perf_counter() - began, 1)
        print(f"server up in {start_s} s", flush=True)
        yield start_s
    finally:
        stop(server)


def set_server(args: argparse.Namespace, videos: list[Path], out: Path) -> dict[str, Any]:
    with served(args, out / "server.log") as start_s:
        result: dict[str, Any] = {"start_s": start_s, "api_servers": args.api_servers}
        for processes, jobs in args.layouts:
            # Each process has its own client: the requests in flight are shared out between them.
            engine = openai_engine(args, max(4, args.concurrency // processes))
            name = f"server_p{processes}_j{jobs}"
            row = run_batch(videos, out / name, jobs, engine, out / f"{name}.log", timeout=args.batch_timeout,
                            processes=processes, env=client_environment())
            result[name] = row
            print(f"server, {processes} processes x {jobs} jobs: {row}", flush=True)
        return result


def start_service(args: argparse.Namespace, port: int, data: Path, workers: int, concurrency: int,
                  log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "subextract", "serve", "--port", str(port), "--data", str(data),
               "--workers", str(workers), "--max-queue", "4096", "--config", "paddleocr-vl", "--replica", f"r{port}",
               *openai_engine(args, concurrency)]
    return subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
                            env=client_environment())


def service_job(base: str, video: Path, deadline: float, poll_s: float) -> dict[str, Any]:
    """One video as an API client sends it: uploaded, polled every ``poll_s`` seconds to its end, its JSON
    fetched. The polls are requests the service answers in the interpreter its worker threads share: 64
    clients at 10 a second took ~640 requests a second from the jobs (the first service run, 2026-12-05)."""
    import httpx

    with httpx.Client(base_url=base, timeout=60) as client:
        with video.open("rb") as handle:
            response = client.post("/v1/jobs", files={"file": (video.name, handle, "video/mp4")},
                                   data={"region": "bottom"})
        if response.status_code != 202:
            return {"video": video.name, "status": f"refused {response.status_code}: {response.text[:200]}"}
        job_id = response.json()["id"]
        while True:
            job = client.get(f"/v1/jobs/{job_id}").json()
            if job["status"] not in ("queued", "running") or time.perf_counter() > deadline:
                break
            time.sleep(poll_s)
        record = {"video": video.name, "status": job["status"], "error": job.get("error"), "ended": time.perf_counter()}
        if job["status"] == "done":
            document = client.get(f"/v1/jobs/{job_id}/subtitles.json").json()
            record.update(duration=document.get("duration", 0), stats=document.get("stats", {}))
        return record


def set_service(args: argparse.Namespace, videos: list[Path], out: Path) -> dict[str, Any]:
    with served(args, out / "server_service.log") as start_s:
        result: dict[str, Any] = {"start_s": start_s}
        for replicas, workers in args.service_layouts:
            name = f"service_r{replicas}_w{workers}"
            folder = out / name
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            ports = [args.port + 1 + r for r in range(replicas)]
            bases = [f"http://127.0.0.1:{port}" for port in ports]
            # Each replica has its own client: the requests in flight are shared out between them.
            services = [start_service(args, port, folder / f"data{r}", workers, max(4, args.concurrency // replicas),
                                      folder / f"serve{r}.log") for r, port in enumerate(ports)]
            try:
                wait_ready(services, bases, args.ready_timeout, path="/ready")
                gpu = GpuMemory()
                began = time.perf_counter()
                deadline = began + args.batch_timeout
                with ThreadPoolExecutor(len(videos)) as pool:
                    records = list(pool.map(lambda item: service_job(bases[item[0] % replicas], item[1], deadline,
                                                                        args.poll_s),
                                            enumerate(videos)))
                load = gpu.stop_load()
            finally:
                for process in services:
                    stop(process)
            done = [r for r in records if r["status"] == "done"]
            wall = max((r["ended"] for r in done), default=time.perf_counter()) - began
            video_s = sum(r["duration"] for r in done)
            calls = sum(r["stats"].get("ocr_calls", 0) for r in done)
            own = sorted(r["duration"] / r["stats"]["wall_seconds"] for r in done if r["stats"].get("wall_seconds"))
            row = {"replicas": replicas, "workers": workers, "videos": len(videos), "done": len(done),
                   **throughput(video_s, wall, calls), "gpu": load,
                   "per_video_realtime_median": round(own[len(own) // 2], 2) if own else None,
                   "failed": [f"{r['video']}: {r['status']} {r.get('error') or ''}" for r in records
                              if r["status"] != "done"][:3]}
            result[name] = row
            print(f"service, {replicas} replicas x {workers} workers: {row}", flush=True)
        return result


def set_ray(args: argparse.Namespace, videos: list[Path], out: Path) -> dict[str, Any]:
    """One ``subextract batch --ray --ray-split`` driver on a local Ray cluster, for each of ``--ray-readers``."""
    with served(args, out / "server_ray.log") as start_s:
        result: dict[str, Any] = {"start_s": start_s}
        for readers in args.ray_readers:
            # Each reader actor has its own client: the requests in flight are shared out between them.
            engine = ["--ray", "--ray-split", "--ray-readers", str(readers),
                      *openai_engine(args, max(4, args.concurrency // readers))]
            name = f"ray_split_r{readers}"
            row = run_batch(videos, out / name, None, engine, out / f"{name}.log", timeout=args.batch_timeout,
                            env=client_environment())
            result[name] = row
            print(f"ray --ray-split, {readers} readers: {row}", flush=True)
        return result


def set_inprocess(args: argparse.Namespace, videos: list[Path], out: Path) -> dict[str, Any]:
    engine = ["--engine", "vllm", "--model", args.model, *engine_option_args({**DUMMY, **args.engine_options})]
    result = {}
    for jobs in args.inprocess_jobs:
        row = run_batch(videos, out / f"inprocess_j{jobs}", jobs, engine, out / f"inprocess_j{jobs}.log")
        result[f"jobs{jobs}"] = row
        print(f"in-process, jobs {jobs}: {row}", flush=True)
    return result


def decode_floor(video: Path, band: dict[str, int]) -> float:
    from subextract.stages.probe import ffmpeg_exe

    crop = f"crop={band['width']}:{band['height']}:{band['x']}:{band['y']},format=gray"
    began = time.perf_counter()
    subprocess.run([ffmpeg_exe(), "-nostdin", "-v", "error", "-i", str(video), "-vf", crop, "-f", "null", "-"],
                   check=True)
    return time.perf_counter() - began


def set_floor(args: argparse.Namespace, videos: list[Path], out: Path) -> dict[str, Any]:
    """The band each video's run found (from a batch's JSON outputs), decoded N at once and one at a time."""
    bands = {}
    for path in out.rglob("*.json"):
        if path.name == "pipeline.json" or path.name == "overlap.json":
            continue
        document = json.loads(path.read_text())
        if isinstance(document, dict) and document.get("bands"):
            bands[Path(document["video"]).name] = document["bands"][0]
    if not bands:
        return {"error": "no batch output to take the bands from: run server or inprocess first"}
    work = [(v, bands[v.name]) for v in videos if v.name in bands]
    from subextract.stages.probe import probe

    durations = {v: probe(str(v)).duration for v, _ in work}
    result: dict[str, Any] = {"videos": len(work), "video_s": round(sum(durations.values()), 1)}
    for jobs in sorted({1, *args.floor_jobs}):
        began = time.perf_counter()
        with ThreadPoolExecutor(jobs) as pool:
            list(pool.map(lambda item: decode_floor(*item), work))
        wall = time.perf_counter() - began
        result[f"jobs{jobs}"] = {"wall_s": round(wall, 2), "aggregate_realtime": round(result["video_s"] / wall, 1)}
        print(f"floor, {jobs} at once: {result[f'jobs{jobs}']}", flush=True)
    return result


def set_overlap(args: argparse.Namespace, videos: list[Path], out: Path) -> dict[str, Any]:
    """One video in a child process (its own engine and GPU memory), timed from inside."""
    command = [sys.executable, __file__, args.model, "--out", str(out), "--videos", str(videos[0]), "--worker", "overlap",
               "--engine-options", json.dumps(args.engine_options)]
    with (out / "overlap.log").open("w") as log:
        code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False,
                              timeout=args.ready_timeout + 120).returncode
    path = out / "overlap.json"
    return json.loads(path.read_text()) if code == 0 and path.exists() else {"error": f"rc {code}"}


def worker_overlap(args: argparse.Namespace) -> None:
    import subextract.pipeline.run as run_module
    from subextract.config import load_settings

    began = time.perf_counter()
    marks: dict[str, float] = {}

    def mark(name: str, first: bool = True) -> None:
        if not first or name not in marks:
            marks[name] = round(time.perf_counter() - began, 3)

    create_engine = run_module.create_engine

    def timed_create(settings: Any) -> Any:
        mark("engine setup began")
        engine = create_engine(settings)
        mark("engine ready")
        read_batch = engine.read_batch

        def timed_read(*read_args: Any, **kwargs: Any) -> Any:
            mark("first read began")
            readings = read_batch(*read_args, **kwargs)
            mark("first read ended")
            return readings

        engine.read_batch = timed_read
        return engine

    run_module.create_engine = timed_create

    def progress(_done: float, _total: float | None, segments: int) -> None:
        mark("first frame decoded")
        if segments:
            mark("first segment queued")
        mark("last frame decoded", first=False)

    settings = load_settings("paddleocr-vl", overrides={"ocr": {"engine": "vllm", "model": args.model,
                                                                "engine_options": {**DUMMY, **args.engine_options}},
                                                        "region": {"mode": "bottom"}})
    result = run_module.extract(str(args.videos[0]), settings, progress=progress,
                                on_stage=lambda name: mark(f"stage: {name}"))
    mark("done")
    summary = {"video": args.videos[0].name, "duration_s": result.info.duration, "segments": result.stats.segments,
               "ocr_calls": result.stats.ocr_calls, "marks_s": marks,
               "decoding_done_before_engine_ready": marks.get("last frame decoded", 1e9) < marks.get("engine ready", 0)}
    (Path(args.out) / "overlap.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary), flush=True)


def int_list(text: str) -> list[int]:
    return [int(item) for item in text.split(",")]


def layout_list(text: str) -> list[tuple[int, ...]]:
    """``8x2,16x1`` as [(8, 2), (16, 1)]."""
    return [tuple(int(x) for x in item.split("x")) for item in text.split(",")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--videos", nargs="+", type=Path, required=True)
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--sets", default="server,floor,inprocess,overlap")
    parser.add_argument("--layouts", type=layout_list,
                        default=[(1, 16), (8, 2), (16, 1)],
                        help="server: batch processes x jobs each, e.g. 1x16,8x2,16x1")
    parser.add_argument("--service-layouts", type=layout_list,
                        default=[(1, 16), (8, 2)],
                        help="service: subextract serve replicas x --workers each, e.g. 1x16,8x2")
    parser.add_argument("--poll-s", type=float, default=1.0, help="service: seconds between a client's polls of its job")
    parser.add_argument("--floor-jobs", type=int_list, default=[16])
    parser.add_argument("--inprocess-jobs", type=int_list, default=[16])
    parser.add_argument("--ray-readers", type=int_list, default=[2],
                        help="ray: reader actors of --ray-split, one run each, e.g. 1,4")
    parser.add_argument("--concurrency", type=int, default=64, help="openai: requests in flight, all jobs together")
    parser.add_argument("--api-servers", type=int, default=1)
    parser.add_argument("--port", type=int, default=8021)
    parser.add_argument("--ready-timeout", type=float, default=240)
    parser.add_argument("--batch-timeout", type=float, default=120, help="seconds one batch run may take")
    parser.add_argument("--engine-options", type=json.loads, default={},
                        help="in-process engine: vllm.LLM options over the preset's and the dummy weights' (JSON)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.worker == "overlap":
        worker_overlap(args)
        return 0
    videos = copied_videos(args.videos, args.copies, args.out.parent / "videos")
    results_path = args.out / "pipeline.json"
    results: dict[str, Any] = json.loads(results_path.read_text()) if results_path.exists() else {}
    results["videos"] = {"files": [v.name for v in args.videos], "copies": args.copies, "streams": len(videos)}
    sets = {"server": set_server, "service": set_service, "ray": set_ray, "inprocess": set_inprocess, "floor": set_floor,
            "overlap": set_overlap}
    for name in args.sets.split(","):
        print(f"== {name}", flush=True)
        try:
            results[name] = sets[name](args, videos, args.out)
        except Exception as exc:  # noqa: BLE001 - one set's failure is recorded, the next still runs
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
            print(results[name], flush=True)
        results_path.write_text(json.dumps(results, indent=1, default=str))
    print(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
