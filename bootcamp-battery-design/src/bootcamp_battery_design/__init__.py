"""Battery design bootcamp: choose a positive electrode's thickness and porosity against a PyBaMM DFN model."""

from bootcamp_battery_design.__about__ import __version__

__all__ = ["__version__"]
