from paravt.cli import main

main()
