"""lmms-eval's own scorers run on the differential corpus (needs ``lmms_eval`` importable).

``python tests/eval/lmms_reference.py`` rewrites ``tests/eval/fixtures/lmms_eval_outputs.jsonl``:
one line per corpus record with lmms-eval's outputs (``pred``, ``score``, ``random``), then one
line per benchmark with its aggregate. ``test_lmms_differential.py`` compares our scorers with
that file, and with these functions live when lmms-eval is installed (``pip install
lmms-eval==0.7.3``; its heavy imports, cv2/decord/loguru, must resolve).

Every response first goes through lmms-eval's ``strip_reasoning_tags`` with the CLI's default tag
pairs, as its evaluator does before ``process_results``. LongVideoBench's ``random.choice`` is
replaced by a sentinel so that a random fallback is recorded as such (its letter is not compared).
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).parent / "fixtures" / "lmms_eval_outputs.jsonl"
TAGS = [["<think>", "</think>"], ["<analysis>", "</analysis>"]]
RANDOM = "<random>"


def _doc(rec: dict[str, Any]) -> dict[str, Any]:
    g, opts, bench = rec["groups"], rec["options"], rec["bench"]
    if bench == "videomme":
        return {
            "question_id": rec["id"],
            "videoID": "v",
            "answer": rec["answer"],
            "duration": g["duration"],
            "domain": g["domain"],
            "sub_category": g["sub_category"],
            "task_type": g["task_type"],
        }
    if bench == "longvideobench":
        doc = {f"option{i}": o.split(". ", 1)[1] for i, o in enumerate(opts)}
        return {
            **doc,
            "id": rec["id"],
            "duration_group": g["duration_group"],
            "question_category": g["question_category"],
            "correct_choice": "ABCDE".index(rec["answer"]),
        }
    if bench == "mlvu":
        return {"question": rec["id"], "task_type": g["task_type"], "answer": rec["answer"]}
    if bench == "mmvu":
        return {
            "id": rec["id"],
            "question_type": "multiple-choice",
            "answer": rec["answer"],
            "choices": {o[0]: o.split(". ", 1)[1] for o in opts},
            "video_path": f"videos/{g['subject']}/1.mp4",
        }
    if bench == "charades_sta":
        return {"video": g["video"], "caption": g["caption"], "timestamp": rec["answer"]}
    return {"answer": rec["answer"]}


def lmms_outputs(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """lmms-eval's per-item outputs and per-benchmark aggregates for ``records``."""
    from lmms_eval.api.reasoning import strip_reasoning_tags
    from lmms_eval.tasks.charades_sta import utils as ch
    from lmms_eval.tasks.longvideobench import utils as lvb
    from lmms_eval.tasks.lvbench import utils as lvbench
    from lmms_eval.tasks.mlvu import utils as mlvu
    from lmms_eval.tasks.mmvu import utils as mmvu
    from lmms_eval.tasks.videomme import utils as vmme

    lvb.random = types.SimpleNamespace(choice=lambda _xs: RANDOM)
    out, per_bench = [], {}
    for rec in records:
        text, doc, bench = strip_reasoning_tags(rec["response"], TAGS), _doc(rec), rec["bench"]
        if bench == "videomme":
            r = vmme.videomme_process_results(doc, [text])["videomme_perception_score"]
            pred, score = r["pred_answer"], r["score"]
        elif bench == "longvideobench":
            r = lvb.longvideobench_process_results(doc, [text])["lvb_acc"]
            pred, score = r["parsed_pred"], float(r["parsed_pred"] == r["answer"])
        elif bench == "lvbench":
            pred, score = (
                lvbench.extract_characters_regex(text),
                float(lvbench.lvbench_process_results(doc, [text])["lvbench_score"]),
            )
        elif bench == "mlvu":
            r = mlvu.mlvu_process_results(doc, [text])["mlvu_percetion_score"]
            pred, score = r["pred_answer"], float(r["pred_answer"] == r["answer"])
        elif bench == "mmvu":
            r = mmvu.mmvu_process_results(doc, [text])["accuracy"]
            pred, score = r["pred_answer"], float(r["correct"])
        else:
            r = ch.temporal_grounding_process_results_generation(doc, [text])["charades_sta_mIOU"]
            found = ch.extract_time(text)
            pred = found[0] if len(found) == 1 else None
            score = ch.iou(ch._parse_ground_truth(doc["timestamp"]), pred) if pred else 0.0
        per_bench.setdefault(bench, []).append(r)
        out.append(
            {
                "id": rec["id"],
                "bench": bench,
                "stripped": text,
                "pred": pred,
                "score": score,
                "random": pred == RANDOM,
            }
        )
    aggs = {
        "videomme": lambda rs: vmme.videomme_aggregate_results(rs),
        "mlvu": lambda rs: mlvu.mlvu_aggregate_results_dev(rs),
        "mmvu": lambda rs: mmvu.mmvu_aggregate_results_val(rs),
        "charades_sta": lambda rs: ch._temporal_grounding_compute_metrics(rs),
    }
    for bench, fn in aggs.items():
        out.append({"aggregate": bench, "value": fn(per_bench[bench])})
    return out


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from lmms_corpus import corpus

    recs = corpus()
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    with FIXTURE.open("w", encoding="utf-8") as f:
        for rec, line in zip(recs + [None] * 4, lmms_outputs(recs), strict=True):
            f.write(
                json.dumps(line if rec is None else {**line, "record": rec}, ensure_ascii=False)
                + "\n"
            )
    print(f"wrote {FIXTURE} ({len(recs)} responses)")


if __name__ == "__main__":
    main()
