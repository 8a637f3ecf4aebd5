"""``python -m kchaos.cli``: the ``kchaos`` command."""

from kchaos.cli.main import main

main()
