import io

import pytest
from PIL import Image

from paravt.errors import DataError
from paravt.eval.metrics import compute_metrics
from paravt.eval.results import ResultRow
from paravt.report import plots


def test_only_metrics_present_in_some_log_are_plotted() -> None:
    logs = {
        "a": [{"step": 0, "f_tau": 0.5, "actor/kl_loss": None}, {"step": 1, "f_tau": 0.7}],
        "b": [{"step": 0, "kappa": 2}],
    }
    assert plots.present_metrics(logs) == ["f_tau", "kappa"]
    fig = plots.training_curves_figure(logs)
    axes = fig.get_axes()
    assert [ax.get_title() for ax in axes] == ["f_tau", "kappa"]
    assert [len(line.get_xdata()) for line in axes[0].get_lines()] == [2]  # run a only


def test_training_curves_without_known_metrics_is_a_data_error() -> None:
    with pytest.raises(DataError, match="none of the metrics"):
        plots.training_curves_figure({"a": [{"step": 0, "foo": 1.0}]})


def _r(i: int, mode: str, n: int, score: float, nec: bool) -> ResultRow:
    return ResultRow(
        id=str(i),
        mode=mode,
        task="mcq",
        subset="",
        nframes=n,
        video="",
        duration=1.0,
        question="",
        options=None,
        answer="",
        prediction=None,
        score=score,
        correct=score > 0.5,
        n_calls=2 if mode == "parallel" else 0,
        tool_necessary=nec,
    )


def test_eval_table_and_accuracy_by_n_from_metrics() -> None:
    rows = [
        _r(1, "parallel", 4, 1, True),
        _r(2, "parallel", 64, 0, False),
        _r(3, "none", 4, 0, True),
    ]
    table = plots.eval_table({"run1": compute_metrics(rows)})
    assert [(t.run, t.mode, t.n) for t in table] == [("run1", "none", 1), ("run1", "parallel", 2)]
    par = table[1]
    assert (par.mcq_acc, par.acc_necessary, par.acc_unnecessary, par.calls) == (0.5, 1.0, 0.0, 2.0)
    assert par.tvg_miou is None
    assert plots.accuracy_by_n({"run1": compute_metrics(rows)}) == {
        "run1 · none": {4: 0.0},
        "run1 · parallel": {4: 1.0, 64: 0.0},
    }


def test_train_accuracy_by_n_averages_the_last_values() -> None:
    log = [{"acc/n/4": 0.0}, {"acc/n/4": 0.5, "acc/n/64": 1.0}, {"acc/n/4": 1.0}]
    assert plots.train_accuracy_by_n({"r": log}, last=2) == {"r · train": {4: 0.75, 64: 1.0}}


def test_accuracy_by_n_png_decodes() -> None:
    buf = io.BytesIO()
    plots.accuracy_by_n_png({"a": {4: 0.2, 16: 0.5}, "b": {16: 0.9}}, buf)
    assert Image.open(io.BytesIO(buf.getvalue())).size[0] >= 700


def test_accuracy_by_n_has_one_panel_per_mode_and_one_line_per_run() -> None:
    groups = {
        f"{run} · {mode}": {4: 0.1 * i, 16: 0.2, 64: 0.5}
        for i, run in enumerate(["sft", "vanilla", "paragrpo"])
        for mode in ["none", "parallel", "sequential"]
    }
    groups["paragrpo · parallel"] = {
        4: 0.9
    }  # a run measured at one n only is still a line (a point)
    fig = plots.accuracy_by_n_figure(groups)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["none", "parallel", "sequential"]
    assert [len(ax.get_lines()) for ax in fig.axes] == [3, 3, 3]
    parallel = {line.get_label(): list(line.get_xdata()) for line in fig.axes[1].get_lines()}
    assert parallel["paragrpo"] == [4] and parallel["sft"] == [4, 16, 64]
    # a run keeps its colour across panels
    colours = [{ln.get_label(): ln.get_color() for ln in ax.get_lines()} for ax in fig.axes]
    assert colours[0] == colours[1] == colours[2]


def test_accuracy_by_n_joins_a_repro_runs_per_n_eval_directories() -> None:
    def met(n: int, score: float) -> dict:
        return {"by_mode": {"parallel": {"by_nframes": {str(n): {"n": 3, "score": score}}}}}

    joined = plots.accuracy_by_n(
        {
            "q/sft/seed0/eval_n4": met(4, 0.1),
            "q/sft/seed0/eval_n64": met(64, 0.6),
            "q/paragrpo/seed0/eval_n4": met(4, 0.3),
        }
    )
    assert joined == {
        "q/sft/seed0 · parallel": {4: 0.1, 64: 0.6},
        "q/paragrpo/seed0 · parallel": {4: 0.3},
    }
