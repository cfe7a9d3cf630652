#!/usr/bin/env python3
"""Benchmark: accuracy, timing and speed of ``subextract`` against ground truth and the decode floor.

For every video with a ground-truth SRT it runs the real CLI in a fresh process (wall time, CPU
time and peak RSS of that process tree), times FFmpeg decoding the same video with the same crop to
a null sink (the floor no pipeline can beat) in the same run, and scores the cues. On a machine
shared with other work the CPU ratio is the steadier of the two speed ratios.

    python bench/run.py                      # samples + generated set + popeye
    python bench/run.py --set samples        # just the bundled samples (fast)
    python bench/run.py --set scripts --repeat 6   # each video six times in a row: long videos
    python bench/run.py --set styles heldout # the benchmark's style axis and the held-out set, side by side

The held-out set (make_samples.py --set heldout, docs/heldout.md) is for checking, never for tuning.
Writes bench/out/results.json and bench/out/results.md (the tables of docs/results.md), with the means
of each set side by side and, for the held-out set, one row per condition.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pysubs2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from subextract.scoring import TimedText, load_cues, score, strip_markup  # noqa: E402
from subextract.stages.probe import ffmpeg_exe, probe  # noqa: E402

POPEYE = ROOT.parent / "shared" / "eval" / "popeye"
REAL_ZH = ROOT.parent / "shared" / "eval" / "real_zh"
LABELS = ROOT / "bench" / "labels"


@dataclass(frozen=True)
class Case:
    set_name: str
    video: Path
    reference: Path
    lang: str | None = None  # passed as --lang (the scripts set: the video's language)
    condition: str | None = None  # the held-out set: the condition of issue 23 the video stands for


def sample_cases() -> list[Case]:
    folder = ROOT / "sample_videos"
    return [Case("samples", v, v.with_suffix(".srt")) for v in sorted(folder.glob("*.mp4"))
            if v.with_suffix(".srt").exists()]


def _generate(set_name: str, folder: Path, *options: str) -> None:
    """make_samples.py's set into ``folder``; where it fails (it says why in one line, e.g. the Debian
    packages to install), the benchmark stops with its status, not a traceback."""
    made = subprocess.run([sys.executable, str(ROOT / "sample_videos" / "make_samples.py"), "--set", set_name,
                           "--out", str(folder), *options], check=False)
    if made.returncode:
        raise SystemExit(made.returncode)


def generated_cases(folder: Path, generate: bool) -> list[Case]:
    if generate and not any(folder.glob("*.srt")):
        _generate("bench", folder)
    return [Case("styles" if v.stem.startswith("style_") else "generated", v, v.with_suffix(".srt"))
            for v in sorted(folder.glob("*.mp4")) if v.with_suffix(".srt").exists()]


def script_cases(folder: Path, generate: bool, set_name: str = "scripts") -> list[Case]:
    """The multi-script set or the faces set (make_samples.py --set scripts / faces), each video
    read with --lang set to its language."""
    if generate and not any(folder.glob("*.srt")):
        _generate(set_name, folder)
    return [Case(set_name, v, v.with_suffix(".srt"), json.loads(v.with_suffix(".json").read_text())["languages"][0])
            for v in sorted(folder.glob("*.mp4")) if v.with_suffix(".srt").exists()]


def heldout_cases(folder: Path, generate: bool) -> list[Case]:
    """The held-out set (make_samples.py --set heldout), each video read with the --lang a user
    would type for it (none where a user would leave the default)."""
    if generate and not any(folder.glob("*.srt")):
        _generate("heldout", folder, "--jobs", "1")
    cases = []
    for video in sorted(folder.glob("*.mp4")):
        if video.with_suffix(".srt").exists():
            sidecar = json.loads(video.with_suffix(".json").read_text())
            cases.append(Case("heldout", video, video.with_suffix(".srt"), sidecar.get("lang"), sidecar.get("condition")))
    return cases


def real_cases() -> list[Case]:
    """Real hardsubbed clips labelled by hand (bench/labels)."""
    return [Case("real", REAL_ZH / f"{label.stem.removeprefix('real_zh_')}.mp4", label)
            for label in sorted(LABELS.glob("real_zh_*.srt"))
            if (REAL_ZH / f"{label.stem.removeprefix('real_zh_')}.mp4").exists()]


def popeye_cases(folder: Path) -> list[Case]:
    if not POPEYE.is_dir():
        print(f"bench: {POPEYE} not found, popeye set skipped", file=sys.stderr)
        return []
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as bin_dir:
        # burn.sh calls plain `ffmpeg`: give it the one subextract uses, at a constant frame rate
        # (FFmpeg 7+'s MP4 muxer gives up on the long timestamp gap a late last PGS packet leaves).
        shim = Path(bin_dir) / "ffmpeg"
        shim.write_text(f"#!{sys.executable}\nimport os, sys\nargs = sys.argv[1:]\n"
                        f"os.execv({ffmpeg_exe()!r}, [{ffmpeg_exe()!r}, *args[:-1], '-fps_mode', 'cfr', args[-1]])\n")
        shim.chmod(0o755)
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
        subprocess.run(["sh", str(POPEYE / "burn.sh"), str(folder)], check=True, env=env)
    cases = []
    for video in sorted(folder.glob("hard_*.mp4")):
        reference = POPEYE / f"gt_{video.stem.removeprefix('hard_')}.srt"
        if reference.exists():
            cases.append(Case("popeye", video, reference))
    return cases


@dataclass(frozen=True)
class Measured:
    wall: float  # seconds
    cpu: float  # user + system seconds of the process and its waited-for children (FFmpeg)
    rss_mib: int  # peak RSS of the largest of them
    code: int


def run_measured(command: list[str]) -> Measured:
    """Wall and CPU time, peak RSS and exit code of ``command``. CPU seconds matter on a shared
    machine: other work there stretches the wall times of one run but hardly its CPU time."""
    began = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - began
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        print(process.stderr.read().decode(errors="replace"), file=sys.stderr)
    return Measured(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024, process.returncode)


def decode_floor(video: Path, bands: list[dict]) -> Measured:
    """FFmpeg decoding the video and cropping the same bands, writing nothing."""
    x0 = min(b["x"] for b in bands)
    y0 = min(b["y"] for b in bands)
    x1 = max(b["x"] + b["width"] for b in bands)
    y1 = max(b["y"] + b["height"] for b in bands)
    floor = run_measured([ffmpeg_exe(), "-nostdin", "-v", "error", "-i", str(video), "-vf",
                          f"crop={x1 - x0}:{y1 - y0}:{x0}:{y0},format=gray", "-f", "null", "-"])
    if floor.code != 0:
        raise RuntimeError(f"decode floor of {video} failed")
    return floor


def cues_from_json(document: dict) -> list[TimedText]:
    """The cues as a player shows them, read the way the reference is (markup such as <i> stripped)."""
    return [TimedText(c["start"], c["end"], strip_markup(c["text"])) for c in document["cues"]]


def subtitle_strips(case: Case) -> list[str]:
    """Where the generator put the subtitles, as naive.py's --strip values: for each zone the
    share of the height where a 30 % strip over it starts (a bottom zone at the usual 6 % margin
    gives the bottom 30 %, a zone set higher a strip moved up with it; a video with a top and a
    bottom zone, both strips). Without a sidecar: the bottom 30 %."""
    sidecar = case.video.with_suffix(".json")
    zones = json.loads(sidecar.read_text()).get("zones") if sidecar.exists() else None
    strips = []
    for zone in zones or [{}]:
        margin = zone.get("style", {}).get("margin", 0.06)
        start = margin - 0.06 if zone.get("position") == "top" else 1 - 0.3 - (margin - 0.06)
        strips.append(f"{min(max(start, 0.0), 0.7):.3f}")
    return list(dict.fromkeys(strips))


def measure_naive(case: Case, workdir: Path, reference, frame_duration: float, wall: float) -> dict:
    """The naive baseline (bench/naive.py) on the same video in a fresh process, scored alike."""
    out = workdir / f"naive-{case.set_name}-{case.video.stem}.json"
    strips = [arg for strip in subtitle_strips(case) for arg in ("--strip", strip)]
    run = run_measured([sys.executable, str(ROOT / "bench" / "naive.py"), str(case.video), *strips, "-o", str(out)])
    if run.code != 0:
        return {"naive_error": f"exit code {run.code}"}
    result = score(reference, cues_from_json(json.loads(out.read_text())), frame_duration=frame_duration)
    return {"naive_e2e_f1": round(result.e2e_f1, 3), "naive_e2e_recall": round(result.e2e_recall, 3),
            "naive_cer": round(result.cer, 4), "naive_start_p90_ms": result.start_error_ms_p90,
            "naive_wall_s": round(run.wall, 2), "naive_over_ours": round(run.wall / wall, 1)}


def measure(case: Case, config: str | None, workdir: Path, naive: bool = True) -> dict:
    info = probe(str(case.video))
    out = workdir / f"{case.set_name}-{case.video.stem}.json"
    command = [sys.executable, "-m", "subextract", str(case.video), "--format", "json", "-o", str(out),
               "--force", "--quiet"] + (["--config", config] if config else []) + \
        (["--lang", case.lang] if case.lang else [])
    run = run_measured(command)
    if run.code != 0:
        return {"set": case.set_name, "video": case.video.stem, "condition": case.condition,
                "error": f"exit code {run.code}"}
    document = json.loads(out.read_text())
    floor = decode_floor(case.video, document["bands"])
    reference = load_cues(case.reference)
    result = score(reference, cues_from_json(document), frame_duration=info.frame_duration)
    return {
        "set": case.set_name, "video": case.video.stem, "condition": case.condition, "lang": case.lang,
        "duration_s": round(info.duration, 2),
        "size": f"{info.width}x{info.height}", "fps": info.fps, **result.to_dict(),
        "wall_s": round(run.wall, 2), "realtime_factor": round(info.duration / run.wall, 2),
        "decode_floor_s": round(floor.wall, 2), "wall_over_floor": round(run.wall / floor.wall, 2),
        "cpu_s": round(run.cpu, 1), "floor_cpu_s": round(floor.cpu, 1), "cpu_over_floor": round(run.cpu / floor.cpu, 2),
        "ocr_calls": document["stats"]["ocr_calls"],
        "ocr_calls_per_cue": round(document["stats"]["ocr_calls"] / max(1, len(reference)), 2),
        "peak_rss_mib": run.rss_mib,
        **(measure_naive(case, workdir, reference, info.frame_duration, run.wall) if naive else {}),
    }


def repeated(case: Case, times: int, workdir: Path) -> Case:
    """The case's video played ``times`` times in a row (FFmpeg's concat demuxer, streams copied)
    and its reference with each repeat's cues shifted by the video's duration: a long video of the
    same content, where what each video costs once (imports, model loads, the region pre-scan)
    weighs little against decoding."""
    duration = probe(str(case.video)).duration
    stem = f"{case.video.stem}-x{times}"
    listing = workdir / f"{stem}.txt"
    escaped = str(case.video.resolve()).replace("'", "'\\''")
    listing.write_text(f"file '{escaped}'\n" * times)
    video = workdir / f"{stem}{case.video.suffix}"
    subprocess.run([ffmpeg_exe(), "-nostdin", "-v", "error", "-y", "-f", "concat", "-safe", "0", "-i", str(listing),
                    "-c", "copy", str(video)], check=True)
    cues = load_cues(case.reference)
    subtitles = pysubs2.SSAFile()
    for index in range(times):
        for cue in cues:
            subtitles.append(pysubs2.SSAEvent(start=round((cue.start + index * duration) * 1000),
                                              end=round((cue.end + index * duration) * 1000),
                                              text=cue.text.replace("\n", "\\N")))
    reference = workdir / f"{stem}.srt"
    subtitles.save(str(reference), format_="srt")
    return Case(case.set_name, video, reference, case.lang, case.condition)


def _fmt(value, digits: int = 3) -> str:
    if value is None:
        return "–"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


COLUMNS = [("set", "set", None), ("video", "video", None), ("size", "size", None),
           ("duration_s", "dur s", 1), ("cer", "CER", 4), ("e2e_f1", "e2e F1", 3), ("exact_share", "exact", 3),
           ("start_error_ms_median", "start ms med", 0), ("start_error_ms_p90", "p90", 0),
           ("end_error_ms_median", "end ms med", 0), ("end_error_ms_p90", "p90", 0),
           ("wall_s", "wall s", 2), ("realtime_factor", "x real time", 1), ("decode_floor_s", "floor s", 2),
           ("wall_over_floor", "wall/floor", 2), ("cpu_s", "CPU s", 1), ("floor_cpu_s", "floor CPU s", 1),
           ("cpu_over_floor", "CPU/floor", 2), ("ocr_calls_per_cue", "OCR/cue", 2),
           ("peak_rss_mib", "RSS MiB", None), ("naive_e2e_f1", "naive e2e F1", 3), ("naive_cer", "naive CER", 4),
           ("e2e_recall", "e2e recall", 3), ("naive_e2e_recall", "naive e2e recall", 3),
           ("naive_wall_s", "naive wall s", 2), ("naive_over_ours", "naive/ours wall", 1)]


def markdown(rows: list[dict]) -> str:
    lines = ["| " + " | ".join(title for _, title, _ in COLUMNS) + " |",
             "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['set']} | {row['video']} | error: {row['error']} |")
            continue
        lines.append("| " + " | ".join(_fmt(row.get(key), digits if digits is not None else 0)
                                       if digits is not None else str(row.get(key, "–"))
                                       for key, _, digits in COLUMNS) + " |")
    ok = [r for r in rows if "error" not in r]
    if ok:
        lines.append("")
        lines.append(f"Mean over {len(ok)} videos: CER {statistics.mean(r['cer'] for r in ok):.4f}, "
                     f"e2e F1 {statistics.mean(r['e2e_f1'] for r in ok):.3f}, "
                     f"wall/floor {statistics.mean(r['wall_over_floor'] for r in ok):.2f}, "
                     f"CPU/floor {statistics.mean(r['cpu_over_floor'] for r in ok):.2f}, "
                     f"OCR calls per cue {statistics.mean(r['ocr_calls_per_cue'] for r in ok):.2f}.")
        naive = [r for r in ok if "naive_e2e_f1" in r]
        if naive:
            lines.append(f"Naive baseline on {len(naive)} of them: e2e F1 "
                         f"{statistics.mean(r['naive_e2e_f1'] for r in naive):.3f} against "
                         f"{statistics.mean(r['e2e_f1'] for r in naive):.3f}, CER "
                         f"{statistics.mean(r['naive_cer'] for r in naive):.4f} against "
                         f"{statistics.mean(r['cer'] for r in naive):.4f}, its wall time "
                         f"{statistics.mean(r['naive_over_ours'] for r in naive):.1f}x ours.")
        lines += set_summary(ok)
        lines += condition_summary(ok)
    return "\n".join(lines) + "\n"


def _mean(rows: list[dict], key: str, digits: int) -> str:
    values = [r[key] for r in rows if r.get(key) is not None]
    return _fmt(round(statistics.mean(values), digits), digits) if values else "–"


def _median(rows: list[dict], key: str) -> str:
    values = [r[key] for r in rows if r.get(key) is not None]
    return f"{statistics.median(values):.0f}" if values else "–"


SUMMARY = ("| {label} | videos | CER | e2e F1 | start ms med | end ms med | e2e recall | naive e2e F1 | naive CER "
           "| naive e2e recall | recall below naive on | CPU/floor |")


def summary_row(label: str, rows: list[dict]) -> str:
    """Means over the rows (timing: the median of the videos' medians); the videos whose
    end-to-end recall is below the naive baseline's (the issue's floor: never)."""
    below = [r["video"] for r in rows if r.get("naive_e2e_recall") is not None and r["e2e_recall"] < r["naive_e2e_recall"]]
    return (f"| {label} | {len(rows)} | {_mean(rows, 'cer', 4)} | {_mean(rows, 'e2e_f1', 3)} | "
            f"{_median(rows, 'start_error_ms_median')} | {_median(rows, 'end_error_ms_median')} | "
            f"{_mean(rows, 'e2e_recall', 3)} | {_mean(rows, 'naive_e2e_f1', 3)} | {_mean(rows, 'naive_cer', 4)} | "
            f"{_mean(rows, 'naive_e2e_recall', 3)} | {', '.join(below) or 'none'} | {_mean(rows, 'cpu_over_floor', 2)} |")


def set_summary(rows: list[dict]) -> list[str]:
    """The sets' means side by side: the benchmark's, tuned on, beside the held-out set, not."""
    sets = list(dict.fromkeys(r["set"] for r in rows))
    return ["", "Means per set:", "", SUMMARY.format(label="set"), "|" + "---|" * 12,
            *(summary_row(name, [r for r in rows if r["set"] == name]) for name in sets)]


def condition_summary(rows: list[dict]) -> list[str]:
    """The held-out set per condition of issue 23 (a condition may have several videos)."""
    held = [r for r in rows if r.get("condition")]
    if not held:
        return []
    conditions = sorted(dict.fromkeys(r["condition"] for r in held))
    return ["", "Held-out set per condition:", "", SUMMARY.format(label="condition"), "|" + "---|" * 12,
            *(summary_row(c, [r for r in held if r["condition"] == c]) for c in conditions)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=("samples", "generated", "styles", "popeye", "real", "scripts", "faces", "heldout",
                                          "all"),
                        nargs="+", default=["all"], dest="sets", metavar="SET",
                        help="one or more of samples, generated (the bench set without the style axis), styles "
                             "(the style axis alone), popeye, real, scripts, faces (the scripts in other faces), heldout "
                             "(checked, never tuned on) or all (default)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these videos (file stems)")
    parser.add_argument("--no-naive", action="store_true", help="skip the naive baseline")
    parser.add_argument("--videos", type=Path, default=ROOT / "bench" / "videos",
                        help="where generated and burned videos are kept (git-ignored)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    parser.add_argument("--config", help="preset or YAML file passed to subextract")
    parser.add_argument("--lang", help="--lang passed to subextract for every video (default: none; the scripts "
                                       "set: each video's own language; the held-out set: the one its sidecar "
                                       "names, as a user would type it, e.g. zh for code-switched Chinese)")
    parser.add_argument("--no-generate", action="store_true", help="use only videos already generated")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="play each video N times in a row (its reference shifted alike): long videos, "
                             "where each video's one-off start-up weighs little")
    args = parser.parse_args()
    cases: list[Case] = []
    wanted = set(args.sets) | ({"samples", "generated", "styles", "popeye", "real", "scripts", "faces", "heldout"}
                               if "all" in args.sets else set())
    if "samples" in wanted:
        cases += sample_cases()
    if wanted & {"generated", "styles"}:
        cases += [case for case in generated_cases(args.videos, not args.no_generate) if case.set_name in wanted]
    if "popeye" in wanted:
        cases += popeye_cases(args.videos / "popeye")
    if "real" in wanted:
        cases += real_cases()
    if "scripts" in wanted:
        cases += script_cases(args.videos / "scripts", not args.no_generate)
    if "faces" in wanted:
        cases += script_cases(args.videos / "faces", not args.no_generate, "faces")
    if "heldout" in wanted:
        cases += heldout_cases(args.videos / "heldout", not args.no_generate)
    if args.only:
        cases = [case for case in cases if case.video.stem in args.only]
    if args.lang:
        cases = [Case(case.set_name, case.video, case.reference, args.lang, case.condition) for case in cases]
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for case in cases:
            print(f"bench: {case.set_name}/{case.video.stem}", file=sys.stderr, flush=True)
            if args.repeat > 1:
                case = repeated(case, args.repeat, Path(workdir))
            rows.append(measure(case, args.config, Path(workdir), naive=not args.no_naive))
    (args.out / "results.json").write_text(json.dumps(rows, indent=2) + "\n")
    table = markdown(rows)
    (args.out / "results.md").write_text(table)
    print(table)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
