"""Evaluation: many episodes with bounded concurrency, crash-safe resume, results, statistics and the report.

One job per module: :mod:`.config` (the settings of a run), :mod:`.secrets` (credentials kept out of outputs and
logs), :mod:`.dataset` (loading, selection, record checks), :mod:`.chat_template`, :mod:`.results` (the fsynced
results file and resume), :mod:`.statistics` (pass@k, the summary, CSV), :mod:`.progress`, :mod:`.report` (HTML),
and :mod:`.run`, the run loop (:func:`~.run.evaluate`, :func:`~.run.run_evaluation`).
"""

from bootcamp_core._moved import forward

# ``bootcamp_core.evaluate`` was one module; its names still resolve here, with a DeprecationWarning, until 0.2
__getattr__ = forward(
    __name__,
    "bootcamp_core.evaluate.run",
    "bootcamp_core.evaluate.config",
    "bootcamp_core.evaluate.secrets",
    "bootcamp_core.evaluate.dataset",
    "bootcamp_core.evaluate.chat_template",
    "bootcamp_core.evaluate.results",
    "bootcamp_core.evaluate.statistics",
)
