"""Arithmetic bootcamp: compute flat + - * / expressions with an exact calculator tool and answer feedback.

Importing this package registers nothing; the ``bootcamp`` entry point targets :mod:`bootcamp_legacy_arith.hooks`.
"""

from bootcamp_legacy_arith.__about__ import __version__

__all__ = ["__version__"]
