"""Difficulty levels through reasoning-gym's own curriculum definitions.

A group's config may hold ``level`` (every attribute of the dataset's curriculum at that level; an attribute with
fewer levels uses its highest, reasoning-gym's rule) and ``levels`` (a level per attribute, e.g.
``{num_terms: 2}``); the curriculum turns them into dataset config values, and the group's other keys override
those::

    config: {level: 2, allow_negation: true}
"""

from __future__ import annotations

import dataclasses
from typing import Any

from bootcamp_core import ConfigError

__all__ = ["LEVEL_KEYS", "resolve"]

#: The config keys read here and never passed to the dataset.
LEVEL_KEYS = ("level", "levels")


def _level(name: str, field: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"reasoning_gym/{name}: {field} must be a whole number >= 0, got {value!r}", field=field)
    return value


def resolve(name: str, config: dict[str, Any]) -> dict[str, Any]:
    """The dataset config of a group config: its curriculum levels turned into values, the other keys as given."""
    if not any(key in config for key in LEVEL_KEYS):
        return dict(config)
    from bootcamp_reasoning_gym import datasets

    factory = datasets._factory()
    if not factory.has_curriculum(name):
        raise ConfigError(f"reasoning_gym/{name}: the dataset has no curriculum, so `level` and `levels` do not "
                          "apply", field="level")
    curriculum = factory.create_curriculum(name)
    if "level" in config:
        curriculum.set_global_level(_level(name, "level", config["level"]))
    levels = config.get("levels", {})
    if not isinstance(levels, dict):
        raise ConfigError(f"reasoning_gym/{name}: levels must be a mapping of attribute to level, got {levels!r}",
                          field="levels")
    for attribute, level in levels.items():
        if attribute not in curriculum.attributes:
            raise ConfigError(f"reasoning_gym/{name}: levels: unknown attribute {attribute!r} (the curriculum has "
                              f"{', '.join(sorted(curriculum.attributes))})", field="levels")
        top = len(curriculum.attributes[attribute].levels) - 1
        level = _level(name, f"levels.{attribute}", level)
        if level > top:
            raise ConfigError(f"reasoning_gym/{name}: levels.{attribute} is {level}, its highest level is {top}",
                              field="levels")
        curriculum.set_attr_level(attribute, level)
    values = dataclasses.asdict(curriculum.generate_configuration({"seed": 0, "size": datasets.SIZE}))
    values = {key: value for key, value in values.items() if key not in ("seed", "size") and key in
              {attr_field for attr in curriculum.attributes.values() for attr_field in _fields(attr)}}
    return {**values, **{key: value for key, value in config.items() if key not in LEVEL_KEYS}}


def _fields(attribute: Any) -> tuple[str, ...]:
    """The dataset config fields one curriculum attribute sets."""
    return tuple(getattr(attribute, name) for name in ("lower_field_name", "upper_field_name", "field_name")
                 if getattr(attribute, name, None))
