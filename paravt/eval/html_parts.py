"""Small HTML pieces shared by the report's sections: inline base64 PNGs, figures with their
failure note, number cells, sections. No external CSS, JS or font: the page stays one file."""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Callable
from typing import Any

from matplotlib.figure import Figure

from paravt.errors import DataError


def png_b64(fig_or_image: Any) -> str:
    """A matplotlib Figure or a PIL image as base64 PNG text."""
    buf = io.BytesIO()
    if isinstance(fig_or_image, Figure):
        fig_or_image.savefig(buf, format="png", bbox_inches="tight")  # keep legends placed outside the axes
    else:  # PIL image
        fig_or_image.save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def img(b64: str, alt: str, css: str = "") -> str:
    return f'<img alt="{html.escape(alt)}" class="{css}" src="data:image/png;base64,{b64}">'


def figure_html(make: Callable[[], Figure], alt: str) -> str:
    """The figure ``make`` builds, inline; a `DataError` (nothing to plot) becomes a muted note."""
    try:
        return img(png_b64(make()), alt, "fig")
    except DataError as e:
        return f'<p class="muted">{html.escape(str(e))}</p>'


def fmt(x: Any, digits: int = 3) -> str:
    """A table cell's text: "–" for None, ``digits`` decimals for floats, escaped otherwise."""
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}" if abs(x) < 1000 else f"{x:,.0f}"
    return html.escape(str(x))


def section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{html.escape(title)}</h2>\n{body}\n</section>'
