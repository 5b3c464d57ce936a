"""How ``mbstudy ... --help`` reads: plain Click help with conventional placeholders.

Typer's defaults print ``{study}`` for a required argument, ``<list[str]>`` for a
repeatable option and cut each command's summary at about 45 characters in the command
list. :class:`PlainCommand` prints what Click users expect instead: ``STUDY`` (``STORE...``
when several are taken), ``<str>`` with "Repeatable." for an option given several times,
and the whole first paragraph of a command's docstring as its summary. Boolean options
are declared as single flags (``--json``) in the command modules; with
``rich_markup_mode=None`` on the root app no ``<bool>`` is printed beside them and no
``[...]`` in a help text is taken for markup.

The classes subclassed here are typer's own (``typer.core``, not part of its documented
API); they are reached through :func:`mbstudy.pipeline.private_api.typer_core_classes`.
"""

from __future__ import annotations

import contextlib
from typing import Any

import typer
from mbstudy.pipeline.private_api import typer_core_classes

# typer's command and parameter classes (typer.core exports no public API: the classes,
# and the methods overridden here, are listed in pipeline/private_api.py and checked)
TyperCommand, TyperOption, TyperArgument = typer_core_classes()


def _summary(help_text: str | None) -> str | None:
    """The first paragraph of a docstring on one line (``None`` if there is none)."""
    if not help_text:
        return None
    import inspect

    first = inspect.cleandoc(help_text).split("\n\n")[0]
    return " ".join(first.split())


def _element(label: str | None) -> str | None:
    """``<list[Path]>`` / ``list[str]`` -> ``<path>`` / ``<str>``: one value of a list;
    ``<int range>`` -> ``<int>`` (the range is printed after the help text)."""
    if label is None:
        return None
    bare = label.strip("<>")
    if bare.startswith("list[") and bare.endswith("]"):
        return f"<{bare[5:-1].lower()}>"
    if bare.endswith(" range"):
        return f"<{bare[: -len(' range')]}>"
    return label


class _PlainOption(TyperOption):
    def display_type(self, ctx: Any) -> str | None:
        return _element(super().display_type(ctx))


class _PlainArgument(TyperArgument):
    def display_type(self, ctx: Any) -> str | None:
        return _element(super().display_type(ctx))


class PlainCommand(TyperCommand):
    """A Typer command whose help uses Click's conventions (see the module docstring)."""

    def __init__(self, name: str | None, **kwargs: Any) -> None:
        if not kwargs.get("short_help"):
            kwargs["short_help"] = _summary(kwargs.get("help"))
        super().__init__(name, **kwargs)
        for param in self.params:
            if param.multiple and param.help and "Repeatable" not in param.help:
                param.help = f"{param.help} Repeatable."
            # the same object, rendering one list element in help (no new state); a Typer
            # release whose parameters refuse this keeps its own rendering (and the help
            # test in tests/test_run_defaults.py names what changed)
            plain = {TyperOption: _PlainOption, TyperArgument: _PlainArgument}.get(type(param))
            if plain is not None:
                with contextlib.suppress(TypeError):
                    param.__class__ = plain

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """``[OPTIONS] STUDY`` (``[NAME]`` when optional, ``...`` when several)."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if not isinstance(param, TyperArgument):
                continue
            name = (param.metavar or param.name or "").upper()
            if param.nargs != 1 and not name.endswith("..."):
                name += "..."
            pieces.append(name if param.required else f"[{name}]")
        return pieces


def use_plain_help(*apps: typer.Typer) -> None:
    """Make every command registered on ``apps`` a :class:`PlainCommand`."""
    for app in apps:
        for info in app.registered_commands:
            if info.cls in (None, TyperCommand):
                info.cls = PlainCommand
