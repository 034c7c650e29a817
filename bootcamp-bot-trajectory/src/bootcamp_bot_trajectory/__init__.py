"""Robot-arm motion planning: a collision-free joint-space path for a KUKA iiwa among boxes, judged by PyBullet.

Importing this package registers nothing and imports no PyBullet; the ``bootcamp`` entry point targets
:mod:`bootcamp_bot_trajectory.hooks`.
"""

from bootcamp_bot_trajectory.__about__ import __version__

__all__ = ["__version__"]
