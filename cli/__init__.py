"""Every ``kchaos`` command: the click code of kchaos lives here and nowhere else.

``kchaos.cli.main`` holds the registry and the console-script entry point; each other
module holds the commands of one area and calls the plain functions of the package that
does the work. Top layer (docs/architecture.md): nothing but ``python -m kchaos.cli``
and the console script imports it.
"""
