"""Evaluation: many episodes with bounded concurrency, crash-safe resume, results, statistics and the report."""

from bootcamp_core._moved import forward

# ``bootcamp_core.evaluate`` was one module; its names still resolve here, with a DeprecationWarning, until 0.2
__getattr__ = forward(__name__, "bootcamp_core.evaluate.run")
