"""verl integration for bootcamps: train a model with verl on any installed bootcamp's tools, environment turns and
rewards.

Importing this package imports no verl (which pulls torch and ray): the pieces verl loads by name live in their own
modules, :mod:`bootcamp_verl.tool` (the ``BaseTool`` adapter), :mod:`bootcamp_verl.agent_loop` (the agent loop) and
:mod:`bootcamp_verl.reward` (``compute_score``); :mod:`bootcamp_verl.export` writes what ``main_ppo`` reads.
"""

from bootcamp_verl.__about__ import __version__

__all__ = ["__version__"]
