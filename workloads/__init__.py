"""kchaos workloads."""
