"""`python -m paravt …` = the `paravt` command."""

from paravt.cli import main

main()
