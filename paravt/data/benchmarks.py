"""Benchmark loaders: published annotation layouts in a local directory → `EvalSample`s.

| name | annotation file(s) under ``root`` | videos |
|---|---|---|
| ``videomme`` / ``videomme_sub`` | HF ``lmms-lab/Video-MME`` parquet (``**/test-*.parquet``): ``videoID``, ``question_id``, ``duration`` (short/medium/long), ``domain``, ``task_type``, ``question``, ``options`` ("A. …"), ``answer`` | ``data/<videoID>.mp4``; subtitles ``subtitle/<videoID>.srt`` |
| ``longvideobench`` | ``lvb_val.json``: ``id``, ``video_path``, ``duration``, ``question``, ``candidates``, ``correct_choice`` (int), ``question_category`` | ``videos/<video_path>`` |
| ``lvbench`` | ``video_info.meta.jsonl`` (also under ``data/``): per video ``key`` and ``qa`` = [{``uid``, ``question`` with "\\n(A) …" options, ``answer``, ``question_type``, ``time_reference``}] | ``videos/<key>.mp4`` (or ``all_videos/``) |
| ``mlvu`` | ``json/*.json`` (also ``MLVU/json``): ``video``, ``duration``, ``question``, ``candidates``, ``answer`` (text), ``question_type``; tasks without candidates are skipped | ``video/<json stem>/<video>`` |
| ``mmvu`` | ``validation.json``: ``id``, ``question``, ``choices`` {letter: text}, ``answer`` (letter), ``question_type`` (multiple-choice only), ``video`` (URL ending in ``videos/<Subject>/<n>.mp4``), ``metadata.subject`` | ``videos/<Subject>/<n>.mp4`` |
| ``elv_halluc`` | ``ELV_Halluc.jsonl``: yes/no questions in triplets (``caption_type``, ``ref_answer``, ``aspect``) | ``videos/<video>`` |
| ``charades_sta`` | ``charades_sta_test.txt`` lines ``VID start end##sentence``; durations from ``Charades_v1_test.csv`` (``id``…``length``) when present | ``Charades_v1_480/<VID>.mp4`` (or ``videos/``, ``Charades_v1/``) |

Layouts were taken from the benchmarks' public releases (HF dataset cards, official repos) and
are matched loosely: the first existing candidate file/dir wins. Loading with ``check_videos``
raises one `DataError` listing every missing video.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paravt.errors import DataError

LETTERS = "ABCDEFGHIJ"


@dataclass(frozen=True)
class EvalSample:
    id: str
    benchmark: str
    video: str  # absolute path
    question: str
    task: str  # mcq | tvg | oe
    answer: str
    options: tuple[str, ...] | None = None  # "A. text" form
    duration: float | None = None  # seconds when the annotation has it
    subset: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_episode_input(self, nframes: int = 64) -> Any:
        from paravt.data.episodes import from_eval_sample

        return from_eval_sample(self, nframes)


def _first(root: Path, candidates: Iterable[str]) -> Path | None:
    for c in candidates:
        hits = sorted(root.glob(c))
        if hits:
            return hits[0]
    return None


def _need(root: Path, name: str, candidates: Sequence[str]) -> Path:
    p = _first(root, candidates)
    if p is None:
        raise DataError(f"{name}: no annotation file under {root} (looked for {', '.join(candidates)}); "
                        "download the benchmark's annotations into that directory")
    return p


def _video(root: Path, dirs: Sequence[str], name: str) -> Path:
    for d in dirs:
        p = root / d / name
        if p.exists():
            return p
    return root / dirs[0] / name


def _lettered(texts: Sequence[str]) -> tuple[str, ...]:
    return tuple(f"{LETTERS[i]}. {str(t).strip()}" for i, t in enumerate(texts))


def _srt_text(path: Path) -> str:
    lines = []
    for ln in path.read_text(encoding="utf-8", errors="replace").splitlines():
        ln = ln.strip()
        if not ln or ln.isdigit() or "-->" in ln:
            continue
        lines.append(re.sub(r"<[^>]+>", "", ln))
    return "\n".join(lines)


def load_videomme(root: Path, *, subtitles: bool = False) -> list[EvalSample]:
    import pyarrow.parquet as pq

    ann = _need(root, "videomme", ["**/test-*.parquet", "**/videomme*.json"])
    recs = pq.read_table(str(ann)).to_pylist() if ann.suffix == ".parquet" else json.loads(ann.read_text())
    out = []
    for r in recs:
        vid = str(r["videoID"])
        q = str(r["question"])
        if subtitles:
            srt = root / "subtitle" / f"{vid}.srt"
            if srt.exists():
                q = f"Subtitles:\n{_srt_text(srt)}\n{q}"
        out.append(EvalSample(
            id=str(r["question_id"]), benchmark="videomme_sub" if subtitles else "videomme",
            video=str(_video(root, ["data", "videos"], f"{vid}.mp4")), question=q, task="mcq",
            answer=str(r["answer"]).strip(), options=tuple(str(o) for o in r["options"]),
            subset=str(r.get("duration", "")), meta={"domain": r.get("domain"), "task_type": r.get("task_type")}))
    return out


def load_longvideobench(root: Path) -> list[EvalSample]:
    ann = _need(root, "longvideobench", ["lvb_val.json", "**/lvb_val.json"])
    out = []
    for r in json.loads(ann.read_text()):
        cands = [c for c in r["candidates"]]
        out.append(EvalSample(
            id=str(r["id"]), benchmark="longvideobench",
            video=str(_video(root, ["videos", "."], str(r["video_path"]))), question=str(r["question"]),
            task="mcq", answer=LETTERS[int(r["correct_choice"])], options=_lettered(cands),
            duration=float(r["duration"]) if r.get("duration") is not None else None,
            subset=str(r.get("duration_group", r.get("question_category", ""))),
            meta={"question_category": r.get("question_category"), "duration_group": r.get("duration_group")}))
    return out


_LV_OPT = re.compile(r"\n\(([A-J])\)\s*")


def load_lvbench(root: Path) -> list[EvalSample]:
    ann = _need(root, "lvbench", ["video_info.meta.jsonl", "data/video_info.meta.jsonl", "**/video_info.meta.jsonl"])
    out = []
    for line in ann.read_text().splitlines():
        if not line.strip():
            continue
        v = json.loads(line)
        key = str(v["key"])
        video = _video(root, ["videos", "all_videos", "video"], f"{key}.mp4")
        minutes = (v.get("video_info") or {}).get("duration_minutes")
        for qa in v["qa"]:
            pieces = _LV_OPT.split(str(qa["question"]))  # [stem, "A", text, "B", text, ...]
            options = tuple(f"{pieces[i]}. {pieces[i + 1].strip()}" for i in range(1, len(pieces) - 1, 2))
            out.append(EvalSample(
                id=str(qa["uid"]), benchmark="lvbench", video=str(video), question=pieces[0].strip(),
                task="mcq", answer=str(qa["answer"]).strip(), options=options or None,
                duration=float(minutes) * 60 if minutes is not None else None, subset=str(v.get("type", "")),
                meta={"question_type": qa.get("question_type"), "time_reference": qa.get("time_reference")}))
    return out


def load_mlvu(root: Path) -> list[EvalSample]:
    jdir = _first(root, ["json", "MLVU/json"])
    if jdir is None or not any(jdir.glob("*.json")):
        raise DataError(f"mlvu: no json/*.json under {root}; download MLVU (json/ and video/) into it")
    out = []
    for ann in sorted(jdir.glob("*.json")):
        for i, r in enumerate(json.loads(ann.read_text())):
            cands = r.get("candidates")
            if not cands:
                continue  # generation tasks (summary, sub-scene captioning) are not MCQ
            cands = [str(c) for c in cands]
            if str(r["answer"]) not in cands:
                raise DataError(f"mlvu {ann.name} item {i}: answer {r['answer']!r} is not among candidates {cands}")
            out.append(EvalSample(
                id=f"{ann.stem}-{i}", benchmark="mlvu",
                video=str(_video(jdir.parent, [f"video/{ann.stem}", "video"], str(r["video"]))),
                question=str(r["question"]), task="mcq", answer=LETTERS[cands.index(str(r["answer"]))],
                options=_lettered(cands), duration=float(r["duration"]) if r.get("duration") else None,
                subset=str(r.get("question_type", ann.stem))))
    return out


def load_mmvu(root: Path) -> list[EvalSample]:
    ann = _need(root, "mmvu", ["validation.json", "**/validation.json"])
    out = []
    for r in json.loads(ann.read_text()):
        if r.get("question_type") != "multiple-choice":
            continue
        rel = str(r["video"]).split("videos/", 1)[-1]
        choices = r.get("choices") or {}
        letters = sorted(choices)
        out.append(EvalSample(
            id=str(r["id"]), benchmark="mmvu", video=str(_video(root, ["videos", "."], rel)),
            question=str(r["question"]), task="mcq", answer=str(r["answer"]).strip(),
            options=tuple(f"{k}. {choices[k]}" for k in letters),
            subset=str((r.get("metadata") or {}).get("subject", ""))))
    return out


def load_charades_sta(root: Path) -> list[EvalSample]:
    ann = _need(root, "charades_sta", ["charades_sta_test.txt", "**/charades_sta_test.txt"])
    lengths: dict[str, float] = {}
    meta_csv = _first(root, ["Charades_v1_test.csv", "**/Charades_v1_test.csv"])
    if meta_csv is not None:
        with meta_csv.open(newline="") as f:
            lengths = {row["id"]: float(row["length"]) for row in csv.DictReader(f) if row.get("length")}
    out = []
    for i, line in enumerate(ann.read_text().splitlines()):
        if "##" not in line:
            continue
        head, sentence = line.split("##", 1)
        vid, s, e = head.split()
        sentence = sentence.strip().rstrip(".")
        out.append(EvalSample(
            id=f"charades-{i}", benchmark="charades_sta",
            video=str(_video(root, ["Charades_v1_480", "videos", "Charades_v1"], f"{vid}.mp4")),
            # "start - end", as lmms-eval's Charades prompt asks: its parser cannot read "[a, b]"
            question=f'When does "{sentence}" happen in the video? Answer with its start and end time in '
                     'seconds, as "start - end".',
            task="tvg", answer=f"[{float(s):.1f}, {float(e):.1f}]", duration=lengths.get(vid), subset="charades"))
    return out


_ELV_TYPES = ("ground_truth", "in_video", "out_video")


def load_elv_halluc(root: Path) -> list[EvalSample]:
    """ELV-Halluc: ``ELV_Halluc.jsonl`` (also ``data/``), one yes/no question per line, in
    triplets of consecutive lines (ground_truth, in_video, out_video captions of one event), as the
    benchmark's ``eval.py`` reads it. Fields: ``caption_type``, ``ref_answer`` (Yes/No), ``aspect``,
    the question (``question`` or ``prompt``) and the video (``video`` / ``video_path`` /
    ``video_id``, under ``videos/``)."""
    ann = _need(root, "elv_halluc", ["ELV_Halluc.jsonl", "data/ELV_Halluc.jsonl", "**/ELV_Halluc.jsonl"])
    recs = [json.loads(x) for x in ann.read_text(encoding="utf-8").splitlines() if x.strip()]
    out = []
    for i, r in enumerate(recs):
        ctype = str(r.get("caption_type", ""))
        if ctype not in _ELV_TYPES:
            raise DataError(f"elv_halluc line {i + 1}: caption_type {ctype!r} is not one of {_ELV_TYPES}")
        video = next((str(r[k]) for k in ("video", "video_path", "video_id") if r.get(k)), "")
        if not video:
            raise DataError(f"elv_halluc line {i + 1}: no video field (video, video_path or video_id)")
        video = video if video.endswith((".mp4", ".mkv", ".webm")) else f"{video}.mp4"
        out.append(EvalSample(
            id=f"elv-{i}", benchmark="elv_halluc", video=str(_video(root, ["videos", "video", "."], video)),
            question=str(r.get("question") or r.get("prompt") or ""), task="oe", answer=str(r["ref_answer"]).strip(),
            subset=str(r.get("aspect", "")), meta={"triplet": str(i // 3), "caption_type": ctype,
                                                   "aspect": str(r.get("aspect", ""))}))
    return out


LOADERS: dict[str, Callable[[Path], list[EvalSample]]] = {
    "videomme": load_videomme,
    "videomme_sub": lambda root: load_videomme(root, subtitles=True),
    "longvideobench": load_longvideobench,
    "lvbench": load_lvbench,
    "mlvu": load_mlvu,
    "mmvu": load_mmvu,
    "charades_sta": load_charades_sta,
    "elv_halluc": load_elv_halluc,
}


def load_benchmark(name: str, root: str | Path, *, limit: int | None = None, check_videos: bool = True) -> list[EvalSample]:
    """Samples of benchmark ``name`` from ``root``; `DataError` listing missing videos."""
    if name not in LOADERS:
        raise DataError(f"benchmark {name!r} is unknown; available: {', '.join(LOADERS)}")
    rootp = Path(root)
    if not rootp.is_dir():
        raise DataError(f"benchmark root {rootp} is not a directory; pass the directory holding {name}'s files")
    samples = LOADERS[name](rootp)
    if limit is not None:
        samples = samples[:limit]
    if check_videos:
        missing = sorted({s.video for s in samples if not Path(s.video).exists()})
        if missing:
            shown = "\n  ".join(missing[:20])
            more = f"\n  … and {len(missing) - 20} more" if len(missing) > 20 else ""
            raise DataError(f"{name}: {len(missing)} video(s) missing under {rootp}:\n  {shown}{more}\n"
                            "Download/extract the videos, or pass check_videos=False to load annotations only")
    return samples
