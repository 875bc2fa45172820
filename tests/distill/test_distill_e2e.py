"""`paravt data distill` end to end against two REAL local teacher servers (scripted, FastAPI +
uvicorn on 127.0.0.1): synth videos → distill (paravt pipeline, the primary refusing some
questions, noisy calls, a 429 to back off from) → `paravt data check` passes → `paravt train sft`
trains on the output. Then the EVA pipeline (reflector rules fire, the bank feeds later rows)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from scripted_teacher import RunningServer, Script, State, key, make_app, scripts_for, unique_rows
from typer.testing import CliRunner

from paravt.cli import app as cli
from paravt.data.rows import SFTRow
from paravt.data.schema import read_rows, write_rows
from paravt.protocol import tags as T

runner = CliRunner()
# row index → (behaviour, expected reject reason)
SPECIAL = {
    8: ("bad_window", "window_outside"),
    9: ("start_ge_end", "start_ge_end"),
    10: ("empty", "empty_answer"),
    11: ("wrong", "incorrect"),
}
REFUSED = (7, 12)


def _scripts(rows: list) -> dict:
    return scripts_for(rows, {i: behaviour for i, (behaviour, _) in SPECIAL.items()})


def _distill(args: list[str], exit_code: int = 0) -> dict:
    """The JSON report of one run (exit 2 when it accepted nothing: issue 48 item 6)."""
    res = runner.invoke(cli, ["data", "distill", "--json", *args])
    assert res.exit_code == exit_code, res.output
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_paravt_pipeline_end_to_end_into_check_and_sft(
    synth: Path, tmp_path: Path, tiny_qwen3_dir: str
) -> None:
    rows = unique_rows(synth)
    n = len(rows)
    assert n >= 13
    write_rows(tmp_path / "qa.parquet", rows)
    scripts = _scripts(rows)
    refuse = {key(rows[i].extra_info.duration, rows[i].extra_info.question) for i in REFUSED}
    primary, fallback = State(scripts, refuse=refuse, fail_first=2), State(scripts)
    out = tmp_path / "distilled"
    with (
        RunningServer(make_app(primary)) as p,
        RunningServer(make_app(fallback, role="fallback")) as f,
    ):
        args = [
            "--data",
            str(tmp_path / "qa.parquet"),
            "--root",
            str(synth),
            "--teacher",
            p.url,
            "--teacher-model",
            "scripted",
            "--fallback",
            f.url + "/v1",
            "--fallback-model",
            "scripted-2",
            "--workers",
            "3",
            "--out",
            str(out),
            "--set",
            "backoff_s=0.05",
        ]
        report = _distill(args)
        n_requests = primary.requests + fallback.requests
        again = _distill(args)  # resumable: every finished id is skipped, nothing is asked again
        assert primary.requests + fallback.requests == n_requests
    assert again["skipped_finished"] == n and again["accepted"] == report["accepted"]

    assert report["requested"] == n and report["finished"] == n
    assert report["rejected"] == {reason: 1 for _, reason in SPECIAL.values()}
    assert report["accepted"] == n - len(SPECIAL)
    assert report["fallback_used"] == len(REFUSED) and report["refusals"] == {
        "primary": 2,
        "fallback": 0,
    }
    assert report["retries"] == 2  # the two 429s were backed off and retried
    for change in (
        "python_call",
        "single_quotes",
        "trailing_comma",
        "tool_code",
        "untagged_call",
        "llm_cleanup",
        "prose",
        "prose_think",
    ):
        assert report["repairs"].get(change, 0) >= 1, (change, report["repairs"])
    assert primary.cleanups >= 1 and fallback.summaries == 2 * len(REFUSED)
    assert report["tokens"]["total"] > 0 and report["merges"] == report["accepted"]
    # frames go back to the teacher: a request after a crop carries the crop's frames too
    assert max(primary.images) > max(r.extra_info.nframes for r in rows)

    written = read_rows(out / "sft.parquet")
    mains = [r for r in written if isinstance(r, SFTRow) and r.kind == "main"]
    assert len(mains) == report["accepted"] and {r.mode for r in mains} == {"parallel"}
    for r in mains:  # one parallel turn with both windows, summaries in place of frames
        turns = [m for m in r.messages if m.role == "assistant"]
        assert len(turns) == 2 and turns[0].text.count(T.TOOL_CALL_OPEN) == 2
        assert "<video>" not in r.messages[3].text and r.messages[3].text.count("\n") == 1
    assert len(written) - len(mains) == 2 * len(mains)  # one sub-agent row per window
    res = runner.invoke(
        cli, ["data", "check", str(out / "sft.parquet"), "--root", str(synth)]
    )  # videos probed
    assert res.exit_code == 0, res.output

    cfg = {
        "out_dir": str(tmp_path / "sft"),
        "data": str(out / "sft.parquet"),
        "data_root": str(synth),
        "model": {"path": tiny_qwen3_dir},
        "video": {
            "overview_nframes": 4,
            "overview_max_pixels": 64 * 64,
            "crop_max_pixels": 64 * 64,
            "crop_max_frames": 4,
        },
        "sft": {"lr": 3e-3, "batch_size": 2, "warmup_steps": 0, "max_steps": 3, "save_every": 100},
    }
    (tmp_path / "sft.yaml").write_text(yaml.safe_dump(cfg))
    res = runner.invoke(cli, ["train", "sft", "--config", str(tmp_path / "sft.yaml")])
    assert res.exit_code == 0, res.output
    log = [json.loads(x) for x in (tmp_path / "sft" / "train_log.jsonl").read_text().splitlines()]
    assert len([x for x in log if "train/loss" in x]) == 3 and all(
        x["train/loss"] > 0 for x in log if "train/loss" in x
    )


def test_eva_pipeline_reflects_calls_and_fills_the_bank(synth: Path, tmp_path: Path) -> None:
    rows = unique_rows(synth)[:4]
    state = State({k: Script(s.answer, s.needle, s.duration) for k, s in _scripts(rows).items()})
    out = tmp_path / "eva"
    write_rows(tmp_path / "qa.parquet", rows)
    with RunningServer(make_app(state)) as p:
        report = _distill(
            [
                "--data",
                str(tmp_path / "qa.parquet"),
                "--root",
                str(synth),
                "--pipeline",
                "eva",
                "--teacher",
                p.url,
                "--teacher-model",
                "scripted",
                "--workers",
                "1",
                "--out",
                str(out),
                "--set",
                "max_turns=4",
            ]
        )
    assert report["accepted"] == 4 and report["rejected"] == {}
    # per row: the cheap scan (10 × 0.1) is raised, "found nothing" + a random segment becomes a
    # denser global rescan, the 30-frame zoom is capped at 1 fps (and its budget raised)
    assert report["reflector"]["low_budget"] == 8 and report["reflector"]["global_miss"] == 4
    assert report["reflector"]["fps_cap"] == 4
    assert state.bank_examples_seen >= 3  # rows after the first saw similar successful trajectories
    bank = (out / "experience_bank.jsonl").read_text().splitlines()
    assert len(bank) == 4
    written = read_rows(out / "sft.parquet")
    assert {(r.kind, r.mode, r.extra_info.source) for r in written} == {
        ("main", "sequential", "distill-eva")
    }
    assert (
        "plan what to look for" in written[0].messages[0].text
    )  # EVA's system prompt, without the examples
    for r in written:
        for m in r.messages:
            if m.role == "assistant" and T.TOOL_CALL_OPEN in m.text:
                args = json.loads(m.text.split(T.TOOL_CALL_OPEN)[1].split(T.TOOL_CALL_CLOSE)[0])[
                    "arguments"
                ]
                length = args["end_time"] - args["start_time"]
                assert args["nframes"] <= length and args["nframes"] * args["resize"] >= min(
                    15, length
                )
    res = runner.invoke(
        cli, ["data", "check", str(out / "sft.parquet"), "--root", str(synth)]
    )  # videos probed
    assert res.exit_code == 0, res.output
    assert pq.read_table(out / "sft.parquet").num_rows == 4


def test_eva_llm_reflector_corrects_after_the_rules(synth: Path, tmp_path: Path) -> None:
    rows = unique_rows(synth)[:1]
    scripts = {k: Script(s.answer, s.needle, s.duration) for k, s in _scripts(rows).items()}
    teacher, reflector = State(scripts), State(scripts)
    write_rows(tmp_path / "qa.parquet", rows)
    with RunningServer(make_app(teacher)) as p, RunningServer(make_app(reflector)) as r:
        report = _distill(
            [
                "--data",
                str(tmp_path / "qa.parquet"),
                "--root",
                str(synth),
                "--pipeline",
                "eva",
                "--teacher",
                p.url,
                "--teacher-model",
                "t",
                "--reflector",
                r.url,
                "--reflector-model",
                "r",
                "--out",
                str(tmp_path / "o"),
                "--set",
                "max_turns=4",
            ]
        )
    assert (
        reflector.reflections == 3 and report["reflector"]["llm"] == 1 and report["accepted"] == 1
    )
    (row,) = read_rows(tmp_path / "o" / "sft.parquet")
    zoom = json.loads(row.messages[6].text.split(T.TOOL_CALL_OPEN)[1].split(T.TOOL_CALL_CLOSE)[0])[
        "arguments"
    ]
    assert (
        zoom["end_time"] - zoom["start_time"] == 40
        and zoom["nframes"] == 20
        and zoom["resize"] == 1.0
    )


def test_rows_whose_teachers_fail_are_errors_and_are_retried_on_resume(
    synth: Path, tmp_path: Path
) -> None:
    rows = unique_rows(synth)[:2]
    scripts = {k: Script(s.answer, s.needle, s.duration) for k, s in _scripts(rows).items()}
    write_rows(tmp_path / "qa.parquet", rows)
    args = [
        "--data",
        str(tmp_path / "qa.parquet"),
        "--root",
        str(synth),
        "--teacher-model",
        "t",
        "--out",
        str(tmp_path / "o"),
        "--set",
        "max_retries=1",
        "--set",
        "backoff_s=0.01",
    ]
    down = State(scripts, fail_first=1000)
    with RunningServer(make_app(down)) as p:
        failed = _distill([*args, "--teacher", p.url], exit_code=2)
    assert not (tmp_path / "o" / "sft.parquet").exists()
    assert (
        failed["errored"] == 2
        and failed["accepted"] == 0
        and failed["teacher_errors"]["primary"] == 2
    )
    assert down.requests == 4  # one try + one retry per row
    with RunningServer(make_app(State(scripts))) as p:
        again = _distill([*args, "--teacher", p.url])
    assert again["skipped_finished"] == 0 and again["accepted"] == 2 and again["errored"] == 0
    assert again["teacher_errors"]["primary"] == 2  # the report keeps the failed attempts


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--fallback", "http://127.0.0.1:9"], "--fallback and --fallback-model go together"),
        (["--set", "workers=0"], "workers"),
        (["--api-key", "a", "--api-key-file", "k"], "not both"),
    ],
)
def test_bad_options_are_clear_errors_on_stderr(
    synth: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    res = CliRunner().invoke(
        cli,
        [
            "data",
            "distill",
            "--data",
            str(synth / "rl.parquet"),
            "--teacher",
            "http://127.0.0.1:9",
            "--teacher-model",
            "t",
            "--out",
            str(tmp_path),
            *extra,
        ],
    )
    assert res.exit_code == 2 and message in res.stderr and not (tmp_path / "sft.parquet").exists()
