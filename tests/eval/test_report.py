import base64
import io
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
import fakeruns  # noqa: E402

from paravt.errors import DataError  # noqa: E402
from paravt.eval.metrics import compute_metrics  # noqa: E402
from paravt.eval.results import load_results  # noqa: E402
from paravt.report.page import build_report  # noqa: E402
from paravt.report.run_files import discover  # noqa: E402


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.imgs: list[tuple[str, str]] = []  # (alt, src)
        self.cells: list[str] = []
        self.external: list[str] = []
        self._in_td = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "img":
            self.imgs.append((a.get("alt", ""), a["src"]))
        if tag in ("script", "link") or (tag == "img" and not a["src"].startswith("data:")):
            self.external.append(tag)
        self._in_td = tag == "td"

    def handle_data(self, data: str) -> None:
        if self._in_td:
            self.cells.append(data)

    def handle_endtag(self, tag: str) -> None:
        self._in_td = False


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fakeruns.write_demo(tmp_path_factory.mktemp("runs") / "demo", n=9)


def test_discover_finds_training_and_eval_runs_recursively(demo: Path) -> None:
    found = discover([demo])
    assert sorted(t.name for t in found.train) == ["rl-tiny", "sft-tiny"]
    assert sorted(e.name for e in found.evals) == ["demo/eval_base", "rl-tiny/eval"]
    assert all(len(e.rows) == 27 for e in found.evals)


def test_report_is_self_contained_with_sections_numbers_and_images(
    demo: Path, tmp_path: Path
) -> None:
    out = build_report([demo], tmp_path / "r" / "report.html")
    page = _parse(out)
    for section in ("runs", "training", "eval", "eval-table", "acc-by-n", "tokens", "transcripts"):
        assert section in page.ids
    assert page.external == []
    # the eval table holds the numbers compute_metrics gives for each run × mode
    met = compute_metrics(load_results(demo / "rl" / "eval" / "results.jsonl"))
    par = met["by_mode"]["parallel"]["summary"]
    assert f"{par['mcq_acc']:.3f}" in page.cells and f"{par['tvg_miou']:.3f}" in page.cells
    assert f"{par['tokens']['total_input']:,.0f}" in page.cells
    assert page.cells.count("sequential") == 2
    alts = [alt for alt, _ in page.imgs]
    assert {"RL training curves", "SFT training curves", "accuracy by n", "tokens vs K"} <= set(
        alts
    )
    assert sum(a.startswith("timeline of") for a in alts) == 4
    assert any(a.startswith("frames of window") for a in alts)  # real mp4 → contact sheets
    assert alts.count("overview frames") == 4
    for alt, src in page.imgs:
        assert src.startswith("data:image/png;base64,"), alt
        img = Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1])))
        img.load()
        assert img.format == "PNG" and img.size[0] > 50 and img.size[1] > 20, alt


def test_missing_video_drops_only_the_thumbnails(tmp_path: Path) -> None:
    root = fakeruns.write_demo(tmp_path / "demo", with_video=False, n=6)
    page = _parse(build_report([root / "rl"], tmp_path / "report.html"))
    alts = [alt for alt, _ in page.imgs]
    assert not any(a.startswith("frames of window") or a == "overview frames" for a in alts)
    assert sum(a.startswith("timeline of") for a in alts) == 4
    assert "no thumbnails: video unavailable" in (tmp_path / "report.html").read_text()


def test_directory_without_runs_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no run.json"):
        build_report([tmp_path], tmp_path / "report.html")


def test_cli_report_prints_the_path(demo: Path, tmp_path: Path) -> None:
    from paravt.cli import app

    out = tmp_path / "cli.html"
    res = CliRunner().invoke(
        app, ["report", str(demo / "sft"), str(demo / "eval_base"), "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert res.output.strip() == str(out)
    page = _parse(out)
    assert "training" in page.ids and "eval-table" in page.ids
    bad = CliRunner().invoke(app, ["report", str(tmp_path / "nope"), "--out", str(out)])
    assert bad.exit_code == 2


def test_runs_named_alike_are_told_apart_by_their_path(tmp_path: Path) -> None:
    """Every RL seed of `paravt repro` is named "seed0"/"seed1" in its run.json: the report names
    them by their path under the common root instead of numbering them."""
    import json as _json

    from paravt.report.run_files import discover

    for variant in ("paragrpo", "vanilla_grpo"):
        d = tmp_path / variant / "seed0"
        d.mkdir(parents=True)
        (d / "run.json").write_text(_json.dumps({"name": "seed0", "kind": "rl"}))
        (d / "train_log.jsonl").write_text('{"step": 1, "loss": 0.5}\n')
    names = sorted(t.name for t in discover([tmp_path]).train)
    assert names == ["paragrpo/seed0", "vanilla_grpo/seed0"]


def test_tool_necessity_gap_is_a_table_of_run_by_mode(demo: Path, tmp_path: Path) -> None:
    out = build_report([demo], tmp_path / "gap" / "report.html")
    text = out.read_text(encoding="utf-8")
    table = text.split('<table id="necessity-gap">', 1)[1].split("</table>", 1)[0]
    met = compute_metrics(load_results(demo / "rl" / "eval" / "results.jsonl"))
    gaps = {
        m: bd["tool_necessity_gap"]
        for m, bd in met["by_mode"].items()
        if bd["tool_necessity_gap"] is not None
    }
    assert gaps, "the fake runs must measure a gap"
    header = table.split("</tr>", 1)[0]
    assert [h for h in ("none", "parallel", "sequential") if f"<th>{h}</th>" in header] == sorted(
        gaps
    )
    row = next(r for r in table.split("<tr>") if r.startswith('<td class="l">rl-tiny/eval</td>'))
    for mode in sorted(gaps):
        assert f"<td>{gaps[mode]:.3f}</td>" in row
    assert "Tool Necessity Gap (score on" not in text  # no longer a run-on paragraph


def test_the_timeline_reads_intervals_as_the_scorer_does_mm_ss_included() -> None:
    """One ``parse_interval`` (``paravt.rewards.accuracy``): the report draws what the IoU
    scored."""
    from paravt.eval.results import ResultRow  # noqa: PLC0415
    from paravt.report.transcripts import timeline_figure  # noqa: PLC0415

    def spans(answer: str, prediction: str) -> list[str]:
        row = ResultRow(
            id="t",
            mode="parallel",
            task="tvg",
            subset="",
            nframes=4,
            video="",
            duration=200.0,
            question="",
            options=None,
            answer=answer,
            prediction=prediction,
            score=0.0,
            correct=False,
        )
        return [t.get_text() for t in timeline_figure(row).axes[0].texts]

    # 01:20 = 80 s, 02:30 = 150 s (a report-only reader of plain numbers paired 20 with 02: no span)
    assert spans("[01:20, 02:30]", "from 80 s to 100 s") == ["80.0–150.0s", "80.0–100.0s"]
    assert spans("[01:20, 02:30]", "150 - 80") == ["80.0–150.0s"]  # a reversed one: not drawn
