"""Evaluation: the results file, metrics, token-budget accounting, plots and the HTML report
(docs/ARCHITECTURE.md §1 `eval/`, §6, §7). The runner that drives episodes (`paravt eval`) lives
here too."""
