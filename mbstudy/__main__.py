"""``python -m mbstudy``: the command line."""

from mbstudy.pipeline.cli.app import main

main()
