"""Scenario files: model (frozen dataclasses), loader (YAML + JSON Schema), library."""

from kchaos.harness.rundir.scenario_model import Scenario
from kchaos.harness.scenario.loader import load_scenario, parse_duration

__all__ = ["Scenario", "load_scenario", "parse_duration"]
