"""Scenario files: model (frozen dataclasses), loader (YAML + JSON Schema), library."""

from harness.scenario.loader import load_scenario, parse_duration
from harness.scenario.model import Scenario

__all__ = ["Scenario", "load_scenario", "parse_duration"]
