from reform_core.cli import main

main()
