"""Scenario files: model (frozen dataclasses), loader (YAML + JSON Schema), library."""

from kchaos.harness.scenario.loader import load_scenario, parse_duration
from kchaos.harness.scenario.model import Scenario

__all__ = ["Scenario", "load_scenario", "parse_duration"]
