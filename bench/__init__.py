"""The measuring code of every benchmark, one module each (``kchaos bench ...``; the
commands themselves are in :mod:`kchaos.cli.bench`). Benchmarks are not tests: each runs
side by side with its baseline and reports a ratio (docs/ci.md)."""
