# kchaos: `make run` and `make test` set up whatever is missing, then do their work.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
KCHAOS := $(VENV)/bin/kchaos
PYTEST := $(VENV)/bin/pytest
SCENARIO ?= smoke

.PHONY: setup run test unit docker-tests lint typecheck nightly cleanup clean

setup:
	@bash compose/setup.sh

run: setup
	$(KCHAOS) run $(SCENARIO)

test: setup
	@bash .ci/test-suite

unit: setup
	$(PYTEST) -m "not docker" -q

lint:
	$(VENV)/bin/ruff check harness faults workloads reports tests
	$(VENV)/bin/ruff format --check harness faults workloads reports tests

typecheck:
	$(VENV)/bin/mypy harness faults workloads reports

nightly: setup
	$(KCHAOS) suite nightly

cleanup:
	$(KCHAOS) cleanup

clean: cleanup
	rm -rf runs test-output
