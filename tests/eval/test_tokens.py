import io

import pytest
from PIL import Image

from paravt.agent.tally import TokenRow
from paravt.errors import DataError
from paravt.eval.results import ResultRow
from paravt.eval.tokens import fit_token_budget, t_par, t_seq
from paravt.report.tokens_figure import tokens_vs_k_plot


def test_budget_formulas_by_hand() -> None:
    # v=200, s=50, h=30: T_seq(3) = 3·250 + 6·30 = 930; T_par(3) = 250 + 90 = 340
    assert t_seq(3, 200, 50, 30) == pytest.approx(930)
    assert t_par(3, 200, 50, 30) == pytest.approx(340)
    assert t_seq(1, 200, 50, 30) == t_par(1, 200, 50, 30) == pytest.approx(280)  # identical at K=1


def _row(mode: str, k: int, main_visual: int, main_input: float) -> ResultRow:
    return ResultRow(
        id=f"{mode}{k}",
        mode=mode,
        task="mcq",
        subset="",
        nframes=16,
        video="",
        duration=1.0,
        question="",
        options=None,
        answer="",
        prediction=None,
        score=1.0,
        correct=True,
        n_calls=k,
        tokens=TokenRow(main_visual=main_visual, main_text=round(main_input) - main_visual),
    )


def test_fit_recovers_v_s_h_from_exact_rows() -> None:
    v, s, h = 256, 120, 60
    rows = [_row("parallel", k, v, t_par(k, v, s, h)) for k in (0, 1, 2, 4)]
    rows += [_row("sequential", k, v * k, t_seq(k, v, s, h)) for k in (1, 2, 3)]
    b = fit_token_budget(rows)
    assert (b.v, b.s, b.h) == pytest.approx((256, 120, 60))
    assert b.rmse == pytest.approx(0, abs=1e-6) and b.n_rows == 7


def test_eva_rows_follow_the_sequential_model() -> None:
    # eva re-injects each frame_select's frames (Eva.reinjects_frames): its rows are T_seq rows.
    # v=256, s=120, h=60: eva K=2 reads 2·376 + 3·60 = 932 tokens, K=3 reads 3·376 + 6·60 = 1488.
    v, s, h = 256, 120, 60
    assert t_seq(2, v, s, h) == 932 and t_seq(3, v, s, h) == 1488
    rows = [_row("parallel", k, v, t_par(k, v, s, h)) for k in (0, 1, 2, 4)]
    rows += [_row("eva", 2, 2 * v, 932), _row("eva", 3, 3 * v, 1488)]
    b = fit_token_budget(rows)
    assert (b.v, b.s, b.h) == pytest.approx((256, 120, 60)) and b.rmse == pytest.approx(0, abs=1e-6)
    # before (eva fitted as T_par = v + s + K·h, 496 at K=2 instead of 932) the same rows gave
    # s=161.6, h=153.2 and an rmse of 331.7 tokens


def test_fit_needs_two_call_counts() -> None:
    with pytest.raises(DataError, match="two different numbers of calls"):
        fit_token_budget([_row("parallel", 2, 100, 300), _row("parallel", 2, 100, 310)])
    with pytest.raises(DataError):
        fit_token_budget([])


def test_tokens_vs_k_plot_writes_a_png_even_without_a_fit() -> None:
    buf = io.BytesIO()
    tokens_vs_k_plot([_row("parallel", 2, 100, 300)], buf)
    img = Image.open(io.BytesIO(buf.getvalue()))
    assert img.format == "PNG" and img.size == (700, 420)
