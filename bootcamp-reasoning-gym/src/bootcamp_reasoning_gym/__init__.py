"""bootcamp-reasoning-gym: every reasoning-gym dataset as a Bootcamp task generator, scored by its own verifier."""

from bootcamp_reasoning_gym.__about__ import __version__

__all__ = ["__version__"]
