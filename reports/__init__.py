"""kchaos reports."""
