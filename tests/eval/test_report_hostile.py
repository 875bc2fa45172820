"""The report under hostile run files (issue 34 item 8): every field of results.jsonl,
rollouts.jsonl, train_log.jsonl, run.json, metrics.json and summary.json, in turn, holds markup that
would run a
script if pasted into the page, or a value of the wrong type. `paravt report` must exit 0, show
each bad row as malformed, and the page must hold no tag, attribute or script of the payload
(checked by parsing it, and in headless Chromium, where installed, by running it)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import fakeruns  # noqa: E402
from test_paper_vs_ours import iv, share, variant  # noqa: E402

from paravt.eval.results import read_results  # noqa: E402
from paravt.report.page import render_html  # noqa: E402
from paravt.report.repro_checks import TASK_CHECKS  # noqa: E402
from paravt.report.run_files import discover  # noqa: E402

PWNED = "pwned"  # what each payload would write into document.title
PAYLOADS = (
    f"<script>document.title='{PWNED}-script'</script>",
    f"<img src=x onerror=\"document.title='{PWNED}-img'\">",
    f"<svg onload=\"document.title='{PWNED}-svg'\"></svg>",
    f"\"><script>document.title='{PWNED}-attr'</script>",
    f"'><body onload=\"document.title='{PWNED}-body'\">",
)
HOSTILE = "".join(PAYLOADS)
DIR_NAME = "<svg onload=alert(1)>"  # a directory name is a value the page shows too

#: The page's own markup: any other tag, or any on* attribute, came from a payload.
TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "h1",
    "h2",
    "h3",
    "p",
    "section",
    "table",
    "tr",
    "th",
    "td",
    "ul",
    "li",
    "div",
    "span",
    "b",
    "img",
    "details",
    "summary",
    "mark",
    "br",
    "sub",
}
ATTRS = {"id", "class", "alt", "src", "lang", "charset", "colspan", "rowspan", "open"}


def mutations(obj: Any, path: tuple = ()) -> Iterator[tuple[str, Any]]:
    """(where, a copy of ``obj`` with ONE leaf — or one key — replaced by the payload), for every
    leaf and key of ``obj``."""
    if isinstance(obj, dict) and obj:
        for k, v in obj.items():
            renamed = {(HOSTILE if key == k else key): val for key, val in obj.items()}
            yield "/".join(map(str, (*path, k))) + " (key)", renamed
            for where, sub in mutations(v, (*path, k)):
                yield where, {**obj, k: sub}
    elif isinstance(obj, list) and obj:
        for i, v in enumerate(obj):
            for where, sub in mutations(v, (*path, i)):
                yield where, [*obj[:i], sub, *obj[i + 1 :]]
    else:
        yield "/".join(map(str, path)), HOSTILE


def every_leaf(obj: Any, pick: Any = lambda i: True, counter: list[int] | None = None) -> Any:
    """A copy of ``obj`` with the leaves ``pick(leaf number)`` chooses replaced by the payload (a
    whole summary.json in one file: its sections draw figures, too slow to render once per leaf)."""
    counter = [0] if counter is None else counter
    if isinstance(obj, dict):
        return {k: every_leaf(v, pick, counter) for k, v in obj.items()}
    if isinstance(obj, list):
        return [every_leaf(v, pick, counter) for v in obj]
    counter[0] += 1
    return HOSTILE if pick(counter[0]) else obj


def every_key(obj: Any) -> Any:
    """A copy of ``obj`` whose every key holds the payload too (keys are values the page shows)."""
    if isinstance(obj, dict):
        return {
            f"{HOSTILE}{i}" if i % 2 else k: every_key(v) for i, (k, v) in enumerate(obj.items())
        }
    return [every_key(v) for v in obj] if isinstance(obj, list) else obj


def rollout_row(step: int = 1) -> dict[str, Any]:
    """A row as `paravt.rl.rollouts.sample_rows` writes it."""
    return {
        "step": step,
        "picked": "random",
        "episode_id": "e1",
        "group": "g1",
        "prompt_id": "p1",
        "nframes": 8,
        "question": "What flashes?",
        "gold": "B",
        "completion": "<think>\nred\n</think>\n<answer>B</answer>",
        "truncated_chars": 0,
        "tags": {
            "closed_think": True,
            "closed_tool_call": True,
            "closed_answer": True,
            "tool_code": False,
            "n_calls": 2,
            "degenerate": False,
        },
        "answer": "B",
        "reward": 1.1,
        "terms": {"acc": 1.0, "format": 0.3},
        "format": 0.3,
        "advantage": 0.5,
        "end_reason": "answer",
        "calls": [
            {
                "turn": 0,
                "name": "crop_video",
                "window": [1.0, 4.0],
                "ok": True,
                "error": None,
                "summary": "a red flash",
            }
        ],
    }


def metrics() -> dict[str, Any]:
    """A metrics.json as `paravt eval` writes it (the report's fallback without results.jsonl), with
    the ``benchmark`` section Table 1 reads."""
    summary = {
        "n": 12,
        "mcq_acc": 0.5,
        "tvg_miou": 0.4,
        "tvg_r@0.5": 0.3,
        "oe_f1": 0.6,
        "mean_calls": 2.0,
        "tokens": {"total_input": 900.0},
        "latency_s": 1.5,
        "format_reward": 0.8,
    }
    mode = {
        "summary": summary,
        "by_tool_necessary": {"necessary": {"score": 0.4}, "unnecessary": {"score": 0.7}},
        "by_nframes": {"4": {"n": 6, "score": 0.3}, "64": {"n": 6, "score": 0.7}},
        "tool_necessity_gap": 0.3,
    }
    bench = {
        "name": "videomme",
        "protocol": {"prompt_class": "paravt"},
        "by_mode": {"parallel": {"headline": 55.5, "scoring": "lmms", "lmms": {"n": 30}}},
    }
    return {"summary": summary, "by_mode": {"parallel": mode}, "benchmark": bench}


def summary() -> dict[str, Any]:
    """A compact `paravt repro` summary.json: one variant of each kind the tables read."""
    return {
        "variants": {
            "paragrpo": variant(
                iv(0.4, 0.3, 0.5), iv(0.8), 0.45, ("parallel", "sequential"), 0.3, 0.6
            )
        },
        "sft_emits_think_without_prefix": 0.6,
        "claims": [
            {
                "claim": "lifts f_tau",
                "paper": {"paragrpo.f_tau": 0.41},
                "ours": {"x": iv(0.1, 0.0, 0.2)},
                "holds": True,
                "note": "2 seeds",
            }
        ],
        "task_check": {
            **{
                k: {"value": share(3, 4), "want": "≥ 0.5", "holds": True}
                for k, _ in TASK_CHECKS[:2]
            },
            "reference": "runs/ref",
        },
        "meta": {
            "preset": "micro",
            "seeds": 2,
            "eval_questions": 8,
            "wall_s": 12.5,
            "stage_s": {"synth": 1.5},
        },
    }


def write_hostile_runs(root: Path) -> Path:
    """Run directories whose every field is, in some row or file, the payload."""
    video = str(root / "missing.mp4")
    base = fakeruns.result_row(
        1, "parallel", video=video, rng=__import__("random").Random(0)
    ).to_dict()
    base["calls"], base["transcript"], base["options"] = (
        base["calls"][:1],
        base["transcript"][:1],
        ["A", "B"],
    )
    ev = root / DIR_NAME / "eval"
    ev.mkdir(parents=True)
    rows = [base, *(m for _, m in mutations(base))]
    (ev / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rl = root / DIR_NAME / "rl"
    rl.mkdir(parents=True)
    (rl / "run.json").write_text(json.dumps({"name": HOSTILE, "kind": "rl"}))
    rollouts = [
        rollout_row(),
        {**rollout_row(2), "reward": "x"},
        *(m for _, m in mutations(rollout_row())),
    ]
    (rl / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rollouts))
    log = [
        {"step": s, "train/loss": 1.0 / s, "f_tau": 0.1 * s, "acc/n/4": 0.5} for s in range(1, 5)
    ]
    log += [
        m
        for _, m in mutations(
            {"step": 5, "train/loss": 0.2, "f_tau": 0.5, "kappa": 1.0, "acc/n/4": 0.5}
        )
    ]
    (rl / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    (root / "kinds").mkdir()
    (root / "kinds" / "run.json").write_text(json.dumps({"name": "k", "kind": HOSTILE}))
    (root / "broken").mkdir()
    (root / "broken" / "run.json").write_text(HOSTILE)  # not JSON
    for i, (_, m) in enumerate(mutations(metrics())):
        (root / "metrics" / f"m{i}" / "paravt").mkdir(parents=True)
        (root / "metrics" / f"m{i}" / "paravt" / "metrics.json").write_text(json.dumps(m))
    summaries = [
        summary(),
        every_leaf(summary()),
        every_key(summary()),
        every_leaf(summary(), lambda i: i % 2),
        every_leaf(summary(), lambda i: not i % 2),
        every_leaf(summary(), lambda i: i % 3 == 0),
    ]
    for i, s in enumerate(summaries):
        d = root / "repro" / f"r{i}"
        (d / "synth").mkdir(parents=True)
        (d / "synth" / ".repro-stage-done").write_text("1\n")
        (d / "summary.json").write_text(json.dumps(s))
    seed = root / "repro" / "r0" / DIR_NAME / "seed0"
    seed.mkdir(parents=True)
    (seed / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    return root


class _Markup(HTMLParser):
    """Every tag and attribute of the page, and whether a payload's text survived as markup."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attrs: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.add(tag)
        self.attrs.update(name for name, _ in attrs)


@pytest.fixture(scope="module")
def hostile(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, Path, subprocess.CompletedProcess]:
    root = write_hostile_runs(tmp_path_factory.mktemp("hostile"))
    out = root.parent / "report.html"
    res = subprocess.run(
        [str(Path(sys.executable).with_name("paravt")), "report", str(root), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return root, out, res


def test_a_report_of_hostile_files_is_written_with_every_payload_escaped(hostile) -> None:
    root, out, res = hostile
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-2000:]
    page = out.read_text(encoding="utf-8")
    markup = _Markup()
    markup.feed(page)
    assert markup.tags <= TAGS, markup.tags - TAGS
    assert markup.attrs <= ATTRS, markup.attrs - ATTRS
    low = page.lower()
    assert (
        "<script" not in low
        and "<svg" not in low
        and "<img src=x" not in low
        and "<body onload" not in low
    )
    assert page.count("&lt;script&gt;document.title=") > 100  # the payloads are there, as text
    assert "&lt;svg onload=alert(1)&gt;" in page  # the directory name too


def test_malformed_rows_are_shown_as_malformed_and_the_good_ones_rendered(hostile) -> None:
    root, out, _ = hostile
    page = out.read_text(encoding="utf-8")
    read = read_results(root / DIR_NAME / "eval" / "results.jsonl")
    assert (
        read.malformed and read.rows
    )  # string fields hold the payload as text; typed fields break the row
    assert any("score" in m for m in read.malformed) and any("nframes" in m for m in read.malformed)
    assert "malformed" in page and 'id="malformed-rows"' in page
    rollouts = page[page.index('id="rollouts"') : page.index('id="transcripts"')]
    assert (
        "malformed row(s) not shown" in rollouts
        and "reward is &#x27;x&#x27;, not a number" in rollouts
    )
    assert "R=+1.10" in rollouts  # the well-formed rows are still there
    assert (
        page.count("malformed number") > 5
    )  # metrics.json / summary values of the wrong type, per cell


def test_every_transcript_of_the_hostile_rows_renders_escaped(hostile) -> None:
    """All rows, not only the report's few picks: each string field of a result row on the page."""
    root, _, _ = hostile
    page = render_html(discover([root / DIR_NAME]), n_transcripts=10_000)
    markup = _Markup()
    markup.feed(page)
    assert markup.tags <= TAGS and markup.attrs <= ATTRS
    assert page.count('class="card transcript"') == len(
        read_results(root / DIR_NAME / "eval" / "results.jsonl").rows
    )


def _chromium() -> str | None:
    return next(
        (p for n in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(n))),
        None,
    )


@pytest.mark.skipif(
    _chromium() is None, reason="headless Chromium is not installed (apt-get install chromium)"
)
def test_no_payload_runs_in_headless_chromium(hostile, tmp_path: Path) -> None:
    """The page is loaded and run: a payload that ran would have rewritten document.title. A canary
    page with the same payload unescaped shows that the check can fail."""
    _, out, _ = hostile
    canary = tmp_path / "canary.html"
    canary.write_text(
        f"<!DOCTYPE html><html><head><title>canary</title></head><body>{PAYLOADS[0]}</body></html>"
    )

    def title(page: Path) -> str:
        dom = subprocess.run(
            [
                str(_chromium()),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--virtual-time-budget=3000",
                "--dump-dom",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=180,
        ).stdout
        return (
            dom[dom.index("<title>") + 7 : dom.index("</title>")] if "<title>" in dom else dom[:200]
        )

    assert title(canary) == f"{PWNED}-script"
    assert title(out) == "paravt report"
