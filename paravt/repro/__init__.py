"""`paravt repro`: the paper's Table 2 variants at laptop scale (issue 19; docs/repro.md)."""
