"""reasoning-gym's registry, imported once on first use, and the datasets this bootcamp leaves out."""

from __future__ import annotations

import functools
import json
from typing import Any

__all__ = ["EXCLUDED", "SIZE", "build", "dataset_names", "normalise"]

#: Entries are drawn by index from a dataset of this size (reasoning-gym derives entry i from its seed and i).
SIZE = 1_000_000

_GLOBAL_RNG = "uses the global random or numpy generator, so its entries are not a function of the seed"
_OWN_ANSWER = "its own answer does not score 1.0 under its own verifier"
_EVALUATES = "verifier evaluates model text"

#: Datasets registered in reasoning-gym that get no generator here, with the reason.
EXCLUDED: dict[str, str] = {
    "acre": "building the dataset takes minutes",
    "composite": "a mix of other datasets that needs them in its config: use instruction-config groups instead",
    "word_ladder": "cannot build a dataset large enough to draw entries from",
    "codeio": "its entries are not reproducible: two draws of one index can differ within a process",
    "list_functions": _GLOBAL_RNG,
    "pool_matrix": _GLOBAL_RNG,
    "arc_agi": _OWN_ANSWER,
    "boxnet": _OWN_ANSWER,
    "graph_color": _OWN_ANSWER,
    "propositional_logic": _OWN_ANSWER,
    "rearc": _OWN_ANSWER,
    "rubiks_cube": _OWN_ANSWER,
    "rush_hour": _OWN_ANSWER,
    "binary_matrix": _EVALUATES,
    "countdown": _EVALUATES,
    "intermediate_integration": _EVALUATES,
    "n_queens": _EVALUATES,
    "number_sorting": _EVALUATES,
    "polynomial_multiplication": _EVALUATES,
    "puzzle24": _EVALUATES,
    "simple_integration": _EVALUATES,
    "spiral_matrix": _EVALUATES,
    "string_insertion": _EVALUATES,
}


@functools.lru_cache(maxsize=1)
def _factory() -> Any:
    import reasoning_gym.factory  # several seconds: imported on first use only

    return reasoning_gym.factory


def registry() -> dict[str, Any]:
    """reasoning-gym's own registry: dataset name -> (dataset class, config class)."""
    return _factory().DATASETS


def dataset_names() -> list[str]:
    """Every registered dataset that is not in :data:`EXCLUDED`, sorted."""
    return sorted(name for name in registry() if name not in EXCLUDED)


def normalise(value: Any) -> Any:
    """``value`` after a JSON round trip: what a stored identity holds, so scoring sees the same entry."""
    return json.loads(json.dumps(value))


@functools.lru_cache(maxsize=256)
def _build(name: str, config_json: str) -> Any:
    return _factory().create_dataset(name, seed=0, size=SIZE, **json.loads(config_json))


def build(name: str, config: dict[str, Any]) -> Any:
    """The dataset ``name`` with ``config`` (seed 0, :data:`SIZE` entries), built once per config."""
    return _build(name, json.dumps(config, sort_keys=True))
