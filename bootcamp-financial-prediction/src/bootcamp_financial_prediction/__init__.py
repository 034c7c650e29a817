"""Financial prediction bootcamp: forecast next year's three statements of a simulated company, consistently.

Importing this package registers nothing; the ``bootcamp`` entry point targets :mod:`bootcamp_financial_prediction.hooks`.
"""

from bootcamp_financial_prediction.__about__ import __version__

__all__ = ["__version__"]
