"""Every bad input of issue 28 item 9, through the REAL command line in a subprocess
(``python -m paravt``): exit status non-zero, no traceback, ONE error line on stderr that names
the offending value. No case loads a model (inputs are refused before one would load)."""

from __future__ import annotations

import errno
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

CLI = [sys.executable, "-m", "paravt"]

#: A 256-byte YAML of nested aliases ("billion laughs"): 9^7 ≈ 4.8 million strings when expanded.
ALIAS_BOMB = "".join(
    [
        'a: &a ["x","x","x","x","x","x","x","x","x"]\n',
        *(
            f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n"
            for p, n in zip("abcdef", "bcdefg", strict=True)
        ),
    ]
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bad-inputs")
    (d / "bad_utf8.yaml").write_bytes(b"rl:\n  steps: \xff\xfe\n")
    (d / "bomb.yaml").write_text(ALIAS_BOMB)
    (d / "twice.yaml").write_text("rl:\n  steps: 3\nsft:\n  lr: 0.1\nrl:\n  lr: 0.5\n")
    (d / "afile").write_text("not a directory, not a video, not parquet\n")
    pq.write_table(pa.table({"id": ["a"]}), d / "ok.parquet")
    (d / "ok.yaml").write_text(f"data: {d / 'ok.parquet'}\nout_dir: {d / 'run'}\n")
    (d / "missing_data.yaml").write_text(f"data: {d / 'nope.parquet'}\nout_dir: {d / 'run'}\n")
    (d / "not_parquet.yaml").write_text(f"data: {d / 'afile'}\nout_dir: {d / 'run'}\n")
    (d / "no_model.yaml").write_text(
        f"data: {d / 'ok.parquet'}\nout_dir: {d / 'run'}\nmodel:\n  path: {d / 'no-model'}\n"
    )
    _wrong_kind_inputs(d)
    return {p.name: p for p in d.iterdir()} | {"dir": d}


def _wrong_kind_inputs(d: Path) -> None:
    """A prompts-only and a traces-only parquet, and configs that train each with the wrong kind.
    The model directory is empty: had a model started loading before the data check, the error
    would be that, not the data's."""
    from paravt.data.rows import ExtraInfo, Message, RLRow, SFTRow
    from paravt.data.schema import write_rows

    extra = ExtraInfo(
        id="v1-mcq",
        task="mcq",
        question="Which?",
        answer="B",
        duration=8.0,
        options=("A. x", "B. y"),
    )
    user = Message("user", "Which?")
    write_rows(d / "prompts_only.parquet", [RLRow("v1-mcq", (user,), (), extra)])
    write_rows(
        d / "traces_only.parquet",
        [
            SFTRow(
                "v1-mcq",
                "main",
                "parallel",
                (user, Message("assistant", "<answer>B</answer>")),
                (),
                extra,
            )
        ],
    )
    (d / "empty-model").mkdir()
    for name, data in (
        ("sft_on_prompts", "prompts_only"),
        ("rl_on_traces", "traces_only"),
        ("prior_on_traces", "traces_only"),
    ):
        (d / f"{name}.yaml").write_text(
            f"data: {d / data}.parquet\nout_dir: {d / name}\nmodel:\n  path: {d / 'empty-model'}\n"
        )


EVAL = ["eval", "--model", "{dir}/no-model", "--data", "{ok}"]

# (argv, text the error line must contain: the offending value)
CASES = {
    "config not UTF-8": (["train", "sft", "--config", "{bad_utf8}"], "0xff"),
    "--set value not YAML": (["train", "rl", "--config", "{ok}", "--set", "rl.steps=[1"], "'[1'"),
    "--set without =": (["train", "sft", "--config", "{ok}", "--set", "rl.steps"], "rl.steps"),
    "train: data file missing": (["train", "sft", "--config", "{missing_data}"], "nope.parquet"),
    "train: data not parquet": (["train", "sft", "--config", "{not_parquet}"], "afile"),
    "train: model directory missing": (["train", "rl", "--config", "{no_model}"], "no-model"),
    "train sft: data holds prompts only": (
        ["train", "sft", "--config", "{sft_on_prompts}"],
        "prompts_only.parquet",
    ),
    "train rl: data holds traces only": (
        ["train", "rl", "--config", "{rl_on_traces}"],
        "traces_only.parquet",
    ),
    "train prior: data holds traces only": (
        ["train", "prior", "--config", "{prior_on_traces}"],
        "traces_only.parquet",
    ),
    "data check: not parquet": (["data", "check", "{afile}"], "afile"),
    "eval --max-new-tokens -1": ([*EVAL, "--max-new-tokens", "-1"], "-1"),
    "eval --workers 0": ([*EVAL, "--workers", "0"], "--workers"),
    "eval --limit -1": ([*EVAL, "--limit", "-1"], "-1"),
    "eval --nframes above the cap": ([*EVAL, "--nframes", "1000"], "1000"),
    "eval --mode unknown": ([*EVAL, "--mode", "fast"], "'fast'"),
    "eval --mode eva without frame_select": ([*EVAL, "--mode", "eva"], "frame_select"),
    "eval --set out of range": ([*EVAL, "--set", "eval.workers=0"], "eval.workers"),
    "eval --out is a file": ([*EVAL, "--out", "{afile}"], "afile"),
    "eval: model directory missing": (EVAL, "no-model"),
    "data synth --out under a file": (["data", "synth", "--out", "{afile}/synth"], "afile"),
    "serve-tools --port 99999": (["serve-tools", "--port", "99999"], "99999"),
    "infer --video not a video": (
        ["infer", "--model", "{dir}/no-model", "--video", "{afile}", "--question", "q"],
        "afile",
    ),
    "distill --teacher not a URL": (
        [
            "data",
            "distill",
            "--data",
            "{ok}",
            "--out",
            "{dir}/d",
            "--teacher",
            "not a url",
            "--teacher-model",
            "m",
        ],
        "not a url",
    ),
    "distill --limit -1": (
        [
            "data",
            "distill",
            "--data",
            "{ok}",
            "--out",
            "{dir}/d",
            "--teacher",
            "http://127.0.0.1:9",
            "--teacher-model",
            "m",
            "--limit",
            "-1",
        ],
        "-1",
    ),
    "config: nested aliases": (["config", "check", "{bomb}"], "aliases"),
    "repro --set replicas on a GPU": (
        [
            "repro",
            "--preset",
            "micro",
            "--out",
            "{dir}/repro",
            "--set",
            "model.device=cuda",
            "--set",
            "model.replicas=2",
        ],
        "model.replicas=1",
    ),
    "demo --set replicas on a GPU": (
        [
            "demo",
            "--quick",
            "--out",
            "{dir}/demo",
            "--set",
            "model.device=cuda",
            "--set",
            "model.replicas=2",
        ],
        "model.replicas=1",
    ),
    "repro --set unknown key": (
        ["repro", "--preset", "micro", "--out", "{dir}/repro", "--set", "rl.no_such=1"],
        "no_such",
    ),
    # issue 34 item 1: values that cannot run are refused by name before any work
    "train rl --set rl.lr=inf": (
        ["train", "rl", "--config", "{ok}", "--set", "rl.lr=inf"],
        "rl.lr",
    ),
    "eval --set sampling.temperature=inf": (
        [*EVAL, "--set", "sampling.temperature=inf"],
        "sampling.temperature",
    ),
    "distill --set request_timeout_s=inf": (
        [
            "data",
            "distill",
            "--data",
            "{ok}",
            "--out",
            "{dir}/d",
            "--teacher",
            "http://127.0.0.1:9",
            "--teacher-model",
            "m",
            "--set",
            "request_timeout_s=inf",
        ],
        "request_timeout_s",
    ),
    "train rl --set reward.alpha=nan": (
        ["train", "rl", "--config", "{ok}", "--set", "reward.alpha=nan"],
        "reward.alpha: Input should be a finite number",
    ),
    "train rl --set rl.group_size=1e9": (
        ["train", "rl", "--config", "{ok}", "--set", "rl.group_size=1000000000"],
        "rl.group_size=1000000000",
    ),
    "repro --set rl.prompts_per_step=1e8": (
        [
            "repro",
            "--preset",
            "micro",
            "--out",
            "{dir}/repro",
            "--set",
            "rl.prompts_per_step=100000000",
        ],
        "rl.prompts_per_step=100000000",
    ),
    "config check: a key written twice": (
        ["config", "check", "{twice}"],
        "'rl' is written twice (lines 1 and 5)",
    ),
}


def _run(argv: list[str], inputs: dict[str, Path]) -> subprocess.CompletedProcess[str]:
    names = {k.split(".")[0]: str(v) for k, v in inputs.items() if k != "ok.parquet"}
    names["ok"] = str(inputs["ok.yaml" if argv[0] == "train" else "ok.parquet"])
    args = [a.format(**names) for a in argv]
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=120, cwd=inputs["dir"]
    )


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_input_is_one_line_on_stderr_naming_it(case: str, inputs: dict[str, Path]) -> None:
    argv, named = CASES[case]
    proc = _run(argv, inputs)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    lines = [
        ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("settings: ")
    ]
    assert len(lines) == 1, proc.stderr
    assert named in lines[0], lines[0]
    assert proc.stdout == ""


def test_nested_aliases_are_refused_fast_with_a_short_message(inputs: dict[str, Path]) -> None:
    """Before: a 60 MB message after 10 s. The refusal is one short line (the time bound is loose:
    it includes the interpreter's start on a busy machine)."""
    start = time.monotonic()
    proc = _run(["config", "check", "{bomb}"], inputs)
    assert proc.returncode == 2 and len(proc.stderr) < 300, proc.stderr[:500]
    assert time.monotonic() - start < 60


def test_a_bug_in_paravt_is_said_as_such_with_its_traceback(tmp_path: Path) -> None:
    """Anything outside the user-error family is reported as a bug, with the traceback (exit 1)."""
    code = (
        "import typer\nfrom paravt.cli import app\n@app.command('boom')\ndef boom() -> None:\n"
        "    raise KeyError('unexpected')\napp()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "boom"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1
    assert (
        "internal error in paravt: please report it" in proc.stderr and "Traceback" in proc.stderr
    )
    assert "KeyError: 'unexpected'" in proc.stderr


#: OSErrors raised by a command: (the error, exit status). A path, or a user's resource (a full
#: disk, a port in use), is the user's to fix (2); paravt's own networking failing is a bug (1).
OS_ERRORS = {
    "missing file, named": (
        FileNotFoundError(errno.ENOENT, "No such file or directory", "/data/x.parquet"),
        2,
    ),
    "permission, named": (PermissionError(errno.EACCES, "Permission denied", "/out"), 2),
    "any errno with a path": (OSError(errno.EIO, "Input/output error", "/data/x.parquet"), 2),
    "disk full, no path": (OSError(errno.ENOSPC, "No space left on device"), 2),
    "port in use": (OSError(errno.EADDRINUSE, "Address already in use"), 2),
    "timeout": (TimeoutError("timed out"), 1),
    "connection refused": (ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"), 1),
    "broken pipe": (BrokenPipeError(errno.EPIPE, "Broken pipe"), 1),
}


@pytest.mark.parametrize("case", list(OS_ERRORS))
def test_an_os_error_is_a_user_error_only_when_it_names_a_path_or_a_users_resource(
    case: str,
) -> None:
    import typer
    from typer.testing import CliRunner

    from paravt.cli.root import RootGroup

    err, status = OS_ERRORS[case]
    app = typer.Typer(cls=RootGroup)

    @app.command("fail")
    def fail() -> None:
        raise err

    @app.command("other")
    def other() -> None:  # two commands: a group, as the paravt app is
        pass

    res = CliRunner().invoke(app, ["fail"])
    assert res.exit_code == status, (case, res.stderr)
    if status == 2:
        assert "cannot use" in res.stderr and "Traceback" not in res.stderr
    else:
        assert "internal error in paravt" in res.stderr and type(err).__name__ in res.stderr
