"""``python -m mbstudy``: the command line (Ctrl-C at any moment, even while it imports,
is one line and exit status 130: pipeline/cli/interrupts.py)."""

from mbstudy.pipeline.cli.interrupts import guard


def main() -> None:
    """Run the command line."""

    def run() -> None:
        from mbstudy.pipeline.cli.app import main as app_main

        app_main()

    guard(run)


if __name__ == "__main__":
    main()
