"""The launch's error for bad options: one line, exit status 2, nothing written."""

from __future__ import annotations


class LaunchError(Exception):
    """Options of a launch that exclude each other, or a study file that does not exist."""
