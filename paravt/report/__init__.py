"""The HTML/PNG report of eval, training and `paravt repro` directories (`paravt report`): the page
(`page`), its parts, figures, transcripts and the paper-vs-ours section (docs/ARCHITECTURE.md §1
`report/`)."""
