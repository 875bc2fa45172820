"""Our rl.parquet → verl's RLHF parquet, and a verl row back to an ``EpisodeInput``.

verl's ``RLHFDataset`` reads ``prompt`` (chat messages), ``data_source``, ``reward_model``
(``ground_truth``), ``extra_info`` and ``agent_name``; each row reaches the agent loop as keyword
arguments. The video is NOT put in a ``videos`` column (verl's dataset would decode it with
qwen-vl-utils, which fails here and samples differently): the Episode decodes it itself at the
gated n, so the absolute path travels in ``extra_info``. ``prompt`` holds the question only; it
is what verl logs and measures, not what the policy sees (the Episode renders its own prompt).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from paravt.errors import DataError

DATA_SOURCE = "paravt"


def verl_record(
    row: Any, data_root: str | Path, index: int, agent_name: str, think_prefix: bool = True
) -> dict[str, Any]:
    """One verl record of an ``RLRow`` (``paravt.data.schema``). ``think_prefix`` is the run's
    ``rollout.think_prefix``: the reward entry prepends the forced prefix only when it is on."""
    e = row.extra_info
    if not row.videos:
        raise DataError(f"row {row.id} has no video; RL rows need one (column `videos`)")
    video = Path(row.videos[0])
    video = video if video.is_absolute() else (Path(data_root) / video).resolve()
    extra = {
        "index": index,
        "id": e.id or row.id,
        "video": str(video),
        "question": e.question,
        "task": e.task,
        "answer": e.answer,
        "options": list(e.options) if e.options else None,
        "nframes": e.nframes,
        "subset": e.subset,
        "duration": e.duration,
        "tool_necessary_at_n": (
            {str(k): v for k, v in e.tool_necessary_at_n.items()}
            if e.tool_necessary_at_n is not None
            else None
        ),
        "think_prefix": think_prefix,
    }
    return {
        "data_source": DATA_SOURCE,
        "prompt": [{"role": "user", "content": e.question}],
        "reward_model": {"style": "rule", "ground_truth": e.answer},
        "extra_info": extra,
        "agent_name": agent_name,
    }


def write_verl_parquet(
    src: str | Path,
    out: str | Path,
    *,
    agent_name: str,
    data_root: str | Path | None = None,
    think_prefix: bool = True,
    max_row_bytes: int | None = None,
) -> int:
    """Convert ``src``'s usable prompt rows (``kind == "rl"``, screened by `paravt.data.screen`:
    error rows are left out, each cause warned once) to verl's layout; returns the row count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from paravt.agent.inputs import MAX_ROW_BYTES
    from paravt.data.screen import screen_rows

    root = Path(data_root) if data_root is not None else Path(src).resolve().parent
    cap = max_row_bytes or MAX_ROW_BYTES
    rows = list(screen_rows(src, root, kinds=("rl",), max_row_bytes=cap).rows)
    records = [verl_record(r, root, i, agent_name, think_prefix) for i, r in enumerate(rows)]
    for rec in records:  # parquet needs one type per column: keep extra_info as JSON-safe values
        rec["extra_info"] = json.loads(json.dumps(rec["extra_info"]))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(records), str(out))
    return len(records)
