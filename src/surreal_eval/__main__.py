from .present.cli import main

main()
