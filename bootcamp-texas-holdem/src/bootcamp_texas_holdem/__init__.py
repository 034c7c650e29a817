"""Heads-up no-limit hold'em against bots, played through tools; rules and hand ranking by pokerkit.

Importing this package registers nothing; the ``bootcamp`` entry point targets :mod:`bootcamp_texas_holdem.hooks`.
"""

from bootcamp_texas_holdem.__about__ import __version__

__all__ = ["__version__"]
