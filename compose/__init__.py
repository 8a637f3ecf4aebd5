"""Assets kchaos ships with the package: the images' build contexts (``kafka/``,
``toxiproxy/``), the compose file for a by-hand cluster, and the machine set-up script.

Nothing here is Python; the package exists so that :mod:`kchaos.harness.paths` finds these
files with :mod:`importlib.resources` in an installed copy as in the source tree.
"""
