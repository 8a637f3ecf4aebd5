# kchaos: `make run` and `make test` set up whatever is missing, then do their work.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
KCHAOS := $(VENV)/bin/kchaos
SCENARIO ?= smoke

# `make incidents`: the incident library on these Kafka releases (about an hour)
INCIDENT_VERSIONS ?= 3.4.1,3.5.2,3.9.1,4.4.0
INCIDENT_SEEDS ?= 1
# `make known-bugs`: every known-bug scenario (a Kafka ticket) on its ticket's own affected
# and fixed releases (ticket.compare), KNOWN_BUG_SEEDS seeds each
KNOWN_BUG_SEEDS ?= 5
# `make soak`: seeded random schedules on a safe config, counting false alarms (~30 min)
SOAK_RUNS ?= 20
SOAK_SEED_BASE ?= 1
# `make nightly-rehearsal`: the nightly workflow's fan-out on one machine (docs/ci.md):
# two shards of a small plan one after the other, then their merge
KAFKA ?= 4.4.0
REHEARSAL := runs/rehearsal
REHEARSAL_PLAN := smoke txn-smoke --kafka-version $(KAFKA) --seeds 2

.PHONY: setup run test unit lint typecheck nightly incidents known-bugs txn-releases extended soak nightly-rehearsal cleanup clean

setup:
	@bash compose/setup.sh

run: setup
	$(KCHAOS) run $(SCENARIO)

test: setup
	@bash .ci/test-suite

unit: setup
	@bash .ci/unit-tests

lint:
	$(VENV)/bin/ruff check harness faults workloads reports compose cli bench tests
	$(VENV)/bin/ruff format --check harness faults workloads reports compose cli bench tests

typecheck:
	@bash .ci/typecheck

nightly: setup
	$(KCHAOS) suite nightly

incidents: setup
	$(KCHAOS) matrix --all --kafka-version $(INCIDENT_VERSIONS) --seeds $(INCIDENT_SEEDS)

known-bugs: setup
	$(KCHAOS) matrix --tag known-bug --seeds $(KNOWN_BUG_SEEDS)

# the transactional docker tests on 3.9.1, the newest release before Kafka 4 (the clients are
# librdkafka's, transaction version 1 on every release: this is not a TV1/TV2 comparison)
# (make test runs them on 4.4.0; about 3 min)
txn-releases: setup
	KCHAOS_TEST_KAFKA_VERSION=3.9.1 $(VENV)/bin/pytest -m docker -q -p no:cacheprovider \
	  tests/integration/test_txn_workloads.py

# the docker tests too long for make test's 45 minutes (mark extended): the transactional
# library scenarios in full, and four more runs of fault families' evidence (about 12 min)
extended: setup
	$(VENV)/bin/pytest -m "docker and extended" -q -p no:cacheprovider --timeout=900 tests/integration

soak: setup
	$(KCHAOS) soak --runs $(SOAK_RUNS) --seed-base $(SOAK_SEED_BASE)

# Both shards read the same durations file (a shard never writes it; the merge adds what
# they measured), so they split the plan alike. A shard that fails does not stop the
# merge (`-`), as in the workflow; the merge's exit code is the target's.
nightly-rehearsal: setup
	rm -rf $(REHEARSAL)/shard-1 $(REHEARSAL)/shard-2 $(REHEARSAL)/merged
	-$(KCHAOS) matrix $(REHEARSAL_PLAN) --shard 1/2 --durations $(REHEARSAL)/durations.json \
	  --out $(REHEARSAL)/shard-1
	-$(KCHAOS) matrix $(REHEARSAL_PLAN) --shard 2/2 --durations $(REHEARSAL)/durations.json \
	  --out $(REHEARSAL)/shard-2
	$(KCHAOS) merge $(REHEARSAL)/merged $(REHEARSAL)/shard-1 $(REHEARSAL)/shard-2 \
	  --durations $(REHEARSAL)/durations.json

cleanup:
	$(KCHAOS) cleanup

clean: cleanup
	rm -rf runs test-output
