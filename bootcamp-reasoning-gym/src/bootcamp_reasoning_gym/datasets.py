"""reasoning-gym's registry, imported once on first use, and the datasets this bootcamp leaves out."""

from __future__ import annotations

import functools
import inspect
import json
import re
from typing import Any

__all__ = ["EXCLUDED", "SANDBOXED", "SIZE", "build", "dataset_names", "evaluates_model_text", "families", "family",
           "normalise"]

#: Entries are drawn by index from a dataset of this size (reasoning-gym derives entry i from its seed and i).
SIZE = 1_000_000

_GLOBAL_RNG = "uses the global random or numpy generator, so its entries are not a function of the seed"
_OWN_ANSWER = "its own answer does not score 1.0 under its own verifier"

#: Datasets registered in reasoning-gym that get no generator here, with the reason.
EXCLUDED: dict[str, str] = {
    "acre": "building the dataset takes minutes",
    "composite": "a mix of other datasets that needs them in its config: use instruction-config groups instead",
    "word_ladder": "cannot build a dataset large enough to draw entries from",
    "codeio": ("its entries run the code samples of its data file with exec, and many of them use the global random "
               "module, so two draws of one index can differ (a fix belongs in reasoning-gym)"),
    "list_functions": _GLOBAL_RNG,
    "pool_matrix": _GLOBAL_RNG,
    "arc_agi": _OWN_ANSWER,
    "boxnet": _OWN_ANSWER,
    "graph_color": _OWN_ANSWER,
    "propositional_logic": _OWN_ANSWER,
    "rearc": _OWN_ANSWER,
    "rubiks_cube": _OWN_ANSWER,
    "rush_hour": _OWN_ANSWER,
}

#: Datasets whose ``score_answer`` evaluates model text (``eval``, ``sympy.parse_expr``): scored in the sandbox.
SANDBOXED = frozenset({
    "binary_matrix", "countdown", "intermediate_integration", "n_queens", "number_sorting",
    "polynomial_multiplication", "puzzle24", "simple_integration", "spiral_matrix", "string_insertion",
})

_EVALUATES = re.compile(r"(?<!literal_)\beval\(|parse_expr|sympify|\bexec\(")


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


@functools.cache
def evaluates_model_text(name: str) -> bool:
    """Whether dataset ``name``'s verifier runs in the sandbox: listed in :data:`SANDBOXED`, or its ``score_answer``
    source evaluates text (so a dataset a new reasoning-gym release adds is sandboxed without a change here)."""
    if name in SANDBOXED:
        return True
    try:
        return bool(_EVALUATES.search(inspect.getsource(registry()[name][0].score_answer)))
    except (KeyError, OSError, TypeError):
        return True  # source unknown: the safe side


def family(name: str) -> str:
    """The reasoning-gym task family of dataset ``name``: the package its class lives in (``arithmetic``, ...)."""
    module = registry()[name][0].__module__.split(".")
    return module[1] if len(module) > 2 else "other"


def families() -> dict[str, list[str]]:
    """Family -> the sorted names of its datasets that have a generator here."""
    grouped: dict[str, list[str]] = {}
    for name in dataset_names():
        grouped.setdefault(family(name), []).append(name)
    return dict(sorted(grouped.items()))
