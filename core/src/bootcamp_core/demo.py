"""Moved to :mod:`bootcamp_core.cli.demo`: this path still works, with a DeprecationWarning, until 0.2."""

from bootcamp_core._moved import forward

__getattr__ = forward(__name__, "bootcamp_core.cli.demo")
