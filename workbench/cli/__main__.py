"""`python -m workbench.cli` runs the `workbench` command."""

from workbench.cli import main

main()
