"""The command line (Typer). ``mbstudy`` is ``mbstudy.pipeline.cli.app:main``."""
