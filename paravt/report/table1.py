"""The report's Table-1 section: the rows of `paravt.eval.benchmarks.table1` (ours beside the
paper's quoted ones) as HTML, every value through `esc` or `num`."""

from __future__ import annotations

import html
from collections.abc import Sequence

from paravt.eval.benchmarks.table1 import Table1Row, columns
from paravt.report.html_parts import esc, num


def table1_html(rows: Sequence[Table1Row]) -> str:
    if not any(r.source == "measured" for r in rows):
        note = (
            '<p class="muted">No benchmark runs found (run paravt eval --benchmark); paper '
            "rows only.</p>"
        )
    else:
        note = (
            "<p class=\"muted\">Measured cells: headline in the paper's units under the run's "
            "scoring "
            "(lmms = lmms-eval task rules), with the number of questions. Paper rows are quoted "
            "from "
            "ParaVT Table 1 (64-frame protocol), not measured.</p>"
        )
    cols = columns()
    head = (
        "<tr><th class='l'>model / run</th><th class='l'>source</th>"
        + "".join(f"<th>{html.escape(t)}</th>" for _, t in cols)
        + "</tr>"
    )
    body = []
    for r in rows:
        cells = []
        for k, _ in cols:
            n = f" <span class='muted'>(n={num(r.n[k])})</span>" if k in r.n else ""
            cells.append(f"<td>{num(r.values.get(k), 1)}{n}</td>")
        src = r.source + (f", {r.scoring}" if r.scoring else "")
        body.append(
            f"<tr><td class='l'>{esc(r.label)}</td><td class='l'>{esc(src)}</td>"
            + "".join(cells)
            + "</tr>"
        )
    return f'<table id="table1">{head}{"".join(body)}</table>{note}'
