"""The command line (Typer). ``mbstudy`` runs ``mbstudy.pipeline.cli.app:main`` under the
Ctrl-C guard of ``mbstudy.__main__``."""
