"""kchaos faults."""
