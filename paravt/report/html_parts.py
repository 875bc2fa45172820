"""Small HTML pieces shared by the report's sections: inline base64 PNGs, figures with their
failure note, number cells, sections. No external CSS, JS or font: the page stays one file.

Escaping (issue 34): every value read from a run's files reaches the page through `esc` (text) or
`num` (numbers, formatted from the typed value: a string, list or bool where a number belongs is
shown as malformed, never pasted in); markup is only ever this package's own literals. A figure
whose data cannot be drawn is a note (`figure_html`), never an exception.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from paravt.errors import DataError

if (
    TYPE_CHECKING
):  # matplotlib loads where a figure is drawn: the trainers import `esc` (rollouts.py)
    from matplotlib.figure import Figure


def png_b64(fig_or_image: Any) -> str:
    """A matplotlib Figure or a PIL image as base64 PNG text."""
    from matplotlib.figure import Figure

    buf = io.BytesIO()
    if isinstance(fig_or_image, Figure):
        fig_or_image.savefig(
            buf, format="png", bbox_inches="tight"
        )  # keep legends placed outside the axes
    else:  # PIL image
        fig_or_image.save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def img(b64: str, alt: str, css: str = "") -> str:
    return f'<img alt="{esc(alt)}" class="{esc(css)}" src="data:image/png;base64,{esc(b64)}">'


#: What drawing a figure from a run's files may raise on data it cannot plot (a string where a
#: number belongs, a label matplotlib reads as broken math text, an infinite axis): the figure
#: becomes a note.
FIGURE_DATA_ERRORS = (
    DataError,
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    OverflowError,
    AttributeError,
)


def figure_html(make: Callable[[], Figure], alt: str) -> str:
    """The figure ``make`` builds, inline; a `DataError` (nothing to plot) becomes a muted note, and
    data it cannot draw (`FIGURE_DATA_ERRORS`) a note that says so."""
    try:
        return img(png_b64(make()), alt, "fig")
    except DataError as e:
        return f'<p class="muted">{html.escape(str(e))}</p>'
    except FIGURE_DATA_ERRORS as e:
        return (
            f'<p class="muted bad">{html.escape(alt)}: not drawn, malformed data '
            f"({esc(repr(e)[:300])})</p>"
        )


def esc(x: Any) -> str:
    """Any value as escaped text (quotes too: safe inside an attribute)."""
    return html.escape(str(x), quote=True)


def is_real(x: Any) -> bool:
    """A JSON number (bool excluded: ``True`` is an ``int`` to Python, never a measurement)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def real(x: Any) -> float | None:
    """A finite JSON number as a float; None for anything else (missing, text, bool, NaN, inf)."""
    return float(x) if is_real(x) and math.isfinite(x) else None


def iv_cell(iv: Any, digits: int = 3, scale: float = 1.0) -> str:
    """``mean [lo, hi]`` of an interval dict (``mean`` alone without an interval), "–" if absent."""
    part = {k: real(iv.get(k)) for k in ("mean", "lo", "hi")} if isinstance(iv, Mapping) else {}
    mean, lo, hi = part.get("mean"), part.get("lo"), part.get("hi")
    if mean is None:
        return "–"
    text = f"{mean * scale:.{digits}f}"
    if lo is not None and hi is not None:
        text += f' <span class="muted">[{lo * scale:.{digits}f}, {hi * scale:.{digits}f}]</span>'
    return text


def table(
    head: str, rows: Sequence[Sequence[str]], css: str = "", left: Sequence[int] = (0,)
) -> str:
    """Rows of ready cell HTML; columns ``left`` are left-aligned (text), the rest numbers."""
    body = "".join(
        "<tr>"
        + "".join(f'<td class="{"l" if i in left else ""}">{c}</td>' for i, c in enumerate(r))
        + "</tr>"
        for r in rows
    )
    return f'<table class="{css}">{head}{body}</table>'


def malformed(x: Any, what: str = "value") -> str:
    """A cell whose value is not of the type it should be: shown, escaped, as malformed."""
    return f'<span class="bad malformed">malformed {esc(what)}: {esc(repr(x)[:80])}</span>'


def num(x: Any, digits: int = 3, *, signed: bool = False) -> str:
    """A number cell from a typed value: "–" for None, ``digits`` decimals for floats (thousands
    separated above 1000), ints as they are; anything else is `malformed`."""
    if x is None:
        return "–"
    if not is_real(x):
        return malformed(x, "number")
    sign = "+" if signed else ""
    if isinstance(x, float) and (not math.isfinite(x) or abs(x) < 1000):
        return f"{x:{sign}.{digits}f}"
    return f"{x:{sign},.0f}" if isinstance(x, float) else f"{x:{sign}d}"


def fmt(x: Any, digits: int = 3) -> str:
    """A cell that may hold text or a number: a number as `num` writes it, anything else escaped."""
    if x is None or (is_real(x) and isinstance(x, float)):
        return num(x, digits)
    return esc(x)


def section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{esc(anchor)}"><h2>{esc(title)}</h2>\n{body}\n</section>'
