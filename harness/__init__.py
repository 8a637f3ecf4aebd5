"""kchaos harness: cluster lifecycle, checkers, analysis, scenarios and the CLI.

Public entry points live in submodules; importing :mod:`harness` itself is cheap so that
``kchaos --help`` starts fast.
"""

__version__ = "0.1.0"
