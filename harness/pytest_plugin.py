"""kchaos pytest plugin (entry point ``pytest11``): fixtures for chaos tests."""
